"""ImageNet weights that cannot be fetched (the default --weights imagenet, no network) end in one message
naming `--weights none` and Keras' weights cache, not a traceback."""

from __future__ import annotations

import urllib.error
from pathlib import Path

from tests.trainer.helpers import make_synthetic, run, task_command, trainer_env
from trainer import backbones

URL = (
    "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
    "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5"
)


def test_offline_weights_end_in_one_message(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_synthetic(data, count=24)
    home = tmp_path / "home"
    home.mkdir()
    # The real download code against a proxy that refuses connections: what a machine without network sees,
    # at once (urllib reads the proxy from the environment). An empty HOME: no weights cached there.
    proxy = "http://127.0.0.1:9"
    env = trainer_env(HOME=str(home), https_proxy=proxy, HTTPS_PROXY=proxy, no_proxy="", NO_PROXY="")
    cmd = [c for c in task_command(data, tmp_path / "model") if c not in ("--weights", "none")]
    done = run(cmd, env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: cannot download the ImageNet weights of densenet121 (")
    assert "--weights none" in error
    cached = home / ".keras" / "models" / "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5"
    assert f"save {URL} as {cached} (Keras' weights cache)" in error
    assert not (tmp_path / "model").exists()


def test_only_download_failures_become_the_message() -> None:
    failure = Exception(f"URL fetch failure on {URL}: None -- [Errno -2] Name or service not known")
    assert backbones.is_download_failure(failure)
    assert backbones.is_download_failure(urllib.error.URLError("timed out"))
    assert backbones.is_download_failure(TimeoutError())
    assert not backbones.is_download_failure(ValueError("input_shape must be at least 32"))
    message = backbones.weights_unreachable("densenet121", str(failure))
    assert "([Errno -2] Name or service not known)" in message and message.count(URL) == 1
