"""A batch prediction on this machine, as Vertex runs one for a TensorFlow model in the prebuilt container:
the job's JSONL instances, `key_field` taken out of each, sent in batches to the SavedModel's
serving_default, and the answers written where and as Vertex writes them.

- Files: `prediction.results-00000-of-00001` and, for instances whose request failed,
  `prediction.errors_stats-00000-of-00001` in the job's prediction directory: the names Google's samples
  read for a TensorFlow-serving model (vertex-ai-samples notebooks/official/custom/
  sdk-custom-image-classification-batch.ipynb, "a file named prediction.results-xxxx-of-xxxx"; read
  2026-11-27).
- Lines: with `key_field` set, {"key": ..., "prediction": ...}, the instance left out; a failed instance:
  its key and an `error` holding a google.rpc.Status' `code` and `message` (aiplatform_v1
  BatchPredictionJob.InstanceConfig.key_field and OutputConfig.gcs_destination, read 2026-11-27).
- Requests: `batch_size` instances each, 64 by default (ManualBatchTuningParameters.batch_size, "The
  default value is 64"); a request that fails fails every instance in it, as a TF Serving request does.
- Predictions in TF Serving's row format: an output per field when the signature has several, the bare
  value when it has one; {"b64": ...} in an instance becomes the input string's bytes
  (tensorflow.org/tfx/serving/api_rest, "Request format" and "Response format", read 2026-11-27).

Run as the one replica of a local CustomJob (LocalBatchRunner), so the LocalRunner's records, supervisor,
cancel and delete serve it. `infra` never imports `trainer`: the model is loaded as the container loads it.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULTS_FILE = "prediction.results-00000-of-00001"
ERRORS_FILE = "prediction.errors_stats-00000-of-00001"
BATCH_SIZE = 64


def read_instances(path: str) -> Iterator[dict[str, Any]]:
    """The instances of a JSONL file, one at a time."""
    with open(path) as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def batches(instances: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for instance in instances:
        batch.append(instance)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def input_value(value: Any) -> Any:
    """TF Serving's JSON for a string input: {"b64": ...} is bytes."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    return value


def json_value(value: Any) -> Any:
    """A numpy output value as TF Serving writes it: strings as text, arrays as lists."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "tolist"):
        return json_value(value.tolist())
    if isinstance(value, list):
        return [json_value(v) for v in value]
    return value


def rows(outputs: dict[str, Any]) -> list[Any]:
    """Row format: one prediction per instance, an object of outputs or the one output's value."""
    arrays = {name: tensor.numpy() for name, tensor in outputs.items()}
    count = len(next(iter(arrays.values())))
    if len(arrays) == 1:
        (only,) = arrays.values()
        return [json_value(only[i]) for i in range(count)]
    return [{name: json_value(array[i]) for name, array in sorted(arrays.items())} for i in range(count)]


def predict(serve: Any, batch: list[dict[str, Any]], key_field: str) -> list[Any]:
    """The row-format predictions of one request: the instances without their key, input by input."""
    import tensorflow as tf

    names = [name for name in batch[0] if name != key_field]
    inputs = {name: tf.constant([input_value(i[name]) for i in batch]) for name in names}
    return rows(serve(**inputs))


def main(argv: list[str]) -> int:
    predictions_dir, model_dir, instances_file, key_field = argv
    import tensorflow as tf

    out = Path(predictions_dir)
    out.mkdir(parents=True, exist_ok=True)
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    succeeded = failed = 0
    with open(out / RESULTS_FILE, "w") as results, open(out / ERRORS_FILE, "w") as errors:
        for batch in batches(read_instances(instances_file), BATCH_SIZE):
            keys = [instance.get(key_field) for instance in batch]
            try:
                answers = predict(serve, batch, key_field)
            except (tf.errors.OpError, ValueError, TypeError, KeyError) as exc:
                code = getattr(exc, "error_code", 3)  # 3: INVALID_ARGUMENT, what TF Serving answers bad input
                message = getattr(exc, "message", str(exc)).strip().splitlines()[0]
                errors.writelines(
                    json.dumps({"key": key, "error": {"code": code, "message": message}}) + "\n"
                    for key in keys
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
