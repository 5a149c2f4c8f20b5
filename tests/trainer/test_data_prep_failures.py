"""Data preparation when things go wrong: read errors that are not bad images, a replica that never finishes,
a kill while metadata.json is written, leftovers of killed runs; and the conversion's bounded memory."""

from __future__ import annotations

import errno
import logging
from functools import partial
from pathlib import Path

import pytest
import tensorflow as tf

from tests.trainer.test_parallel_tfrecords import cluster_spec, convert_args, folder_with_a_broken_file
from trainer import conversion, create_tfrecords, loaders, metadata, shard_files
from trainer.conversion import Converted, Unreadable
from trainer.errors import TrainerError


def denied(path: str) -> bytes:
    raise PermissionError(errno.EACCES, "Permission denied", path)


def io_error(path: str) -> bytes:
    raise OSError(errno.EIO, "Input/output error", path)


def test_only_images_that_do_not_decode_or_are_gone_are_unreadable(tmp_path: Path) -> None:
    assert isinstance(conversion.convert((partial(loaders.constant, b"not a jpeg"), 0), 32), Unreadable)
    gone = conversion.convert((partial(loaders.read_file, str(tmp_path / "gone.jpg")), 0), 32)
    gone_uri = conversion.convert((partial(loaders.read_file, f"file://{tmp_path}/gone.jpg"), 0), 32)
    assert isinstance(gone, Unreadable) and isinstance(gone_uri, Unreadable)
    assert "gone since the source was listed" in gone_uri.reason
    for failing in (denied, io_error):
        with pytest.raises(OSError):
            conversion.convert((partial(failing, "x.jpg"), 0), 32)
    # And the error comes back from a worker process.
    with conversion.converter(2, 32) as convert, pytest.raises(PermissionError, match="Permission denied"):
        list(convert([(partial(loaders.synthetic, 0, 0, 40, 1), 0), (partial(denied, "x.jpg"), 1)]))


def test_a_read_error_fails_the_replica_and_the_rerun_redoes_only_that_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = folder_with_a_broken_file(tmp_path / "images")
    out = tmp_path / "out"
    args = create_tfrecords.parse_args(convert_args(src, out, "--workers", "1"))
    read_file = loaders.read_file
    victim = str(src / "dogs" / "003.png")
    assert Path(victim).exists()
    monkeypatch.setattr(
        loaders, "read_file", lambda path: denied(path) if path == victim else read_file(path)
    )
    with pytest.raises(PermissionError):
        create_tfrecords.run(args)
    marked = {p.name for p in (out / shard_files.DONE_DIR).glob("*.json")}
    assert marked and len(marked) < 7 and not (out / metadata.FILENAME).exists()

    monkeypatch.setattr(loaders, "read_file", read_file)  # the permission granted
    meta = create_tfrecords.run(args)
    assert meta.skipped == 1  # the broken file only: the denied one was not stored as skipped
    assert meta.total("train") + meta.total("valid") == 18


def test_the_chief_fails_naming_the_missing_shards_when_a_replica_never_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    src = folder_with_a_broken_file(tmp_path / "images")
    out = tmp_path / "out"
    waits = ["--progress-seconds", "0.05", "--stall-seconds", "0.5"]
    args = create_tfrecords.parse_args(convert_args(src, out, "--workers", "1", *waits))
    monkeypatch.setenv("CLUSTER_SPEC", cluster_spec(0, 0, workers=1))
    caplog.set_level(logging.INFO, logger="trainer")
    with pytest.raises(TrainerError) as raised:
        create_tfrecords.run(args)  # replica 2/2 never starts
    assert str(raised.value).startswith(
        "replica 1/2: no shard was marked done for 0:00:00 (--stall-seconds 0.5); 3 of 7 shard(s) missing: "
        "train-00001.tfrec, train-00003.tfrec, valid-00000.tfrec, written by replica 2/2. Check those "
        "replicas' logs"
    )
    waiting = [r.getMessage() for r in caplog.records if "waiting for the other replicas" in r.getMessage()]
    assert waiting and waiting[0] == (
        "replica 1/2: waiting for the other replicas: 4/7 shards complete, elapsed 0:00:00"
    )
    assert not (out / metadata.FILENAME).exists()

    monkeypatch.setenv("CLUSTER_SPEC", cluster_spec(1, 0, workers=1))
    assert create_tfrecords.run(args) is None  # the other replica, late
    monkeypatch.setenv("CLUSTER_SPEC", cluster_spec(0, 0, workers=1))
    meta = create_tfrecords.run(args)  # the same command resumes and finishes
    assert meta.skipped == 1 and meta.total("train") + meta.total("valid") == 18


