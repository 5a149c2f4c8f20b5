"""create_tfrecords on every core and across replicas: same data whatever the split of work, unreadable files
counted once, whole-or-nothing shards, and a killed replica that resumes where it stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.trainer.helpers import REPO, make_class_folder, trainer_env
from trainer import create_tfrecords, metadata, records, shard_files
from trainer.data_replicas import Replica, from_env
from trainer.errors import TrainerError


def folder_with_a_broken_file(root: Path, per_class: int = 9, size: int = 40) -> Path:
    make_class_folder(root, ["cats", "dogs"], per_class=per_class, size=size)
    (root / "dogs" / "broken.jpg").write_bytes(b"not a jpeg")
    return root


def convert_args(folder: Path, output: Path, *more: str) -> list[str]:
    return [
        "--source", "folder", "--folder", str(folder), "--output", str(output),
        "--image-size", "32", "--shard-size", "3", *more,
    ]  # fmt: skip


def records_by_split(data_dir: Path) -> dict[str, Counter]:
    """Every split's records as a multiset of (label, stored JPEG bytes)."""
    import tensorflow as tf

    out = {}
    for split in metadata.SPLITS:
        files = sorted(tf.io.gfile.glob(metadata.record_pattern(str(data_dir), split)))
        parsed = (records.parse(raw) for raw in tf.data.TFRecordDataset(files))
        out[split] = Counter((int(ex["label"]), ex["image"].numpy()) for ex in parsed)
    return out


