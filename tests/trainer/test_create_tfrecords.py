"""TFRecords preparation: round trip, class balance, split determinism, aspect ratio, unreadable files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.trainer.helpers import SIZE, make_class_folder, make_synthetic
from trainer import create_tfrecords, metadata, records
from trainer.errors import TrainerError
from trainer.sources import Item
from trainer.split import split_items


def read_records(data_dir: Path, split: str) -> list[dict]:
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(metadata.record_pattern(str(data_dir), split)))
    out = []
    for raw in tf.data.TFRecordDataset(files):
        ex = records.parse(raw)
        image = tf.io.decode_jpeg(ex["image"]).numpy()
        out.append(
            {
                "label": int(ex["label"]),
                "height": int(ex["height"]),
                "width": int(ex["width"]),
                "image": image,
            }
        )
    return out


def test_synthetic_round_trip_counts_labels_shapes(tmp_path: Path) -> None:
    meta = make_synthetic(tmp_path / "d", count=40, shard_size=7)
    assert meta["image_size"] == SIZE and meta["class_names"] == ["cats", "dogs"] and meta["skipped"] == 0
    assert meta["counts"] == {"train": {"cats": 16, "dogs": 16}, "valid": {"cats": 4, "dogs": 4}}
    assert meta["shards"] == {"train": 5, "valid": 2}  # 32 / 7 and 8 / 7, rounded up
    for split, expected in (("train", 32), ("valid", 8)):
        rows = read_records(tmp_path / "d", split)
        assert len(rows) == expected
        assert sorted({r["label"] for r in rows}) == [0, 1]
        assert sum(r["label"] for r in rows) == expected // 2
        for r in rows:
            assert r["image"].shape == (r["height"], r["width"], 3)
            assert min(r["height"], r["width"]) == SIZE  # shorter side = image size, never squashed


def test_split_is_deterministic_balanced_and_order_independent() -> None:
    items = [Item(f"k{i:03d}", i % 3 == 0, lambda: b"") for i in range(90)]  # 30 of class 1, 60 of class 0
    a = split_items(items, 0.2, seed=7)
    b = split_items(list(reversed(items)), 0.2, seed=7)
    c = split_items(items, 0.2, seed=8)
    keys = {split: [it.key for it in a[split]] for split in a}
    assert keys == {split: [it.key for it in b[split]] for split in b}
    assert set(keys["valid"]) != {it.key for it in c["valid"]}
    assert sum(it.label for it in a["valid"]) == 6 and len(a["valid"]) == 18  # 20% of each class
    assert not set(keys["valid"]) & set(keys["train"]) and len(keys["train"]) == 72


def _png(path: Path, size: tuple[int, int], colour: tuple[int, int, int]) -> None:
    Image.new("RGB", size, colour).save(path, format="PNG")


def _jpeg_bytes(size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="JPEG")
    return buf.getvalue()


def test_folder_source_skips_unreadable_and_keeps_aspect_ratio(tmp_path: Path) -> None:
    src = tmp_path / "images"
    for name, colour in (("dogs", (0, 0, 200)), ("cats", (200, 0, 0))):
        (src / name).mkdir(parents=True)
        for i in range(5):
            _png(src / name / f"{i}.png", (100, 50), colour)  # 2:1 landscape
        (src / name / "tall.JPG").write_bytes(_jpeg_bytes((40, 120), colour))
    (src / "cats" / "broken.jpg").write_bytes(b"not a jpeg at all")
    (src / "cats" / "notes.txt").write_text("ignored: not an image extension")
    out = tmp_path / "out"
    args = create_tfrecords.parse_args(
        [
            "--source",
            "folder",
            "--folder",
            str(src),
            "--output",
            str(out),
            "--image-size",
            "40",
            "--valid-fraction",
            "0.34",
        ]
    )
    meta = create_tfrecords.run(args)
    assert meta.class_names == ["cats", "dogs"]  # sorted folder order: cats = 0
    assert meta.skipped == 1
    assert meta.total("train") + meta.total("valid") == 12
    rows = read_records(out, "train") + read_records(out, "valid")
    shapes = sorted({(r["height"], r["width"]) for r in rows})
    assert shapes == [(40, 80), (120, 40)]  # shorter side 40, aspect ratio kept
    cats = [r for r in rows if r["label"] == 0]
    assert len(cats) == 6 and all(r["image"][..., 0].mean() > 150 for r in cats)


def test_empty_or_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    def run(folder: Path, out: str = "out") -> None:
        create_tfrecords.run(
            create_tfrecords.parse_args(
                [
                    "--source",
                    "folder",
                    "--folder",
                    str(folder),
                    "--output",
                    str(tmp_path / out),
                    "--image-size",
                    "32",
                ]
            )
        )

    with pytest.raises(TrainerError, match="does not exist"):
        run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainerError, match="sub-folder per class"):
        run(tmp_path / "empty")
    (tmp_path / "empty" / "cats").mkdir()
    (tmp_path / "empty" / "dogs").mkdir()
    _png(tmp_path / "empty" / "dogs" / "a.png", (40, 40), (1, 2, 3))
    with pytest.raises(TrainerError, match=r"cats holds no \.jpg/\.jpeg/\.png files"):
        run(tmp_path / "empty")
    assert not (tmp_path / "out").exists()  # nothing half-created


def test_refuses_to_mix_into_an_existing_data_set(tmp_path: Path) -> None:
    """The same conversion again finds its data set complete; anything else is refused, nothing is touched."""
    first = make_synthetic(tmp_path / "d", count=8)
    written = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "d").glob("*.tfrec")}
    assert make_synthetic(tmp_path / "d", count=8) == first  # e.g. a job restarted after it had finished
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "d").glob("*.tfrec")} == written
    with pytest.raises(TrainerError, match="already holds TFRecords"):
        make_synthetic(tmp_path / "d", count=10)
    older = tmp_path / "older"  # a data set written before conversions had fingerprints
    make_synthetic(older, count=8)
    meta = json.loads((older / "metadata.json").read_text())
    (older / "metadata.json").write_text(json.dumps({**meta, "fingerprint": ""}))
    with pytest.raises(TrainerError, match="already holds TFRecords"):
        make_synthetic(older, count=8)
    unfinished = tmp_path / "unfinished"
    make_synthetic(unfinished, count=8)
    (unfinished / "metadata.json").unlink()
    with pytest.raises(TrainerError, match="unfinished conversion of another source or with other settings"):
        make_synthetic(unfinished, count=10)


def test_cli_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        create_tfrecords.parse_args(["--source", "folder", "--output", "o", "--image-size", "64"])
    assert "--source folder needs --folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        create_tfrecords.parse_args(
            ["--source", "synthetic", "--output", "o", "--image-size", "64", "--valid-fraction", "1.5"]
        )
    assert "--valid-fraction 1.5" in capsys.readouterr().err


def test_synthetic_classes_differ_learnably() -> None:
    from trainer.loaders import synthetic_image

    rng = np.random.default_rng(0)
    warm = [synthetic_image(rng, 0, 32) for _ in range(20)]
    cool = [synthetic_image(rng, 1, 32) for _ in range(20)]
    red_minus_blue = [float(im[..., 0].mean() - im[..., 2].mean()) for im in warm + cool]
    assert min(red_minus_blue[:20]) > 0 > max(red_minus_blue[20:])


def test_oversized_image_is_skipped_as_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainer.images import UnreadableImage, to_stored_jpeg

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # PIL refuses images over twice this many pixels
    with pytest.raises(UnreadableImage):
        to_stored_jpeg(_jpeg_bytes((40, 40), (1, 2, 3)), 32)


def _folder_args(folder: Path, output: Path, *more: str) -> list[str]:
    return [
        "--source",
        "folder",
        "--folder",
        str(folder),
        "--output",
        str(output),
        "--image-size",
        "32",
        *more,
    ]


def test_folder_with_many_classes_keeps_sorted_class_order(tmp_path: Path) -> None:
    make_class_folder(tmp_path / "img", ["zebra", "ant", "moth", "bee"], per_class=5)
    meta = create_tfrecords.run(create_tfrecords.parse_args(_folder_args(tmp_path / "img", tmp_path / "o")))
    assert meta.class_names == ["ant", "bee", "moth", "zebra"]
    assert meta.counts["valid"] == dict.fromkeys(meta.class_names, 1)
    assert sorted({r["label"] for r in read_records(tmp_path / "o", "train")}) == [0, 1, 2, 3]


def test_one_class_or_a_class_without_readable_images_is_a_clear_error(tmp_path: Path) -> None:
    make_class_folder(tmp_path / "one", ["cats"], per_class=4)
    with pytest.raises(TrainerError, match=r"has 1 class sub-folder\(s\); it needs .* at least two"):
        create_tfrecords.run(create_tfrecords.parse_args(_folder_args(tmp_path / "one", tmp_path / "o1")))

    make_class_folder(tmp_path / "bad", ["cats", "dogs"], per_class=4)
    (tmp_path / "bad" / "owls").mkdir()
    for i in range(3):
        (tmp_path / "bad" / "owls" / f"{i}.jpg").write_bytes(b"not an image")
    with pytest.raises(TrainerError, match=r"class\(es\) \['owls'\] have no readable images \(3 unreadable"):
        create_tfrecords.run(create_tfrecords.parse_args(_folder_args(tmp_path / "bad", tmp_path / "o2")))
    assert not (tmp_path / "o2").exists()  # the shards it had written are gone with the dir it made

    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("a user's file")
    with pytest.raises(TrainerError, match="owls"):
        create_tfrecords.run(create_tfrecords.parse_args(_folder_args(tmp_path / "bad", tmp_path / "kept")))
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["notes.txt"]  # no shards, nothing lost


def test_unknown_tfds_name_is_a_clear_error(tmp_path: Path) -> None:
    """tfds.builder's own registry answers offline: no download is attempted for a name it does not know."""
    args = create_tfrecords.parse_args(
        ["--source", "tfds", "--tfds-name", "cassavaa", "--output", str(tmp_path / "o"), "--image-size", "32"]
    )
    with pytest.raises(
        TrainerError, match=r"--tfds-name 'cassavaa' is not a TensorFlow Datasets dataset.*cassava"
    ):
        create_tfrecords.run(args)
    assert not (tmp_path / "o").exists()
    assert create_tfrecords.parse_args(
        ["--source", "tfds", "--output", "o", "--image-size", "32"]
    ).tfds_name == ("cats_vs_dogs")


