"""A prediction server started on this machine and talked to as Vertex talks to it: the local batch job,
`make serve-local`'s request line, the tests and the benchmark use it. Standard library only."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from serving import settings

LOOPBACK = "127.0.0.1"


class ServerError(RuntimeError):
    """The server did not start, or a request failed as a whole; the message says why."""


def request_body(images: Sequence[bytes]) -> bytes:
    """The predict route's body for these encoded images."""
    instances = [{"image_bytes": {"b64": base64.b64encode(image).decode("ascii")}} for image in images]
    return json.dumps({"instances": instances}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def server_env(model_uri: str, port: int, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment Vertex gives the container, on this machine (the server's default routes)."""
    env = {k: v for k, v in base.items() if not k.startswith("AIP_")}
    env.update({settings.STORAGE_URI: model_uri, settings.PORT: str(port)})
    return env


class LocalServer:
    """`python -m serving` on a free loopback port for `model_uri`, started at once; `with` waits until it
    is healthy (at once when it already is) and stops it with SIGTERM on the way out."""

    def __init__(self, model_uri: str, *, start_timeout: float = 300, python: str = sys.executable) -> None:
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self._start_timeout = start_timeout
        # The repository root first on the path: the server runs from this checkout, as the image runs it.
        root = str(Path(__file__).resolve().parents[1])
        env = server_env(model_uri, self.port)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        # The server's log goes to a file, read when it fails to start: a pipe nobody reads could fill up.
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115  (closed by stop())
        self.process = subprocess.Popen(
            [python, "-m", "serving", "--host", LOOPBACK], env=env, stdout=self.log, stderr=subprocess.STDOUT
        )

    def __enter__(self) -> LocalServer:
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def health(self) -> int | None:
        """The health route's status, or None while nothing listens."""
        try:
            with urllib.request.urlopen(self.url + settings.DEFAULT_HEALTH_ROUTE, timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(f"the prediction server stopped: {self._last_error()}")
            if self.health() == 200:
                return
            time.sleep(0.1)
        raise ServerError(f"the prediction server was not healthy within {self._start_timeout:.0f} s")

    def predict(self, images: Sequence[bytes]) -> list[dict[str, object]]:
        """The server's answers for these images, in order; ServerError when the request fails whole."""
        return self.post(request_body(images))

    def post(self, body: bytes) -> list[dict[str, object]]:
        request = urllib.request.Request(
            self.url + settings.DEFAULT_PREDICT_ROUTE, data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                predictions: list[dict[str, object]] = json.loads(response.read())["predictions"]
                return predictions
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError, KeyError, TypeError):
                detail = json.loads(detail)["error"]
            raise ServerError(f"HTTP {exc.code}: {detail}") from exc

    def stop(self) -> int:
        """SIGTERM, then the exit code (SIGKILL after 30 s)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return int(self.process.returncode)

    def output(self) -> str:
        """What the server has logged so far ("" once stopped)."""
        if self.log.closed:
            return ""
        self.log.seek(0)
        return self.log.read()

    def _last_error(self) -> str:
        lines = [line.strip() for line in self.output().splitlines() if line.strip()]
        errors = [line for line in lines if " ERROR " in line or line.startswith("error:")]
        return (errors or lines or ["no output"])[-1]
