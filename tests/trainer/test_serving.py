"""The exported model's two signatures: float pixels (serving_default) and image bytes (serving_bytes)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tests.trainer.helpers import SIZE
from trainer import data, export, images, metadata, records


@pytest.fixture(scope="module")
def signatures(trained: dict) -> dict:
    assert trained["rc"] == 0, trained["log"][-3000:]
    return tf.saved_model.load(str(trained["model_dir"])).signatures


def encode(array: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array).save(out, format=fmt, quality=95)
    return out.getvalue()


def by_bytes(signatures: dict, encoded: list[bytes]) -> np.ndarray:
    serve = signatures[export.BYTES_SIGNATURE]
    return serve(**{export.BYTES_INPUT: tf.constant(encoded)})[export.SIGNATURE_OUTPUT].numpy()


def by_pixels(signatures: dict, pixels: np.ndarray) -> np.ndarray:
    serve = signatures["serving_default"]
    return serve(**{export.SIGNATURE_INPUT: tf.constant(pixels, tf.float32)})[export.SIGNATURE_OUTPUT].numpy()


@pytest.mark.slow
def test_both_signatures_agree_on_the_validation_images(trained: dict, signatures: dict) -> None:
    """The stored validation JPEGs, sent as bytes, give what serving_default gives on validation's pixels."""
    pattern = metadata.record_pattern(str(trained["data"]), "valid")
    serialized = list(tf.data.TFRecordDataset(tf.io.gfile.glob(pattern)).take(16))
    stored = [records.parse(s)["image"].numpy() for s in serialized]
    pixels = np.stack([data.decode_center(s, SIZE)[0].numpy() for s in serialized])
    np.testing.assert_array_equal(by_bytes(signatures, stored), by_pixels(signatures, pixels))


@pytest.mark.slow
def test_png_and_jpeg_of_any_size_are_resized_and_cropped_like_validation(signatures: dict) -> None:
    rng = np.random.default_rng(5)
    square = rng.integers(0, 256, (SIZE, SIZE, 3), np.uint8)
    # A PNG is lossless: exactly the pixels serving_default is given.
    np.testing.assert_array_equal(
        by_bytes(signatures, [encode(square, "PNG")]), by_pixels(signatures, square[None])
    )
    # A JPEG already at shorter side S (odd offsets: not block-aligned) gets validation's center square.
    for width in (SIZE + 8, SIZE + 9):
        wide = encode(rng.integers(0, 256, (SIZE, width, 3), np.uint8), "JPEG")
        center = data.decode_center(records.serialize(wide, 0, SIZE, width), SIZE)[0].numpy()
        np.testing.assert_array_equal(by_bytes(signatures, [wide]), by_pixels(signatures, center[None]))
    # A larger image: the shorter side is resized to S as data preparation stores it, then center-cropped.
    smooth = np.clip(
        np.add.outer(np.arange(3 * SIZE), np.arange(4 * SIZE))[..., None] * [1, 0.5, 0.25], 0, 255
    )
    big = smooth.astype(np.uint8)
    in_graph = export.decode_for_serving(tf.constant(encode(big, "PNG")), SIZE).numpy()
    width, height = images.storage_size(big.shape[1], big.shape[0], SIZE)
    resized = np.asarray(
        Image.fromarray(big).resize((width, height), Image.Resampling.BICUBIC, reducing_gap=3.0)
    )
    left = (width - SIZE) // 2
    expected = resized[:, left : left + SIZE].astype(np.int16)
    assert np.abs(in_graph.astype(np.int16) - expected).mean() < 1.5  # PIL's and TF's bicubic kernels differ
    assert by_bytes(signatures, [encode(big, "PNG"), encode(big, "JPEG")]).shape == (2, 3)


@pytest.mark.slow
def test_a_corrupt_string_is_a_clear_error(signatures: dict) -> None:
    good = encode(np.zeros((SIZE, SIZE, 3), np.uint8), "PNG")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
        by_bytes(signatures, [good, b"not an image"])


