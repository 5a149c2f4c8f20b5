"""`make serve-local` (python -m infra.local_runs serve): the curl line it prints works as printed, in a shell
at the project root, once the server says it is serving."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from serving import client

REPO = Path(__file__).resolve().parents[2]


def test_the_printed_curl_line_answers_as_printed(trained: dict) -> None:
    assert trained["rc"] == 0, trained["log"][-3000:]
    port = client.free_port()
    cmd = [sys.executable, "-m", "infra.local_runs", "serve", "--model-dir", str(trained["model_dir"])]
    process = subprocess.Popen(
        [*cmd, "--port", str(port)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 300
        # The server's own line once the model is loaded: "model loaded in 3.1 s (classes: ...); serving".
        while time.monotonic() < deadline and "); serving" not in (lines[-1] if lines else ""):
            lines.append(process.stdout.readline())
            assert lines[-1] or process.poll() is None, "".join(lines)
        printed = "".join(lines)
        assert f"on http://127.0.0.1:{port} (Ctrl-C stops it)" in printed
        (curl,) = [line.strip() for line in lines if line.strip().startswith("curl -s -H")]
        done = subprocess.run(["bash", "-c", curl], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        answers = json.loads(done.stdout)["predictions"]
        assert len(answers) == 2
        assert all(a["error"] == "" and sorted(a["classes"]) == ["blue", "green", "red"] for a in answers)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
