"""A changed image under the same name is converted again; data sets of earlier versions still count; the hint
for a raw image folder puts the TFRecords outside it, and following it works twice."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tests.trainer.helpers import make_class_folder, make_folder_data, make_synthetic
from trainer import create_tfrecords, metadata, records, shard_files
from trainer.errors import TrainerError


def _mtimes(data: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in data.glob("*.tfrec")}


def _stored(data: Path) -> list[bytes]:
    """Every record's stored JPEG, in file order."""
    files = sorted(str(p) for p in data.glob("*.tfrec"))
    return [bytes(records.parse(s)["image"].numpy()) for s in tf.data.TFRecordDataset(files)]


def test_a_changed_image_is_converted_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    images = make_class_folder(tmp_path / "images", ["cats", "dogs"], per_class=3)
    data = tmp_path / "data"
    first = make_folder_data(images, data)
    before, stored = _mtimes(data), _stored(data)
    assert make_folder_data(images, data) == first and _mtimes(data) == before  # unchanged: nothing to do

    # Another picture under the same name: a plain grey square instead of the generated one.
    Image.fromarray(np.full((40, 40, 3), 128, np.uint8)).save(images / "dogs" / "001.png")
    with caplog.at_level(logging.INFO, logger="trainer.create_tfrecords"):
        second = make_folder_data(images, data)
    assert "converted from earlier contents of the same images" in caplog.text
    assert second["fingerprint"] != first["fingerprint"] and second["counts"] == first["counts"]
    changed = [old != new for old, new in zip(stored, _stored(data), strict=True)]
    assert sum(changed) == 1  # exactly the changed image's record differs
    assert make_folder_data(images, data)["fingerprint"] == second["fingerprint"]  # and now it is done again


def test_an_image_changed_during_an_unfinished_conversion_is_converted_too(tmp_path: Path) -> None:
    images = make_class_folder(tmp_path / "images", ["cats", "dogs"], per_class=3)
    data = tmp_path / "data"
    first = make_folder_data(images, data)
    (data / metadata.FILENAME).unlink()  # as a conversion killed before its last step leaves it
    Image.fromarray(np.full((40, 40, 3), 30, np.uint8)).save(images / "cats" / "000.png")
    assert make_folder_data(images, data)["fingerprint"] != first["fingerprint"]


def test_a_folder_data_set_of_an_earlier_version_is_converted_again_once(tmp_path: Path) -> None:
    images = make_class_folder(tmp_path / "images", ["cats", "dogs"], per_class=3)
    data = tmp_path / "data"
    make_folder_data(images, data)
    # What a version without content stamps left: a names-only fingerprint in both files.
    conversion = json.loads((data / shard_files.CONVERSION_FILE).read_text())
    names = conversion.pop(shard_files.NAMES_KEY)
    (data / shard_files.CONVERSION_FILE).write_text(json.dumps({**conversion, "fingerprint": names}))
    meta = json.loads((data / metadata.FILENAME).read_text())
    (data / metadata.FILENAME).write_text(json.dumps({**meta, "fingerprint": names}))
    again = make_folder_data(images, data)
    assert again["fingerprint"] == meta["fingerprint"]
    before = _mtimes(data)
    make_folder_data(images, data)
    assert _mtimes(data) == before


def test_a_synthetic_data_set_of_an_earlier_version_is_still_this_one(tmp_path: Path) -> None:
    # Written by e98121e (before content stamps) with these settings; synthetic images have no files to stamp.
    assert make_synthetic(tmp_path / "syn", count=8, seed=5)["fingerprint"] == "436c4196705ee0d9"


def test_another_image_set_in_the_same_output_is_still_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_folder_data(make_class_folder(tmp_path / "a", ["cats", "dogs"], per_class=3), data)
    with pytest.raises(TrainerError, match="already holds TFRecords of other images or settings"):
        make_folder_data(make_class_folder(tmp_path / "b", ["x", "y"], per_class=3), data)


def test_the_hint_for_a_raw_image_folder_puts_the_records_outside_it(tmp_path: Path) -> None:
    images = make_class_folder(tmp_path / "photos", ["cats", "dogs"], per_class=3)
    with pytest.raises(TrainerError) as raised:
        metadata.read(str(images))
    message = str(raised.value)
    suggested = f"{images}-tfrecords"
    assert "holds images, not TFRecords" in message
    assert f"--folder {images} --output {suggested} --image-size 224" in message
    assert f"then train with --data-dir {suggested}" in message
    # Following the hint works, and so does the next conversion of the same folder.
    make_folder_data(images, Path(suggested))
    make_folder_data(images, Path(suggested))
    assert metadata.read(suggested).class_names == ["cats", "dogs"]


def test_an_output_inside_the_image_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = tmp_path / "photos"
    args = ["--source", "folder", "--folder", str(images), "--image-size", "32", "--output"]
    with pytest.raises(SystemExit):
        create_tfrecords.parse_args([*args, str(images / "tfrecords")])
    err = capsys.readouterr().err
    assert "is inside --folder" in err and f"--output {images}-tfrecords" in err
    create_tfrecords.parse_args([*args, str(images / ".tfrecords")])  # hidden: never read as a class
    create_tfrecords.parse_args([*args, str(tmp_path / "photos-tfrecords")])
    assert create_tfrecords.inside("gs://b/photos/x", "gs://b/photos/")
    assert not create_tfrecords.inside("gs://b/photos2", "gs://b/photos")
