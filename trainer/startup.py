"""TensorFlow's start-up lines kept out of the trainer's commands (`python -m trainer.task`, ...).

TensorFlow's C++ side writes its start-up lines to file descriptor 2 before any setting reaches it: absl's
"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR", info lines
(`I0000 ... cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.`, oneDNN's
notice) and, on a machine without a GPU, the CUDA probe's `E0000 ... failed call to cuInit: ... (303)`.
TF_CPP_MIN_LOG_LEVEL=3 would hide the probe's error and every real error with it. So while TensorFlow loads
and looks for GPUs, the command's stderr goes to a file; then what it wrote is passed on without those lines.
Every other line (a real error, a warning, a traceback) is passed on, in order; on a machine with a GPU the
CUDA lines are kept as well.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import tempfile

# absl's notice before its log is set up, and glog-style info lines (I<mmdd> <time> <thread> <file>:<line>]).
NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I[0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_.]+:[0-9]+\] .*"
    # the second line of cpu_feature_guard's info message
    r"|To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.)$"
)
# What a machine without a GPU (or without its driver) logs as errors while TensorFlow probes for one.
NO_GPU_NOISE = re.compile(
    r"^E[0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_.]+:[0-9]+\] "
    r"(failed call to cuInit|Unable to register cu(DNN|FFT|BLAS) factory).*$"
)

_held: tuple[int, object] | None = None  # (the real stderr's duplicate, the file stderr goes to meanwhile)


def hold() -> None:
    """Send file descriptor 2 to a file until release() (at exit at the latest)."""
    global _held
    if _held is not None:
        return
    sys.stderr.flush()
    spool = tempfile.TemporaryFile()  # noqa: SIM115  open until release(), across calls
    real = os.dup(2)
    os.dup2(spool.fileno(), 2)
    _held = (real, spool)
    atexit.register(release, gpus_found=True)


def release(gpus_found: bool) -> None:
    """Put stderr back and pass on what was written meanwhile, without the start-up noise (the CUDA probe's
    errors too when no GPU was found)."""
    global _held
    if _held is None:
        return
    real, spool = _held
    _held = None
    sys.stderr.flush()
    os.dup2(real, 2)
    os.close(real)
    spool.seek(0)  # type: ignore[attr-defined]
    kept = [
        line
        for line in spool.read().decode(errors="replace").splitlines(keepends=True)  # type: ignore[attr-defined]
        if not NOISE.match(line.rstrip("\n")) and (gpus_found or not NO_GPU_NOISE.match(line.rstrip("\n")))
    ]
    spool.close()  # type: ignore[attr-defined]
    if kept:
        os.write(2, "".join(kept).encode())


def quiet_start() -> int:
    """TensorFlow loaded and its devices probed with the noise held back; how many GPUs it found."""
    import tensorflow as tf

    gpus = len(tf.config.list_physical_devices("GPU"))
    release(gpus_found=gpus > 0)
    return gpus
