"""A batch prediction on this machine: the trainer's predict command over the job's file list, its JSON lines
written where and as Vertex writes a batch prediction's output (aiplatform_v1 OutputConfig.gcs_destination:
`predictions_0001.<extension>` and, for failed instances, `errors_0001.<extension>` in the job's prediction
directory).

Run as the one replica of a local CustomJob (LocalBatchRunner), so the LocalRunner's records, supervisor,
cancel and delete serve it. `infra` never imports `trainer`: the trainer is a command here, as on Vertex.
Each line of predictions_0001.jsonl is `trainer.predict --json`'s object for one image: `image` and its
`predictions` (every class with its probability, most probable first).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PREDICTIONS_FILE = "predictions_0001.jsonl"
ERRORS_FILE = "errors_0001.jsonl"
# Images per trainer.predict process: keeps command lines short for long file lists.
CHUNK = 500
ALL_CLASSES = str(2**31 - 1)  # --top-k: every class (trainer.predict shows at most all)


def read_file_list(path: str) -> list[str]:
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]


def predict_chunk(model_dir: str, images: list[str]) -> tuple[list[str], list[str]]:
    """(JSON lines, error lines) of trainer.predict over these images; a model it cannot load is an error
    for every image of the chunk."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.predict",
            "--model-dir",
            model_dir,
            "--json",
            "--top-k",
            ALL_CLASSES,
            *images,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    errors = [line.removeprefix("error: ") for line in done.stderr.splitlines() if line.startswith("error: ")]
    if done.returncode and not lines and not errors:
        errors = [done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"]
    return lines, errors


def main(argv: list[str]) -> int:
    predictions_dir, model_dir, file_list = argv
    out = Path(predictions_dir)
    out.mkdir(parents=True, exist_ok=True)
    images = read_file_list(file_list)
    succeeded = failed = 0
    with open(out / PREDICTIONS_FILE, "w") as predictions, open(out / ERRORS_FILE, "w") as errors:
        for start in range(0, len(images), CHUNK):
            lines, problems = predict_chunk(model_dir, images[start : start + CHUNK])
            predictions.writelines(line + "\n" for line in lines)
            errors.writelines(json.dumps({"error": {"message": p}}) + "\n" for p in problems)
            predictions.flush()
            errors.flush()
            succeeded, failed = succeeded + len(lines), failed + len(problems)
            print(f"{succeeded + failed} of {len(images)} images done ({failed} failed)", flush=True)
    if not succeeded:
        print(f"no image was classified: {failed} failed; see {out / ERRORS_FILE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
