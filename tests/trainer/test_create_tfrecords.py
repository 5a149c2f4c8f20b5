"""TFRecords preparation: round trip, class balance, split determinism, aspect ratio, unreadable files."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.trainer.helpers import SIZE, make_synthetic
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
    make_synthetic(tmp_path / "d", count=8)
    with pytest.raises(TrainerError, match="already holds TFRecords"):
        make_synthetic(tmp_path / "d", count=8)


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
    from trainer.sources import synthetic_image

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
