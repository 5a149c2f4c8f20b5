"""Images as stored: JPEGs decoded at the kept size give the same image as a full decode (same size and
orientation, pixels within the difference docs/trainer.md states); other formats decode in full; records made
without TensorFlow are the bytes TensorFlow makes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from trainer import example_proto, images

# The largest differences from a full decode measured with a margin of 2 (docs/trainer.md, "Camera photos"):
# mean over every pixel and channel, and the largest single one, in grey levels of 255.
MEAN_BOUND = 0.6
MAX_BOUND = 14
ORIENTATION = 0x0112  # the EXIF tag


def photo(width: int, height: int) -> np.ndarray:
    """A real photograph (scikit-image's coffee, no download) cut to the aspect and upscaled."""
    import skimage.data

    coffee = skimage.data.coffee()  # 600x400
    h = min(coffee.shape[0], coffee.shape[1] * height // width)
    w = h * width // height
    return np.array(Image.fromarray(coffee[:h, :w]).resize((width, height), Image.Resampling.BICUBIC))


def encode(pixels: np.ndarray, orientation: int = 1, **save: object) -> bytes:
    exif = Image.Exif()
    exif[ORIENTATION] = orientation
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, exif=exif, **{"format": "JPEG", "quality": 90, **save})
    return buffer.getvalue()


def full_decode(data: bytes, size: int) -> np.ndarray:
    """What the conversion stored before decoding at the kept size: every pixel decoded, then resized."""
    return np.asarray(images.resized(images.decode(data), size), dtype=int)


def assert_as_full_decode(data: bytes, size: int) -> tuple[int, int]:
    """The scaled decode's stored pixels against the full decode's: same shape, within the bounds."""
    jpeg, height, width = images.to_stored_jpeg(data, size)
    scaled = np.asarray(images.resized(images.decode(data, keep_shorter=size), size), dtype=int)
    full = full_decode(data, size)
    assert scaled.shape == full.shape == (height, width, 3)
    assert Image.open(io.BytesIO(jpeg)).size == (width, height)
    difference = np.abs(scaled - full)
    assert difference.mean() <= MEAN_BOUND and difference.max() <= MAX_BOUND, (
        difference.mean(),
        difference.max(),
    )
    return height, width


def test_a_12_mp_photo_is_decoded_at_a_quarter_and_stored_as_a_full_decode_would_be() -> None:
    data = encode(photo(4032, 3024))
    # 1/8 would leave 378 rows, under twice the kept 224: the decoder stops at 1/4.
    assert images.decode(data, keep_shorter=224).size == (1008, 756)
    assert assert_as_full_decode(data, 224) == (224, 299)


@pytest.mark.parametrize(("orientation", "stored"), [(6, (299, 224)), (8, (299, 224)), (3, (224, 299))])
def test_an_exif_rotated_12_mp_photo_is_stored_upright_as_a_full_decode_would_be(
    orientation: int, stored: tuple[int, int]
) -> None:
    pixels = photo(4032, 3024)
    pixels[:1512, :2016] = (255, 255, 255)  # the top-left quarter as the file stores it: white
    data = encode(pixels, orientation)
    decoded = images.decode(data, keep_shorter=224)
    assert min(decoded.size) >= 224 * images.DECODE_MARGIN and decoded.size in {(1008, 756), (756, 1008)}
    assert assert_as_full_decode(data, 224) == stored
    upright = np.asarray(Image.open(io.BytesIO(images.to_stored_jpeg(data, 224)[0])))
    h, w = upright.shape[0] // 2, upright.shape[1] // 2
    # Where the white quarter lands once rotated as viewers show it (as ImageOps.exif_transpose turns it).
    white = {6: upright[:h, w:], 8: upright[h:, :w], 3: upright[h:, w:]}[orientation]
    assert white.mean() > 240


def test_the_decode_size_leaves_the_margin_whatever_the_shape_or_rotation() -> None:
    for width, height in [(4032, 3024), (3024, 4032), (1600, 1200), (4000, 1000), (225, 224), (100, 80)]:
        w, h = images.decode_size(width, height, 224)
        assert min(w, h) >= 224 * images.DECODE_MARGIN
        assert abs(w / h - width / height) < 0.01  # aspect kept, so a rotation cannot shrink the shorter side


def test_a_progressive_jpeg_is_decoded_scaled_too() -> None:
    data = encode(photo(1600, 1200), progressive=True)
    assert Image.open(io.BytesIO(data)).info.get("progressive")
    assert images.decode(data, keep_shorter=224).size == (800, 600)
    assert assert_as_full_decode(data, 224) == (224, 299)


def test_a_png_is_decoded_in_full_and_stored_as_before() -> None:
    pixels = photo(1200, 900)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    data = buffer.getvalue()
    assert images.decode(data, keep_shorter=224).size == (1200, 900)
    jpeg, height, width = images.to_stored_jpeg(data, 224)
    assert (height, width) == (224, 299)
    expected = images.encoded(images.resized(Image.fromarray(pixels), 224))
    assert jpeg == expected  # no scaled decode for PNG: exactly what a full decode stores


def test_a_small_jpeg_is_not_scaled() -> None:
    data = encode(photo(500, 375))
    assert images.decode(data, keep_shorter=224).size == (500, 375)
    assert images.to_stored_jpeg(data, 224)[0] == images.encoded(images.resized(images.decode(data), 224))


@pytest.mark.parametrize(
    ("jpeg", "label", "height", "width"),
    [
        (b"", 0, 0, 0),
        (b"\xff\xd8" * 40_000, 1, 224, 299),
        (bytes(range(256)), 4, 2**40, 127),
        (b"x", -1, 1, 1),
    ],
)
def test_records_made_without_tensorflow_are_tensorflows_bytes(
    jpeg: bytes, label: int, height: int, width: int
) -> None:
    import tensorflow as tf

    from trainer import records

    def int64(value: int) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpeg])),
        "label": int64(label),
        "height": int64(height),
        "width": int64(width),
    }
    expected = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True
    )
    record = example_proto.serialize(jpeg, label, height, width)
    assert record == expected
    parsed = records.parse(tf.constant(record))
    assert parsed["image"].numpy() == jpeg and int(parsed["label"]) == label
    assert (int(parsed["height"]), int(parsed["width"])) == (height, width)
