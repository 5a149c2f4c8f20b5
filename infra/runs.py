"""`python -m infra.runs --stack NAME`: every run of a stack from its run.json records, newest first.

One line per run (when, state, the hyperparameters that differ between runs, the validation metric, training
images/s when the trainer reports its `throughput`, duration, estimated cost, shape and region; a study with
its best trial), then how each image the runs ran was built (base images and builder by digest, when its
build recorded them), `--json` for the records themselves, and `--plot FILE.png` for each run's validation
curve from its metrics.json `history` (and its images/s per epoch). The records are read from
the stack's output root (its bucket, with the caller's credentials, or its localDir), or from `--root`.
A run directory without a readable run.json is listed as such: it never stops the listing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from infra.config.reader import ConfigError
from infra.config.stack_file import load_stack
from infra.credentials import credentials_problem
from infra.dynamic.polling import duration_text
from infra.vertex import kinds
from infra.vertex.lifecycle.output_files import join, read_text, subdirectories
from infra.vertex.lifecycle.run_record import RUN_FILE, arg_values

# Where the stack's jobs write their runs under the output root: every job kind's (infra/vertex/kinds.py).
RUN_FOLDERS = kinds.run_folders()
# Preferred validation metrics, in order: the first one a run reports is its METRIC column and its curve.
VALIDATION_METRICS = ("val_accuracy", "val_loss", "val_mae")
# Argument values that name places, not settings: they differ between runs by construction.
PATH_PREFIXES = ("gs://", "/", "./", "../", "~")


@dataclass(frozen=True)
class Run:
    """One run directory: its record, or why there is none (`problem`)."""

    run_dir: str
    record: dict[str, Any] | None
    problem: str = ""

    def as_json(self) -> dict[str, Any]:
        if self.record is None:
            return {"run_dir": self.run_dir, "problem": self.problem}
        return {**self.record, "run_dir": self.run_dir}


# The record's fields the listing reads, and the JSON types they must have (run_record.py writes them).
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "placement": (dict,),
    "metrics": (dict,),
    "attempts": (list,),
    "args": (list,),
    "trials": (list,),
    "duration_seconds": (int, float),
    "estimated_cost_usd": (int, float),
    "best_metric": (int, float),
    "state": (str,),
    "create_time": (str,),
    "start_time": (str,),
    "end_time": (str,),
    "image_sources": (dict,),
}


def read_run(run_dir: str) -> Run:
    """The run.json of one run directory; a missing or unreadable one is a Run with a `problem`."""
    try:
        text = read_text(join(run_dir, RUN_FILE))
    except Exception as exc:  # one unreadable record never stops the listing
        return Run(run_dir, None, f"run.json unreadable ({type(exc).__name__}: {exc})")
    if text is None:
        return Run(run_dir, None, "no run.json (still running, or run before run records existed)")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return Run(run_dir, None, f"run.json unreadable (not JSON: {exc})")
    if not isinstance(record, dict):
        return Run(run_dir, None, "run.json unreadable (not a JSON object)")
    wrong = [
        key
        for key, kinds in FIELD_TYPES.items()
        if record.get(key) is not None and not _is(record[key], kinds)
    ]
    if wrong:
        return Run(run_dir, None, f"run.json unreadable ({', '.join(wrong)}: not what a run record holds)")
    return Run(run_dir, record)


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def list_runs(root: str) -> list[Run]:
    """Every run under `root`'s run folders (runs/, tuning/, predictions/), newest first; runs without a
    record last."""
    dirs = [d for folder in RUN_FOLDERS for d in subdirectories(join(root, folder))]
    return newest_first(read_run(d) for d in dirs)


def _started(run: Run) -> datetime.datetime | None:
    record = run.record or {}
    for key in ("create_time", "start_time", "end_time"):
        try:
            when = datetime.datetime.fromisoformat(str(record.get(key) or ""))
        except ValueError:
            continue
        return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)
    return None


def newest_first(runs: Iterable[Run]) -> list[Run]:
    runs = list(runs)
    oldest = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    dated = sorted((r for r in runs if _started(r)), key=lambda r: _started(r) or oldest, reverse=True)
    return dated + sorted((r for r in runs if not _started(r)), key=lambda r: r.run_dir)


def setting_text(value: object) -> str:
    """A setting as written, a whole number as one (a study's batch size 8.0 is 8)."""
    if isinstance(value, bool):
        return str(value).lower()
    try:
        number = float(str(value))
    except ValueError:
        return str(value)
    return str(int(number)) if number.is_integer() and "e" not in str(value).lower() else str(value)


def run_values(record: dict[str, Any]) -> dict[str, str]:
    """The run's settings by argument name: its arguments, and for a study its best trial's parameters (what
    it tuned is not in its arguments)."""
    values = arg_values(record.get("args") or [])
    best = record.get("best_parameters") if record.get("kind") == "tuning_job" else None
    if isinstance(best, dict):
        values.update({str(name): str(value) for name, value in best.items()})
    return {name: setting_text(value) for name, value in values.items()}


def differing(runs: Sequence[Run]) -> list[str]:
    """The argument names whose values are not the same in every recorded run (paths left out)."""
    parsed = [run_values(r.record) for r in runs if r.record]
    if len(parsed) < 2:
        return []
    names = sorted({name for values in parsed for name in values})
    return [
        name
        for name in names
        if len({values.get(name) for values in parsed}) > 1
        and not any(str(values.get(name, "")).startswith(PATH_PREFIXES) for values in parsed)
    ]


def validation_metric(record: dict[str, Any]) -> tuple[str, float] | None:
    """A job's first VALIDATION_METRICS value; a study's best trial's metric."""
    if record.get("kind") == "tuning_job":
        best = record.get("best_metric")
        return (str(record.get("metric_id", "metric")), float(best)) if _number(best) else None
    metrics = record.get("metrics") or {}
    for name in VALIDATION_METRICS:
        if _number(metrics.get(name)):
            return name, float(metrics[name])
    return None


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def history(record: dict[str, Any]) -> tuple[str, list[float]] | None:
    """The per-epoch validation curve in metrics.json's `history`: `{phase: {metric: [...]}}` (phases in
    order, as the built-in trainer writes it) or `{metric: [...]}`."""
    found = (record.get("metrics") or {}).get("history")
    if not isinstance(found, dict):
        return None
    phases = list(found.values()) if all(isinstance(v, dict) for v in found.values()) else [found]
    for name in VALIDATION_METRICS:
        curve = [float(v) for phase in phases for v in phase.get(name) or [] if _number(v)]
        if curve:
            return name, curve
    return None


def images_per_second(record: dict[str, Any]) -> list[float]:
    """Training images/s per epoch, phases in order, from metrics.json's `throughput` (the built-in
    trainer's: `{phase: {images_per_second: [...], input_wait_fraction: [...]}}`); [] when it has none."""
    found = (record.get("metrics") or {}).get("throughput")
    if not isinstance(found, dict):
        return []
    phases = [phase for phase in found.values() if isinstance(phase, dict)]
    return [
        float(v) for phase in phases for v in phase.get("images_per_second") or [] if _number(v) and v > 0
    ]


def run_images_per_second(record: dict[str, Any]) -> float | None:
    """The run's training images/s over all its epochs (their harmonic mean: every epoch of a phase trains
    the same number of images)."""
    rates = images_per_second(record)
    return len(rates) / sum(1 / rate for rate in rates) if rates else None


# google-cloud-storage's own switch to an emulator (no credentials needed there).
STORAGE_EMULATOR = "STORAGE_EMULATOR_HOST"
# What a local run's shape is: the job's machine fields are not what ran it (the local runner ignores them).
LOCAL_SHAPE = "local CPU"
# The widest a line of the table may be (a common terminal); wider, the differing settings go below each row.
WIDTH = 120


def shape_text(record: dict[str, Any]) -> str:
    if record.get("runner") == "local":
        return LOCAL_SHAPE
    shape = record.get("placement") or {}
    machine = shape.get("machine_type", "?")
    # NVIDIA_TESLA_T4 as T4: the GPU's own name, which keeps the table narrow (--json has the enum).
    gpu = str(shape.get("accelerator_type") or "").removeprefix("NVIDIA_").removeprefix("TESLA_")
    gpus = f" + {shape.get('accelerator_count', 1)} x {gpu}" if gpu else ""
    strategy = shape.get("scheduling_strategy")
    spot = f" {strategy.lower()}" if strategy and strategy != "STANDARD" else ""
    return f"{machine}{gpus}{spot}"


def _when(run: Run) -> str:
    started = _started(run)
    return started.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M") if started else "?"


def _params(values: dict[str, str], names: Sequence[str]) -> list[str]:
    return [values.get(name, "-") for name in names]


def _metric_text(record: dict[str, Any]) -> str:
    if record.get("kind") == kinds.BATCH_PREDICTION_JOB.record_kind:
        stats = record.get("completion_stats") or {}
        return f"{stats.get('successful_count', 0)} classified, {stats.get('failed_count', 0)} failed"
    found = validation_metric(record)
    text = f"{found[0]} {found[1]:.4f}" if found else "-"
    if record.get("kind") == "tuning_job":
        trials = record.get("trials") or []
        best = record.get("best_trial")
        # The best trial's parameters are the study's values in the settings' columns.
        text += f" (#{best} of {len(trials)})" if best else f" ({len(trials)} trials)"
    return text


def row(run: Run, names: Sequence[str], speed: bool = False) -> list[str]:
    """One table row: WHEN, STATE, the differing arguments, METRIC, (IMAGES/S, with `speed`), DURATION,
    COST, SHAPE, REGION, RUN, and why a run has no record (empty for one that has)."""
    folder = "/".join(run.run_dir.rstrip("/").split("/")[-2:])
    if run.record is None:
        state = "NO RECORD" if "no run.json" in run.problem else "UNREADABLE"
        return ["?", state, *["-"] * (len(names) + speed), "-", "-", "-", "-", "-", folder, run.problem]
    record = run.record
    cost = record.get("estimated_cost_usd")
    local = record.get("runner") == "local"
    region = "local" if local else (record.get("placement") or {}).get("region") or record.get("region", "?")
    return [
        _when(run),
        str(record.get("state", "?")).removeprefix("JOB_STATE_"),
        *_params(run_values(record), names),
        _metric_text(record),
        *([_speed_text(record)] if speed else []),
        duration_text(float(record.get("duration_seconds") or 0)),
        (f"<= USD {cost:.2f}" if record.get("estimated_cost_bound") else f"USD {cost:.2f}")
        if _number(cost)
        else "-",
        shape_text(record),
        region,
        folder,
        "",
    ]


def image_lines(runs: Sequence[Run]) -> list[str]:
    """Each image the runs ran whose build recorded how it was made: its base images and builder, by digest
    (run.json `image_sources`), once per image."""
    made: dict[str, dict[str, Any]] = {}
    for run in runs:
        record = run.record or {}
        image, sources = record.get("image"), record.get("image_sources")
        if image and isinstance(sources, dict):
            made.setdefault(str(image), sources)
    return [
        f"{image}: FROM {', '.join(sources.get('base_images') or []) or '(not recorded)'}; "
        f"built by {sources.get('builder_image') or '(not recorded)'}"
        for image, sources in made.items()
    ]


def _speed_text(record: dict[str, Any]) -> str:
    rate = run_images_per_second(record)
    return f"{rate:.1f}" if rate is not None else "-"


def table(runs: Sequence[Run], width: int = WIDTH) -> list[str]:
    """The runs as aligned text lines, a header first; IMAGES/S when a run reports its throughput; COST and
    REGION only when a run has one (not every run local). Wider than `width`, the differing settings go on a
    line of their own under each run."""
    names = differing(runs)
    speed = any(images_per_second(run.record) for run in runs if run.record)
    header = [
        *("WHEN (UTC)", "STATE", *names, "METRIC", *(["IMAGES/S"] if speed else [])),
        *("DURATION", "COST", "SHAPE", "REGION", "RUN", ""),
    ]
    rows = [header, *(row(run, names, speed) for run in runs)]
    empty = {"COST": "-", "REGION": "local"}
    kept = [
        i
        for i, name in enumerate(header)
        if name not in empty or any(r[i] not in (empty[name], "-") for r in rows[1:])
    ]
    lines = _aligned([[r[i] for i in kept] for r in rows])
    # Measured without the last cell: why a run has no record, as long as it needs to be.
    if max(map(len, _aligned([[r[i] for i in kept[:-1]] for r in rows]))) <= width:
        return lines
    # Too wide: each run's folder and settings go on a line of their own under it.
    below = set(range(2, 2 + len(names))) | {len(header) - 2}
    lines = _aligned([[r[i] for i in kept if i not in below] for r in rows])
    wrapped = [lines[0]]
    for line, cells in zip(lines[1:], rows[1:], strict=True):
        chosen = [f"{n}={v}" for n, v in zip(names, cells[2 : 2 + len(names)], strict=True) if v != "-"]
        text = "  ".join([cells[-2], " ".join(chosen)]).rstrip()
        wrapped += [line, *textwrap.wrap(text, width, initial_indent="    ", subsequent_indent="      ")]
    return wrapped


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def plot(runs: Sequence[Run], path: str) -> int:
    """Each run's validation curve into a PNG at `path`, labelled by what differs; returns how many."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display here
    from matplotlib import pyplot

    names = differing(runs)
    histories = [(run, history(run.record)) for run in runs if run.record]
    curves = [(run, found) for run, found in histories if found]
    speeds = [(run, images_per_second(run.record)) for run in runs if run.record]
    speeds = [(run, rates) for run, rates in speeds if rates]
    if speeds:  # a second panel: training images/s per epoch
        figure, (axes, speed_axes) = pyplot.subplots(2, 1, figsize=(8, 8), sharex=True)
        _speed_panel(speed_axes, speeds, names)
    else:
        figure, axes = pyplot.subplots(figsize=(8, 5))
    for run, (metric, values) in curves:
        axes.plot(range(1, len(values) + 1), values, marker="o", label=f"{_label(run, names)} ({metric})")
    values_all = [v for _run, (_metric, values) in curves for v in values]
    if values_all and min(values_all) > 0 and max(values_all) / min(values_all) > 100:
        axes.set_yscale("log")  # losses that fall by orders of magnitude stay readable side by side
    axes.set_xlabel("epoch")
    axes.set_ylabel(" / ".join(sorted({found[0] for _run, found in curves})) or "validation metric")
    axes.set_title("Validation curve per run")
    if curves:
        axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return len(curves)


def _label(run: Run, names: Sequence[str]) -> str:
    values_by_name = run_values(run.record) if run.record else {}
    return " ".join(f"{n}={values_by_name.get(n, '-')}" for n in names) or run.run_dir.rsplit("/", 1)[-1]


def _speed_panel(axes: Any, speeds: Sequence[tuple[Run, list[float]]], names: Sequence[str]) -> None:
    for run, rates in speeds:
        axes.plot(range(1, len(rates) + 1), rates, marker="s", label=_label(run, names))
    axes.set_xlabel("epoch")
    axes.set_ylabel("training images/s")
    axes.set_title("Training throughput per run")
    axes.legend()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m infra.runs", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True, help="the stack whose runs to list (Pulumi.<stack>.yaml)")
    parser.add_argument("--root", help="DIR or gs://BUCKET/PREFIX (default: the stack's localDir or bucket)")
    parser.add_argument("--json", action="store_true", help="print the run records as a JSON list")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="write each run's validation curve (and training images/s, when runs report it) to a PNG",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        root = args.root or load_stack(args.stack, inputs_present=False).output_root
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = credentials_problem(STORAGE_EMULATOR) if root.startswith("gs://") else None
    if problem:
        print(f"error: cannot list the runs under {root}: {problem}", file=sys.stderr)
        return 1
    try:
        runs = list_runs(root)
    except Exception as exc:  # the folder itself cannot be listed: say which and how to fix it
        fix = (
            "check the bucket name (--root) and sign in with `gcloud auth application-default login`"
            if root.startswith("gs://")
            else "check the directory (--root)"
        )
        print(
            f"error: cannot list the runs under {root}: {type(exc).__name__}: "
            f"{str(exc).rstrip('.')}. Fix: {fix}",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps([run.as_json() for run in runs], indent=2, sort_keys=True, default=str))
    else:
        print(f"Stack {args.stack}: {len(runs)} run(s) under {root}, newest first")
        for line in table(runs) if runs else []:
            print(line)
        if images := image_lines(runs):
            print("Images, as their builds resolved them:")
            for line in images:
                print(f"  {line}")
    if args.plot:
        drawn = plot(runs, args.plot)
        print(f"wrote {args.plot}: {drawn} curve(s) (runs with a metrics.json history)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
