"""What the trainer's commands say first and last: the plan of phases, throughput only when measurable, no
TensorFlow start-up lines (real errors kept), one line for a non-image file or a --top-k above the class
count, one line for what create_tfrecords did or which setting differs, and what --weights none fine-tunes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainer.helpers import REPO
from trainer import backbones, model, predict, startup, task, throughput

NOISE_WORDS = ("absl::InitializeLog", "cudart_stub", "cuInit", "port.cc", "cpu_feature_guard")


def _plan(*argv: str) -> str:
    args = task.parse_args(["--data-dir", "d", "--model-dir", "m", *argv])
    given = not any(a == "--fine-tune-epochs" for a in argv)
    return task.plan_line(args, backbones.get(args.backbone).top_block, given)


def test_the_plan_says_the_default_fine_tune_epochs_up_front() -> None:
    """Issue 42: `--epochs 3` trained 8 epochs and said so nowhere up front."""
    line = _plan("--epochs", "3")
    assert line.startswith(
        "plan: 8 epochs: 3 head epoch(s) on the frozen imagenet backbone, then 5 fine-tune"
    )
    assert "(the default --fine-tune-epochs)" in line and "top block (conv5_*" in line
    assert _plan("--epochs", "3", "--fine-tune-epochs", "0").endswith("no fine-tune epochs")


def test_without_weights_the_plan_says_every_layer_trains() -> None:
    line = _plan("--weights", "none", "--epochs", "3", "--fine-tune-epochs", "1")
    assert line.startswith("plan: 4 epochs: no pretrained weights (--weights none)")
    assert "the whole network, not a frozen backbone" in line and "default" not in line


def test_without_weights_fine_tuning_keeps_the_whole_network_training() -> None:
    spec = backbones.get("efficientnetv2b0")
    net = model.build(32, None, 2, spec.name)
    before = len(net.trainable_weights)
    assert task.start_fine_tune(net, "none", spec.top_block) is None
    assert len(net.trainable_weights) == before  # nothing frozen
    assert all(layer.trainable for layer in model.backbone_of(net).layers)
    model.backbone_of(net).trainable = False  # as with ImageNet weights
    tuned = task.start_fine_tune(net, "imagenet", spec.top_block)
    assert tuned and len(net.trainable_weights) < before


class _Clock:
    def calling(self) -> None: ...

    def waited_seconds(self) -> float:
        return 0.0


@pytest.mark.parametrize(("steps", "measured"), [(1, False), (2, False), (3, True), (9, True)])
def test_throughput_only_for_an_epoch_long_enough_to_measure(steps: int, measured: bool) -> None:
    """Issue 42: a 48-image epoch (one step of 32) reported "0.9 images/s": its tracing, not training."""
    meter = throughput.ThroughputMeter(_Clock(), 32)  # type: ignore[arg-type]
    meter.on_epoch_begin(0)
    for step in range(steps):
        meter.on_train_batch_begin(step)
        meter.on_train_batch_end(step)
    meter.on_epoch_end(0)
    assert (meter.last is not None) == measured
    assert (meter.as_json()["images_per_second"][0] is not None) == measured
    if not measured:
        assert meter.not_measured() == f"throughput not measured: {steps} step(s), at least 3 needed"
    epoch_log = task.EpochLog(task.Phase("head", 0, 1), task.distribute.role(None), meter)
    epoch_log.on_epoch_begin(0)
    with _logged() as lines:
        epoch_log.on_epoch_end(0, {"loss": 0.5})
    assert ("throughput not measured" in lines[0]) != measured, lines


class _logged:
    def __enter__(self) -> list[str]:
        import logging

        self.lines: list[str] = []
        self.handler = logging.Handler()
        self.handler.emit = lambda record: self.lines.append(record.getMessage())  # type: ignore[method-assign]
        logging.getLogger("trainer.task").addHandler(self.handler)
        logging.getLogger("trainer.task").setLevel(logging.INFO)
        return self.lines

    def __exit__(self, *exc: object) -> None:
        import logging

        logging.getLogger("trainer.task").removeHandler(self.handler)


def test_the_noise_filter_drops_start_up_lines_and_keeps_errors() -> None:
    lines = [
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        "I0000 00:00:1795765162.406092   10199 cudart_stub.cc:31] Could not find cuda drivers.",
        "E0000 00:00:1795765162.5   10199 cuda_executor.cc:1228] failed call to cuInit: INTERNAL: CUDA error",
        "E0000 00:00:1795765162.5   10199 some_op.cc:12] a real error",
        "Traceback (most recent call last):",
    ]
    kept = [line for line in lines if not startup.NOISE.match(line) and not startup.NO_GPU_NOISE.match(line)]
    assert kept == lines[3:]


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A trainer command as the README runs it: nothing set but PATH (no GPU mask, no log level)."""
    import os

    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=REPO, env={**base, **(env or {})}, capture_output=True, text=True
    )