def _tfds_metadata(root: Path, name: str, version: str, splits: dict[str, int]) -> Path:
    """The dataset_info.json TFDS writes after preparing a dataset (the split names are what matters here)."""
    info = {
        "name": name,
        "version": version,
        "splits": [{"name": s, "shardLengths": [str(n)]} for s, n in splits.items()],
    }
    (root / name / version).mkdir(parents=True)
    (root / name / version / "dataset_info.json").write_text(json.dumps(info))
    return root


def test_tfds_cassava_uses_its_own_validation_split(tmp_path: Path) -> None:
    """The real loading code under tfds.testing.mock_data: cassava's real builder and label names, random
    images, and the split names of its real dataset_info (train 5,656 / validation 1,889 / test 1,885)."""
    import tensorflow_datasets as tfds

    meta_dir = _tfds_metadata(
        tmp_path / "tfds", "cassava", "0.1.0", {"train": 5656, "validation": 1889, "test": 1885}
    )
    out = tmp_path / "o"
    args = ["--source", "tfds", "--tfds-name", "cassava", "--output", str(out), "--image-size", "32"]
    with tfds.testing.mock_data(num_examples=20, data_dir=str(meta_dir)):
        meta = create_tfrecords.run(create_tfrecords.parse_args([*args, "--count", "15"]))
    assert meta.class_names == ["cbb", "cbsd", "cgm", "cmd", "healthy"]
    assert meta.valid_split == "validation" and meta.source == "tfds:cassava"
    assert meta.total("train") == 15  # --count caps the training split ...
    # ... and the validation split at round(15 x 0.2) = 3 raised to one per class: not split from train
    assert meta.total("valid") == 5
    rows = read_records(out, "valid")
    assert len(rows) == 5 and all(min(r["height"], r["width"]) == 32 for r in rows)