def cli(args: list[str], env_extra: dict[str, str]) -> subprocess.Popen:
    env = {
        k: v
        for k, v in trainer_env(**env_extra).items()
        if k != "CLUSTER_SPEC" or "CLUSTER_SPEC" in env_extra
    }
    return subprocess.Popen(
        [sys.executable, "-m", "trainer.create_tfrecords", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def cluster_spec(pool: int, index: int, workers: int) -> str:
    """CLUSTER_SPEC as Vertex (and the local runner) gives a replica of a chief + workers job."""
    cluster = {"workerpool0": ["127.0.0.1:1"], "workerpool1": [f"127.0.0.1:{2 + i}" for i in range(workers)]}
    return json.dumps({"cluster": cluster, "task": {"type": f"workerpool{pool}", "index": index}})


def test_same_images_per_split_with_one_or_two_workers_or_two_replicas(tmp_path: Path) -> None:
    src = folder_with_a_broken_file(tmp_path / "images")
    one = create_tfrecords.run(
        create_tfrecords.parse_args(convert_args(src, tmp_path / "w1", "--workers", "1"))
    )
    two = create_tfrecords.run(
        create_tfrecords.parse_args(convert_args(src, tmp_path / "w2", "--workers", "2"))
    )
    # Two replicas, as the local runner starts them: the worker may well finish before the chief.
    args = convert_args(src, tmp_path / "r2", "--workers", "1", "--progress-seconds", "0.05")
    chief = cli(args, {"CLUSTER_SPEC": cluster_spec(0, 0, workers=1)})
    worker = cli(args, {"CLUSTER_SPEC": cluster_spec(1, 0, workers=1)})
    logs = {name: p.communicate(timeout=180)[0] for name, p in (("chief", chief), ("worker", worker))}
    assert (chief.returncode, worker.returncode) == (0, 0), logs
    replicas = json.loads((tmp_path / "r2" / "metadata.json").read_text())

    assert one.skipped == two.skipped == replicas["skipped"] == 1  # the broken file, counted once
    assert one.counts == two.counts == replicas["counts"]
    assert one.total("train") + one.total("valid") == 18
    assert (
        records_by_split(tmp_path / "w1")
        == records_by_split(tmp_path / "w2")
        == records_by_split(tmp_path / "r2")
    )
    shards = {d: {p.name: p.read_bytes() for p in (tmp_path / d).glob("*.tfrec")} for d in ("w1", "w2", "r2")}
    assert len(shards["w1"]) == 7 and shards["w1"] == shards["w2"] == shards["r2"]  # even byte for byte
    # Each replica wrote its own shards (every second one) and said how far it was.
    assert "replica 1/2: 4 of 7 shard(s) to write" in logs["chief"]
    assert "replica 2/2: 3 of 7 shard(s) to write" in logs["worker"]
    for name, log in logs.items():
        assert "images/s, elapsed 0:00:" in log and " left" in log, (name, log)
    assert "wrote" in logs["chief"] and "wrote" not in logs["worker"]  # only the chief writes metadata.json


def test_a_killed_run_resumes_and_skips_its_finished_shards(tmp_path: Path) -> None:
    src = folder_with_a_broken_file(tmp_path / "images", per_class=80, size=256)
    settings = ["--image-size", "128", "--shard-size", "4"]
    reference = tmp_path / "reference"  # the same conversion, uninterrupted
    create_tfrecords.run(create_tfrecords.parse_args([*convert_args(src, reference), *settings]))
    out = tmp_path / "out"
    args = [*convert_args(src, out, "--workers", "1"), *settings]
    first = cli(args, {})
    done_dir = out / shard_files.DONE_DIR
    deadline = time.monotonic() + 120
    while not (done_dir.is_dir() and len(list(done_dir.glob("*.json"))) >= 3) and time.monotonic() < deadline:
        assert first.poll() is None, first.communicate()[0]
        time.sleep(0.01)
    os.killpg(first.pid, signal.SIGKILL)  # as a preemption would: no clean-up code runs
    first.communicate(timeout=30)

    marked = {p.name.removesuffix(".json") for p in done_dir.glob("*.json")}
    assert 3 <= len(marked) < 41 and not (out / metadata.FILENAME).exists()
    visible = sorted(p.name for p in out.glob("*.tfrec"))
    assert visible and set(marked) <= set(visible)
    for name in visible:  # no partial shard: each one visible is the whole shard, byte for byte
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    before = {name: (out / name).stat().st_mtime_ns for name in marked}

    resumed = cli(args, {})
    log = resumed.communicate(timeout=180)[0]
    assert resumed.returncode == 0, log
    assert f"{len(marked)} already complete" in log
    assert {name: (out / name).stat().st_mtime_ns for name in marked} == before  # not written again
    assert not list(out.glob(f"*{shard_files.TMP_TAG}*"))  # the killed run's temporary file is gone
    meta = json.loads((out / "metadata.json").read_text())
    assert meta == json.loads((reference / "metadata.json").read_text())
    assert (
        meta["skipped"] == 1
        and sum(meta["counts"]["train"].values()) + sum(meta["counts"]["valid"].values()) == 160
    )
    assert records_by_split(out) == records_by_split(reference)


def test_a_failure_mid_way_leaves_only_whole_shards_and_the_same_command_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = folder_with_a_broken_file(tmp_path / "images")
    out = tmp_path / "out"
    args = create_tfrecords.parse_args(convert_args(src, out, "--workers", "2"))
    import tensorflow as tf

    real_writer, calls = tf.io.TFRecordWriter, []

    class FailingWriter(real_writer):  # the main process's only per-image work: writing a record's bytes
        def write(self, record: bytes) -> None:
            calls.append(1)
            if len(calls) == 8:  # in the third shard: two are whole, the third half written
                raise OSError("disk full")
            super().write(record)

    monkeypatch.setattr(tf.io, "TFRecordWriter", FailingWriter)
    with pytest.raises(OSError, match="disk full"):
        create_tfrecords.run(args)
    visible = sorted(p.name for p in out.glob("*.tfrec"))
    marked = sorted(p.name.removesuffix(".json") for p in (out / shard_files.DONE_DIR).glob("*.json"))
    assert visible == marked and len(visible) == 2  # each shard visible is whole and marked done
    assert not list(out.glob(f"*{shard_files.TMP_TAG}*")) and not (out / metadata.FILENAME).exists()

    monkeypatch.setattr(tf.io, "TFRecordWriter", real_writer)
    meta = create_tfrecords.run(args)
    assert meta.skipped == 1 and meta.total("train") + meta.total("valid") == 18


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, Replica(0, 1)),
        ({"CLUSTER_SPEC": cluster_spec(0, 0, workers=2)}, Replica(0, 3)),
        ({"CLUSTER_SPEC": cluster_spec(1, 1, workers=2)}, Replica(2, 3)),
        (
            {
                "TF_CONFIG": json.dumps(
                    {"cluster": {"chief": ["a"], "worker": ["b"]}, "task": {"type": "worker", "index": 0}}
                )
            },
            Replica(1, 2),
        ),
        (  # no chief: worker 0 is the chief (TensorFlow's convention)
            {
                "TF_CONFIG": json.dumps(
                    {"cluster": {"worker": ["a", "b"]}, "task": {"type": "worker", "index": 0}}
                )
            },
            Replica(0, 2),
        ),
    ],
)
def test_replica_from_cluster_spec_or_tf_config(environ: dict[str, str], expected: Replica) -> None:
    assert from_env(environ) == expected


def test_a_task_that_is_not_a_data_replica_is_a_clear_error() -> None:
    spec = json.dumps(
        {"cluster": {"workerpool0": ["a"], "workerpool3": ["b"]}, "task": {"type": "workerpool3"}}
    )
    with pytest.raises(TrainerError, match="task workerpool3 0 is not a data replica"):
        from_env({"CLUSTER_SPEC": spec})
    with pytest.raises(TrainerError, match="CLUSTER_SPEC is not a cluster description"):
        from_env({"CLUSTER_SPEC": "{not json"})


def test_progress_line_says_done_rate_elapsed_and_time_left() -> None:
    from trainer.progress import progress_line

    assert progress_line("replica 1/2", 250, 1000, 10.0) == (
        "replica 1/2: 250/1,000 images (25 %), 25.0 images/s, elapsed 0:00:10, about 0:00:30 left"
    )
    assert progress_line("replica 2/2", 0, 10, 0.0).endswith(
        "0.0 images/s, elapsed 0:00:00, about unknown left"
    )