@pytest.mark.slow
def test_the_commands_print_no_start_up_noise_and_say_once_what_they_did(tmp_path: Path) -> None:
    out = str(tmp_path / "data")
    args = ("trainer.create_tfrecords", "--source", "synthetic", "--count", "12", "--output", out)
    first = _run(*args, "--image-size", "32")
    assert first.returncode == 0, first.stderr
    assert not any(word in first.stderr for word in NOISE_WORDS), first.stderr
    assert first.stderr.count(f"wrote {out}: train") == 1 and "nothing written" not in first.stderr
    again = _run(*args, "--image-size", "32")
    assert "already holds this data set (same images and settings): nothing written" in again.stderr
    assert "wrote " not in again.stderr and "replica" not in again.stderr.replace("nothing written", "")
    other = _run(*args, "--image-size", "48")
    assert other.returncode == 1
    (line,) = [line for line in other.stderr.splitlines() if line.startswith("error:")]
    assert "image_size 32 there, 48 now" in line, other.stderr
    assert not any(word in other.stderr for word in NOISE_WORDS), other.stderr
    # A real error still reaches the terminal, start-up noise or not.
    missing = _run("trainer.predict", "--model-dir", str(tmp_path / "none"), str(tmp_path))
    assert missing.returncode == 1 and "no SavedModel there" in missing.stderr
    assert not any(word in missing.stderr for word in NOISE_WORDS), missing.stderr


def test_a_decode_error_is_one_plain_line() -> None:
    internals = (
        "{{function_node __wrapped__DecodeImage_device_/job:localhost/replica:0/task:0/device:CPU:0}} "
        "Unknown image file format. One of JPEG, PNG, GIF, BMP required. [Op:DecodeImage] name: "
    )
    assert predict.decode_reason(internals) == "its bytes are in no image format"
    cut = "{{function_node x}} jpeg::Uncompress failed. Invalid JPEG data or crop window. [Op:DecodeImage]"
    assert predict.decode_reason(cut) == "jpeg::Uncompress failed. Invalid JPEG data or crop window"


def test_a_non_image_file_is_named_in_one_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(predict.TrainerError) as raised:
        predict.read_image(str(text))
    assert str(raised.value) == f"{text}: not a JPEG or PNG image (its bytes are in no image format)"


def test_top_k_above_the_class_count_says_so() -> None:
    assert predict.top_k_note(2, ["cats", "dogs"]) is None
    note = predict.top_k_note(5, ["cats", "dogs"])
    assert note == "--top-k 5: the model has 2 classes (cats, dogs); showing all 2"


@pytest.mark.parametrize("size", ["0", "16"])
def test_an_image_size_too_small_is_refused_without_suggesting_data_at_that_size(
    size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42: `--image-size 0` suggested recreating the data at size 0."""
    with pytest.raises(SystemExit):
        task.parse_args(["--data-dir", "d", "--model-dir", "m", "--image-size", size])
    error = capsys.readouterr().err
    assert f"--image-size {size} is too small; the backbones need at least 32" in error
    assert "create_tfrecords" not in error
