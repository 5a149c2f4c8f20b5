"""Input pipelines: uint8 batches, random crops each pass, deterministic validation, sharding."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tests.trainer.helpers import SIZE, make_synthetic
from trainer import data


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("pipeline") / "d"
    make_synthetic(path, count=40, shard_size=8)
    return str(path)


def test_train_batches_are_augmented_afresh_each_pass(data_dir: str) -> None:
    tf.random.set_seed(0)
    single = tf.data.TFRecordDataset(tf.io.gfile.glob(f"{data_dir}/train-*.tfrec")[:1]).take(1).repeat(6)
    views = np.stack([data.decode_train(s, SIZE)[0].numpy() for s in single])
    assert views.shape == (6, SIZE, SIZE, 3) and views.dtype == np.uint8
    assert len({v.tobytes() for v in views}) > 1  # random crops differ between epochs (flips: in the model)

    images, labels = next(iter(data.train_dataset(data_dir, SIZE, global_batch=8)))
    assert images.shape == (8, SIZE, SIZE, 3) and labels.shape == (8,)
    assert images.dtype == tf.uint8  # a quarter of float32's bytes; the model casts on the accelerator


def test_validation_is_center_crop_deterministic_and_complete(data_dir: str) -> None:
    ds = data.valid_dataset(data_dir, SIZE, global_batch=3)
    first = np.concatenate([x.numpy() for x, _ in ds])
    second = np.concatenate([x.numpy() for x, _ in ds])
    assert first.shape == (8, SIZE, SIZE, 3) and first.dtype == np.uint8
    np.testing.assert_array_equal(first, second)
    # What the cache holds: uint8 pixels (a quarter of float32's memory).
    cached = ds
    while type(cached).__name__ != "CacheDataset":
        cached = cached._input_dataset  # walks options <- prefetch <- cache
    assert cached.element_spec[0].dtype == tf.uint8


def test_shard_policy() -> None:
    policy = tf.data.experimental.AutoShardPolicy
    assert data.shard_policy(num_files=4, num_workers=2) == policy.FILE
    assert data.shard_policy(num_files=1, num_workers=2) == policy.DATA
    assert data.shard_policy(num_files=1, num_workers=1) == policy.FILE
