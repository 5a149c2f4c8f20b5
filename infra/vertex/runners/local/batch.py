"""A batch prediction on this machine as Vertex runs one with the stack's serving image, run as the one
replica of a local CustomJob (LocalBatchRunner): TensorFlow runs in the prediction server's process only."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from serving.client import LocalServer, ServerError

# The names Google's samples read for a TensorFlow-serving model (vertex-ai-samples notebooks/official/custom/
# sdk-custom-image-classification-batch.ipynb, "a file named prediction.results-xxxx-of-xxxx"; read
# 2026-11-27); the errors file holds the instances whose request failed.
RESULTS_FILE = "prediction.results-00000-of-00001"
ERRORS_FILE = "prediction.errors_stats-00000-of-00001"
# Instances per request (ManualBatchTuningParameters.batch_size, "The default value is 64"); a request that
# fails fails every instance in it. An image the model cannot read is answered alone, with its `error`
# (serving/model.py), so it fails nothing else.
BATCH_SIZE = 64


def batches(path: str, size: int) -> Iterator[list[dict[str, Any]]]:
    """The instances of a JSONL file, `size` at a time."""
    with open(path) as lines:
        instances = (json.loads(line) for line in lines if line.strip())
        while batch := list(itertools.islice(instances, size)):
            yield batch


def predict_all(server: LocalServer, out: Path, instances_file: str, key_field: str) -> int:
    """Every instance through the server, request by request; the exit code (1: none was predicted)."""
    succeeded = failed = 0
    # Lines: {"key": ..., "prediction": ...}, the instance left out; a failed instance: its key and an
    # `error` holding a google.rpc.Status' `code` and `message` (aiplatform_v1
    # BatchPredictionJob.InstanceConfig.key_field and OutputConfig.gcs_destination, read 2026-11-27).
    with open(out / RESULTS_FILE, "w") as results, open(out / ERRORS_FILE, "w") as errors:
        for batch in batches(instances_file, BATCH_SIZE):
            keys = [instance.get(key_field) for instance in batch]
            # Without the key field (InstanceConfig.key_field, "not included in the transformed instances that
            # is sent to the Model").
            sent = [{name: value for name, value in i.items() if name != key_field} for i in batch]
            body = json.dumps({"instances": sent}).encode()
            try:
                answers = server.post(body)
            except ServerError as exc:
                # 3: INVALID_ARGUMENT (google.rpc.Code), what a refused request's instances get.
                message = str(exc).splitlines()[0]
                errors.writelines(
                    json.dumps({"key": key, "error": {"code": 3, "message": message}}) + "\n" for key in keys
                )
                failed += len(batch)
            else:
                results.writelines(
                    json.dumps({"key": key, "prediction": p}) + "\n"
                    for key, p in zip(keys, answers, strict=True)
                )
                succeeded += len(batch)
            results.flush()
            errors.flush()
            print(f"{succeeded + failed} instances done ({failed} failed)", flush=True)
    if not succeeded:
        print(f"no instance was predicted: {failed} failed; see {out / ERRORS_FILE}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    predictions_dir, model_dir, instances_file, key_field = argv
    out = Path(predictions_dir)
    out.mkdir(parents=True, exist_ok=True)
    server = LocalServer(model_dir)
    try:
        server.wait_healthy()
    except ServerError as exc:
        server.stop()
        print(f"the prediction server did not start on {model_dir}: {exc}", file=sys.stderr)
        return 1
    with server:
        return predict_all(server, out, instances_file, key_field)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
