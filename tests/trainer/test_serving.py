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
def test_the_model_dir_is_what_the_prediction_server_serves(trained: dict, signatures: dict) -> None:
    """The server's contract (serving/model_files.py) is the trainer's export: its files, the bytes signature
    under its names; no second SavedModel inside the model dir any more."""
    from serving import model_files

    model_dir = trained["model_dir"]
    assert all((model_dir / f).is_file() for f in model_files.REQUIRED_FILES)
    assert (model_dir / model_files.CLASS_NAMES_FILE).read_text().split() == ["blue", "green", "red"]
    serve = signatures[model_files.BYTES_SIGNATURE]
    assert list(serve.structured_input_signature[1]) == [model_files.BYTES_INPUT]
    assert list(serve.structured_outputs) == [model_files.PROBABILITIES_OUTPUT]
    assert not (model_dir / "serving_bytes").exists()
