"""CLI: classify images with an exported model: class names and probabilities per image, best first.

Images go through the SavedModel's `serving_bytes` signature (encoded bytes, decoded and cropped in the graph
as validation does), the same path a Vertex endpoint serves; the class names are the model's own asset.
"""

from __future__ import annotations

import argparse
import json
import logging
import posixpath
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from trainer import export, startup
from trainer.errors import TrainerError
from trainer.sources import IMAGE_EXTENSIONS

BATCH = 32


@dataclass(frozen=True)
class Prediction:
    image: str
    classes: list[tuple[str, float]]  # (class name, probability), most probable first


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m trainer.predict", description=__doc__)
    p.add_argument("--model-dir", required=True, help="the SavedModel trainer.task exported (local or gs://)")
    p.add_argument("--top-k", type=int, default=5, help="classes shown per image (default 5, at most all)")
    p.add_argument("--json", action="store_true", help="one JSON object per image and line")
    p.add_argument("images", nargs="+", metavar="IMAGES", help="image files, folders or gs:// prefixes")
    args = p.parse_args(argv)
    if args.top_k < 1:
        p.error("--top-k must be at least 1")
    return args


def list_images(paths: list[str]) -> tuple[list[str], list[str]]:
    """(files as given, and folders or gs:// prefixes expanded to their .jpg/.jpeg/.png files, sorted;
    one error line per path that names nothing to classify): a bad path must not stop the others."""
    found: list[str] = []
    errors: list[str] = []
    for path in paths:
        if tf.io.gfile.isdir(path):
            inside = [
                posixpath.join(root, name)
                for root, _, names in tf.io.gfile.walk(path)
                for name in names
                if name.lower().endswith(IMAGE_EXTENSIONS)
            ]
            if not inside:
                errors.append(f"{path} holds no .jpg/.jpeg/.png files; pass image files or a folder of them")
            found += sorted(inside)
        elif tf.io.gfile.exists(path):
            found.append(path)
        else:
            errors.append(f"{path}: no such image file or folder")
    return found, errors


def load_model(model_dir: str) -> tuple[Callable[..., Mapping[str, tf.Tensor]], list[str]]:
    """(the serving_bytes signature, class names); errors say which part of the model is missing."""
    if not tf.io.gfile.exists(posixpath.join(model_dir, "saved_model.pb")):
        raise TrainerError(
            f"--model-dir {model_dir}: no SavedModel there (saved_model.pb is missing). Pass the directory "
            "the trainer exported to (its --model-dir, or the job's AIP_MODEL_DIR)."
        )
    names_path = posixpath.join(model_dir, "assets", export.CLASS_NAMES_FILE)
    if not tf.io.gfile.exists(names_path):
        raise TrainerError(
            f"--model-dir {model_dir}: the model has no class names (assets/{export.CLASS_NAMES_FILE}); "
            "it was exported by an older trainer. Train or export it again with this trainer."
        )
    with tf.io.gfile.GFile(names_path) as f:
        class_names = f.read().splitlines()
    signatures = tf.saved_model.load(model_dir).signatures
    if export.BYTES_SIGNATURE not in signatures:
        raise TrainerError(
            f"--model-dir {model_dir}: the model has no {export.BYTES_SIGNATURE} signature (it has "
            f"{sorted(signatures)}); export it again with this trainer."
        )
    return signatures[export.BYTES_SIGNATURE], class_names


def read_image(path: str) -> bytes:
    """The file's bytes, once checked to decode as an image (a bad file must not fail the whole batch)."""
    with tf.io.gfile.GFile(path, "rb") as f:
        encoded = f.read()
    try:
        tf.io.decode_image(encoded, channels=3, expand_animations=False)
    except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as exc:
        raise TrainerError(f"{path}: not a JPEG or PNG image ({decode_reason(exc.message)})") from exc
    return encoded


def decode_reason(message: str) -> str:
    """TensorFlow's decode error without its op internals (`{{function_node __wrapped__DecodeImage...}}`,
    `[Op:DecodeImage]`), on one line."""
    if "Unknown image file format" in message:
        return "its bytes are in no image format"
    plain = re.sub(r"\{\{[^}]*\}\}", "", message).split("[Op:", 1)[0]
    return " ".join(plain.split()).rstrip(".") or "it does not decode"


def top_k_note(top_k: int, class_names: list[str]) -> str | None:
    """--top-k above the model's class count: say that every class is shown."""
    if top_k <= len(class_names):
        return None
    return (
        f"--top-k {top_k}: the model has {len(class_names)} classes ({', '.join(class_names)}); showing all "
        f"{len(class_names)}"
    )


def rank(probs: np.ndarray, class_names: list[str], top_k: int) -> list[list[tuple[str, float]]]:
    """Per image, the top_k (class name, probability) pairs, most probable first (ties: class order)."""
    full = export.class_probabilities(probs)
    if full.shape[1] != len(class_names):
        raise TrainerError(
            f"the model returns {full.shape[1]} class probabilities but names {len(class_names)} classes"
        )
    order = np.argsort(-full, axis=1, kind="stable")[:, :top_k]
    return [[(class_names[i], float(row[i])) for i in idx] for row, idx in zip(full, order, strict=True)]


def predict(model_dir: str, paths: list[str], top_k: int) -> tuple[list[Prediction], list[str], str | None]:
    """(predictions of the readable images, one error line per unreadable one, the --top-k note if any)."""
    serve, class_names = load_model(model_dir)
    note = top_k_note(top_k, class_names)
    readable: list[tuple[str, bytes]] = []
    images, errors = list_images(paths)
    for path in images:
        try:
            readable.append((path, read_image(path)))
        except TrainerError as exc:
            errors.append(str(exc))
    out: list[Prediction] = []
    for start in range(0, len(readable), BATCH):
        batch = readable[start : start + BATCH]
        result = serve(**{export.BYTES_INPUT: tf.constant([encoded for _, encoded in batch])})
        ranked = rank(result[export.SIGNATURE_OUTPUT].numpy(), class_names, top_k)
        out += [Prediction(path, classes) for (path, _), classes in zip(batch, ranked, strict=True)]
    return out, errors, note


def format_line(p: Prediction, as_json: bool) -> str:
    if as_json:
        classes = [{"class": name, "probability": prob} for name, prob in p.classes]
        return json.dumps({"image": p.image, "predictions": classes})
    return f"{p.image}: " + ", ".join(f"{name} {prob:.4f}" for name, prob in p.classes)


def main(argv: list[str] | None = None) -> None:
    startup.quiet_start()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    args = parse_args(argv)
    try:
        predictions, errors, note = predict(args.model_dir, args.images, args.top_k)
    except TrainerError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        sys.exit("interrupted: nothing classified was printed; nothing was written")
    if note and predictions:  # about the classes shown: said with them, never ahead of an error alone
        print(f"note: {note}", file=sys.stderr, flush=True)
    for p in predictions:
        print(format_line(p, args.json))
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    if errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