def test_a_stall_limit_must_be_positive(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        create_tfrecords.parse_args(["--source", "synthetic", "--output", "o", "--image-size", "32",
                                     "--stall-seconds", "0"])  # fmt: skip
    assert "--stall-seconds 0 must be positive" in capsys.readouterr().err


def test_metadata_json_appears_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = folder_with_a_broken_file(tmp_path / "images")
    out = tmp_path / "out"
    args = create_tfrecords.parse_args(convert_args(src, out, "--workers", "1"))
    write = tf.io.gfile.GFile.write

    def killed_while_writing_metadata(self: tf.io.gfile.GFile, text: str) -> None:
        if '"class_names"' in text:
            write(self, text[:20])
            raise KeyboardInterrupt  # as a kill would stop it
        write(self, text)

    monkeypatch.setattr(tf.io.gfile.GFile, "write", killed_while_writing_metadata)
    with pytest.raises(KeyboardInterrupt):
        create_tfrecords.run(args)
    assert not (out / metadata.FILENAME).exists()
    assert list(out.glob(f"{metadata.FILENAME}{shard_files.TMP_TAG}*"))  # what the kill left

    monkeypatch.setattr(tf.io.gfile.GFile, "write", write)
    meta = create_tfrecords.run(args)  # resumes: every shard is done, the chief writes metadata.json
    assert metadata.read(str(out)) == meta and meta.skipped == 1
    assert not list(out.glob(f"*{shard_files.TMP_TAG}*"))


def test_an_empty_metadata_json_of_an_unfinished_conversion_is_written_again(tmp_path: Path) -> None:
    src = folder_with_a_broken_file(tmp_path / "images")
    out = tmp_path / "out"
    args = create_tfrecords.parse_args(convert_args(src, out, "--workers", "1"))
    expected = create_tfrecords.run(args)
    (out / metadata.FILENAME).write_text("")  # as an older version left it when killed mid-write
    assert create_tfrecords.run(args) == expected
    assert metadata.read(str(out)) == expected


def test_leftovers_include_the_done_markers_temporary_files(tmp_path: Path) -> None:
    done = tmp_path / shard_files.DONE_DIR
    done.mkdir()
    mine = [
        tmp_path / f"train-00001.tfrec{shard_files.TMP_TAG}1-ab",
        done / f"train-00001.tfrec.json{shard_files.TMP_TAG}1-cd",
        tmp_path / f"{metadata.FILENAME}{shard_files.TMP_TAG}1-ef",
    ]
    others = [done / f"train-00002.tfrec.json{shard_files.TMP_TAG}2-ab", done / "train-00001.tfrec.json"]
    for path in mine + others:
        path.write_text("x")
    shard_files.remove_leftovers(str(tmp_path), {"train-00001.tfrec", metadata.FILENAME})
    assert [p.exists() for p in mine + others] == [False, False, False, True, True]


def test_the_conversion_takes_work_a_window_at_a_time_and_keeps_the_order() -> None:
    taken = []

    def loads(count: int):
        for i in range(count):
            taken.append(i)
            yield partial(loaders.synthetic, i, i % 2, 40, 1), i % 2

    with conversion.converter(2, 32) as convert:
        results = convert(loads(400))
        first = next(results)
        # A window of chunks and the reads ahead of them (112 loaders today), not the whole data set up front.
        window = (2 * conversion.TASKS_PER_WORKER + 1) * conversion.CHUNK + 2 * conversion.READS_PER_WORKER
        assert len(taken) <= window < 400
        parallel = [first, *results]
    in_process = [conversion.convert(item, 32) for item in loads(400)]
    assert all(isinstance(r, Converted) for r in parallel) and parallel == in_process


def test_uris_are_read_ahead_on_threads_and_their_errors_keep_their_meaning(tmp_path: Path) -> None:
    from PIL import Image

    photo = tmp_path / "a.png"
    Image.fromarray(loaders.synthetic(0, 0, 40, 1)).save(photo)
    read, gone = (partial(loaders.read_file, f"file://{tmp_path}/{name}") for name in ("a.png", "b.png"))
    local = partial(loaders.read_file, str(photo))
    assert conversion.reads_remote(read) and not conversion.reads_remote(local)  # a worker reads a local file
    assert not conversion.reads_remote(partial(loaders.synthetic, 0, 0, 40, 1))
    with conversion.converter(2, 32) as convert:
        converted, missing, local_converted = list(convert([(read, 1), (gone, 0), (local, 1)]))
    assert converted == conversion.convert((read, 1), 32)  # the bytes read ahead convert as the file would
    assert local_converted == converted  # and as the worker that read the file itself made it
    assert isinstance(missing, Unreadable) and "gone since the source was listed" in missing.reason
    # Any other read error (here: a directory) fails the run, whether read ahead or by a worker.
    for directory in (f"file://{tmp_path}", str(tmp_path)):
        with conversion.converter(2, 32) as convert, pytest.raises(OSError, match=r"[Ii]s a directory"):
            list(convert([(read, 0), (partial(loaders.read_file, directory), 1)]))


def test_tasks_hold_about_the_same_work_whatever_the_image_size() -> None:
    assert conversion.chunk_size(0.003) == conversion.CHUNK  # 500x375 photos: 16 per task
    assert conversion.chunk_size(0.027) == 2  # 12 MP camera photos decoded at a quarter
    assert conversion.chunk_size(2.0) == 1 and conversion.chunk_size(0.0) == conversion.CHUNK


def test_workers_keep_freed_image_buffers_for_the_next_photo() -> None:
    # glibc (this machine, the trainer image's Debian) takes the thresholds; a wrong parameter returns 0.
    assert conversion.keep_freed_memory()
