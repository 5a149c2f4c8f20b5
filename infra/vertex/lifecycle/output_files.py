"""A job's output directories, and small files in them, on a local path or gs:// (STORAGE_EMULATOR_HOST too).
A storage client is made per call: providers hold no clients, and `infra.runs` reads with the caller's ADC."""

from __future__ import annotations

import os
from pathlib import Path

from google.cloud import storage  # type: ignore[attr-defined]  # google-cloud-storage has no py.typed


def _split(uri: str, folder: bool = False) -> tuple[str, str]:
    """gs://bucket/name as (bucket, name); a `folder`'s name ends with "/" ("" at the bucket's root)."""
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    if folder:
        name = name.rstrip("/") + "/" if name.strip("/") else ""
    return bucket, name


def model_dir(base_output_dir: str) -> str:
    return output_dirs(base_output_dir)["AIP_MODEL_DIR"]


def output_dirs(base_output_dir: str) -> dict[str, str]:
    """The directories Vertex derives from base_output_directory and passes to every replica."""
    base = base_output_dir.rstrip("/")
    return {
        "AIP_MODEL_DIR": f"{base}/model/",
        "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/",
    }


def join(directory: str, name: str) -> str:
    return directory.rstrip("/") + "/" + name


def read_text(uri: str) -> str | None:
    """The file's text, None when it does not exist; other errors propagate."""
    if uri.startswith("gs://"):
        bucket, name = _split(uri)
        found = storage.Client().bucket(bucket).get_blob(name)
        return None if found is None else found.download_as_text()
    path = Path(uri).expanduser()
    return path.read_text() if path.is_file() else None


def write_text(uri: str, text: str, content_type: str = "application/json") -> None:
    """Write (replace) the file; a local one through a temporary file, so a reader never sees half of it."""
    if uri.startswith("gs://"):
        bucket, name = _split(uri)
        storage.Client().bucket(bucket).blob(name).upload_from_string(text, content_type=content_type)
        return
    path = Path(uri).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    os.replace(partial, path)


def subdirectories(uri: str) -> list[str]:
    """The directories directly under `uri` (full paths or gs:// URIs, no trailing slash); [] when absent."""
    if uri.startswith("gs://"):
        bucket, prefix = _split(uri, folder=True)
        pages = storage.Client().list_blobs(bucket, prefix=prefix, delimiter="/")
        for _page in pages.pages:  # `prefixes` fills in as the pages are read
            pass
        return sorted(f"gs://{bucket}/{p.rstrip('/')}" for p in pages.prefixes)
    path = Path(uri).expanduser()
    if not path.is_dir():
        return []
    return sorted(str(child) for child in path.iterdir() if child.is_dir())


def missing_files(directory: str, names: tuple[str, ...]) -> list[str]:
    """Which of `names` (relative paths) are not files under `directory`, a gs:// URI or a local folder."""
    if directory.startswith("gs://"):
        bucket, prefix = _split(directory, folder=True)
        client = storage.Client()
        return [name for name in names if not client.bucket(bucket).blob(prefix + name).exists()]
    root = Path(directory).expanduser()
    return [name for name in names if not (root / name).is_file()]


def files_under(uri: str, suffixes: tuple[str, ...]) -> list[str]:
    """Every file under a gs:// prefix or in a local folder (recursively) whose name ends with one of
    `suffixes` (any case), sorted; [] when there is none."""
    if uri.startswith("gs://"):
        bucket, prefix = _split(uri)
        names = (blob.name for blob in storage.Client().list_blobs(bucket, prefix=prefix))
        return sorted(f"gs://{bucket}/{name}" for name in names if name.lower().endswith(suffixes))
    root = Path(uri).expanduser().absolute()
    if root.is_file():
        return [str(root)] if root.name.lower().endswith(suffixes) else []
    found = root.rglob("*") if root.is_dir() else iter(())
    return sorted(str(p) for p in found if p.is_file() and p.name.lower().endswith(suffixes))