def test_a_small_tfds_count_still_gives_every_class_a_validation_image(tmp_path: Path) -> None:
    """cassava's 5 classes with --count 10 (the smallest check_count allows): round(10 x 0.2) is 2, but
    docs/trainer.md promises each class at least one validation image."""
    import tensorflow_datasets as tfds

    meta_dir = _tfds_metadata(
        tmp_path / "tfds", "cassava", "0.1.0", {"train": 5656, "validation": 1889, "test": 1885}
    )
    args = [
        "--source",
        "tfds",
        "--tfds-name",
        "cassava",
        "--output",
        str(tmp_path / "o"),
        "--image-size",
        "32",
    ]
    with tfds.testing.mock_data(num_examples=40, data_dir=str(meta_dir)):
        meta = create_tfrecords.run(create_tfrecords.parse_args([*args, "--count", "10"]))
    assert meta.total("train") == 10
    assert meta.counts["valid"] == {name: 1 for name in meta.class_names}


def test_tfds_without_a_validation_split_is_split_here(tmp_path: Path) -> None:
    """cats_vs_dogs has only `train`: the class-balanced split by --valid-fraction applies."""
    import tensorflow_datasets as tfds

    meta_dir = _tfds_metadata(tmp_path / "tfds", "cats_vs_dogs", "4.0.1", {"train": 23262})
    args = [
        "--source",
        "tfds",
        "--output",
        str(tmp_path / "o"),
        "--image-size",
        "32",
        "--valid-fraction",
        "0.25",
    ]
    with tfds.testing.mock_data(num_examples=16, data_dir=str(meta_dir)):
        meta = create_tfrecords.run(create_tfrecords.parse_args(args))
    assert (
        meta.class_names == ["cat", "dog"] and meta.valid_split == "" and meta.source == "tfds:cats_vs_dogs"
    )
    assert meta.total("train") + meta.total("valid") == 16 and meta.valid_fraction == 0.25


