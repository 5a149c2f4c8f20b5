"""The serving package on its own: an image of its own (hadolint, the trainer's TensorFlow base, pinned
requirements), no import of infra or trainer, and Google's prebuilt prediction container named nowhere."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from infra.components.dockerfile import BASE_IMAGE

REPO = Path(__file__).resolve().parents[2]
SERVING = REPO / "serving"
HADOLINT = Path(sys.executable).parent / "hadolint"


def test_hadolint_passes_the_serving_dockerfile() -> None:
    result = subprocess.run([str(HADOLINT), str(SERVING / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_the_server_on_the_trainers_tensorflow_as_a_non_root_user() -> None:
    text = (SERVING / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", text, re.M)
    assert base.split("@")[0] == BASE_IMAGE  # one TensorFlow trains and serves (digest pins may follow)
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["python", "-m", "serving"]' in text
    assert re.search(r"^EXPOSE 8080$", text, re.M)


def test_requirements_are_the_pinned_versions_and_bring_no_tensorflow() -> None:
    lines = [ln for ln in (SERVING / "requirements.txt").read_text().splitlines() if ln and ln[0] != "#"]
    pins = [ln.split()[0] for ln in lines if "==" in ln]
    assert {p.split("==")[0] for p in pins} >= {"starlette", "uvicorn"}
    constraints = set((REPO / "constraints.txt").read_text().lower().split())
    assert all(p.lower() in constraints for p in pins), (
        "serving/requirements.txt disagrees with constraints.txt"
    )
    assert not [p for p in pins if p.lower().startswith(("tensorflow==", "tf-nightly"))]


def test_packages_install_only_from_the_hashed_lock() -> None:
    """pip gets the lock (`make lock`; tests/ci/test_locks.py checks it), never the unhashed requirements."""
    text = (SERVING / "Dockerfile").read_text()
    installs = re.findall(r"pip install ([^&\n]*)", text)
    assert installs == ["--no-cache-dir --require-hashes -r /app/serving/requirements.lock \\"], installs
    assert "COPY requirements.lock /app/serving/requirements.lock" in text


def test_serving_imports_nothing_of_infra_or_trainer() -> None:
    """Its image holds serving/ alone; infra reads serving's facts, never the other way round."""
    found = []
    for path in sorted(SERVING.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("infra", "trainer")]
    assert found == []


def test_no_code_names_googles_prebuilt_prediction_container() -> None:
    pattern = "vertex-ai/prediction/tf2-"
    code = [
        p for d in ("infra", "serving", "trainer") for p in (REPO / d).rglob("*") if p.suffix in (".py", "")
    ]
    assert [str(p) for p in code if p.is_file() and pattern in p.read_text(errors="ignore")] == []