def test_stored_size_in_graph_matches_the_data_preparation() -> None:
    for width, height in [(100, 64), (64, 100), (333, 250), (31, 47), (64, 64), (97, 65)]:
        h, w = export.stored_size(tf.constant(height), tf.constant(width), 32)
        assert (int(w), int(h)) == images.storage_size(width, height, 32)


@pytest.mark.slow
def test_the_model_for_image_files_names_every_class_of_every_image(trained: dict, signatures: dict) -> None:
    """<model_dir>/serving_bytes: serving_default takes encoded images (what Vertex batch prediction sends)
    and answers, per image, its classes most probable first with the probabilities serving_bytes gives;
    the model dir keeps its float default."""
    by_files = tf.saved_model.load(str(trained["model_dir"] / export.BYTES_MODEL_DIR)).signatures
    rng = np.random.default_rng(7)
    encoded = [encode(rng.integers(0, 256, (SIZE + 5, SIZE, 3), np.uint8), "PNG") for _ in range(3)]
    default = by_files["serving_default"]
    assert list(default.structured_input_signature[1]) == [export.BYTES_INPUT]
    got = {k: v.numpy() for k, v in default(**{export.BYTES_INPUT: tf.constant(encoded)}).items()}
    expected = by_bytes(signatures, encoded)
    for row in range(3):
        names = [name.decode() for name in got[export.CLASSES][row]]
        assert sorted(names) == ["blue", "green", "red"]
        assert got[export.TOP_CLASS][row].decode() == names[0] and got[export.ERROR][row] == b""
        assert list(got[export.PROBABILITIES][row]) == sorted(got[export.PROBABILITIES][row], reverse=True)
        by_name = dict(zip(names, got[export.PROBABILITIES][row], strict=True))
        np.testing.assert_allclose([by_name[n] for n in ["blue", "green", "red"]], expected[row], rtol=1e-6)
    assert (
        signatures["serving_default"].structured_input_signature[1][export.SIGNATURE_INPUT].dtype
        == tf.float32
    )
    names = (trained["model_dir"] / export.BYTES_MODEL_DIR / "assets" / export.CLASS_NAMES_FILE).read_text()
    assert names.split() == ["blue", "green", "red"]


@pytest.mark.slow
def test_a_corrupt_image_fails_alone_in_the_model_for_image_files(trained: dict, signatures: dict) -> None:
    """A corrupt, a truncated and a non-image file sent with good images: each yields its own error, the
    good ones their classes, as if sent alone (one request to the prebuilt container, one call here)."""
    default = tf.saved_model.load(str(trained["model_dir"] / export.BYTES_MODEL_DIR)).signatures[
        "serving_default"
    ]
    rng = np.random.default_rng(11)
    good = [encode(rng.integers(0, 256, (SIZE, SIZE + 3, 3), np.uint8), fmt) for fmt in ("PNG", "JPEG")]
    sent = [good[0], b"not an image", good[1][: len(good[1]) // 3], b"\x89PNG\r\n\x1a\n broken", good[0]]
    got = {k: v.numpy() for k, v in default(**{export.BYTES_INPUT: tf.constant(sent)}).items()}
    errors = [e.decode() for e in got[export.ERROR]]
    assert errors[0] == errors[4] == "" and errors[1:4] == [export.UNREADABLE] * 3
    assert [c.decode() for c in got[export.TOP_CLASS]][1:4] == ["", "", ""]
    assert not got[export.PROBABILITIES][1:4].any()
    alone = default(**{export.BYTES_INPUT: tf.constant(good[:1])})[export.PROBABILITIES].numpy()
    np.testing.assert_allclose(got[export.PROBABILITIES][0], alone[0], rtol=1e-6)
    np.testing.assert_allclose(got[export.PROBABILITIES][4], alone[0], rtol=1e-6)
    none_read = default(**{export.BYTES_INPUT: tf.constant([b"junk"])})
    assert none_read[export.ERROR].numpy().tolist() == [export.UNREADABLE.encode()]