def test_exif_orientation_is_applied_before_storing() -> None:
    """A phone photo saved sideways with orientation 6 (rotate 90 degrees clockwise) is stored upright."""
    from trainer.images import to_stored_jpeg

    sideways = np.zeros((40, 80, 3), np.uint8)  # 80 wide, 40 high as stored in the file
    sideways[:, :40] = 255  # left half white
    exif = Image.Exif()
    exif[0x0112] = 6
    buffer = io.BytesIO()
    Image.fromarray(sideways).save(buffer, format="JPEG", exif=exif)
    jpeg, height, width = to_stored_jpeg(buffer.getvalue(), image_size=40)
    stored = np.asarray(Image.open(io.BytesIO(jpeg)))
    assert (height, width) == (80, 40) and stored.shape[:2] == (80, 40)  # portrait, as viewers show it
    assert stored[:40].mean() > 200 and stored[40:].mean() < 50  # the white half is now on top


def test_hidden_entries_are_never_classes_or_images(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    make_class_folder(tmp_path / "img", ["cats", "dogs"], per_class=4)
    (tmp_path / "img" / ".ipynb_checkpoints").mkdir()
    _png(tmp_path / "img" / ".ipynb_checkpoints" / "a.png", (40, 40), (1, 2, 3))
    _png(tmp_path / "img" / "cats" / "._000.png", (40, 40), (1, 2, 3))  # macOS metadata twin
    with caplog.at_level("INFO", logger="trainer"):
        meta = create_tfrecords.run(
            create_tfrecords.parse_args(_folder_args(tmp_path / "img", tmp_path / "o"))
        )
    assert meta.class_names == ["cats", "dogs"] and meta.skipped == 0
    assert meta.total("train") + meta.total("valid") == 8
    skipped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipped")]
    assert skipped == [
        "skipped 2 hidden entries (never classes or images): .ipynb_checkpoints/, cats/._000.png"
    ]


def test_a_count_too_small_for_the_classes_names_count(tmp_path: Path) -> None:
    make_class_folder(tmp_path / "img", ["ant", "bee", "moth"], per_class=4)
    for count in ("2", "5"):  # below the class count; too few for a training and a validation image each
        with pytest.raises(
            TrainerError, match=rf"--count {count} is too small for 3 classes.*--count 6 or more"
        ):
            create_tfrecords.run(
                create_tfrecords.parse_args(_folder_args(tmp_path / "img", tmp_path / "o", "--count", count))
            )
    assert not (tmp_path / "o").exists()
    meta = create_tfrecords.run(
        create_tfrecords.parse_args(_folder_args(tmp_path / "img", tmp_path / "o", "--count", "6"))
    )
    assert meta.counts == {s: dict.fromkeys(["ant", "bee", "moth"], 1) for s in ("train", "valid")}


def test_a_class_of_one_image_is_an_error_naming_the_class(tmp_path: Path) -> None:
    make_class_folder(tmp_path / "img", ["cats", "dogs"], per_class=4)
    for extra in (tmp_path / "img" / "dogs").glob("00[1-3].png"):
        extra.unlink()
    with pytest.raises(TrainerError, match=r"dogs holds 1 image; every class needs at least two"):
        create_tfrecords.run(create_tfrecords.parse_args(_folder_args(tmp_path / "img", tmp_path / "o")))
