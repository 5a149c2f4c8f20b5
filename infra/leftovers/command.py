"""`python -m infra.leftovers --stack NAME [--json] [--cancel] [--all-regions]`: list what of the stack still
bills, one line each with its cost and the command that removes it; exit 0 (nothing bills), 1 (something
bills) or 2 (something could not be read, named). `--cancel` cancels the live jobs, `--undeploy` undeploys the
deployed models; each waits until they stopped and lists again; neither deletes storage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra import commands
from infra.config import REPO_ROOT, StackConfig
from infra.config.reader import ConfigError
from infra.config.stack_file import load_stack
from infra.credentials import credentials_problem
from infra.guard import live_jobs
from infra.guard.live_jobs import StackId
from infra.labels import stack_labels
from infra.leftovers import buckets, endpoints, local_jobs, monthly, vertex_jobs
from infra.leftovers.items import CANNOT_TELL, Found, exit_code, summary, table

Say = Callable[[str], None]


@dataclass
class Scan:
    """One reading of the stack's leftovers, and the live jobs `--cancel` would stop."""

    stack: str
    project: str
    regions: list[str]
    looked_at: str = ""  # where it looked, in words
    blocked: str = ""  # why nothing could be read at all (no credentials); "" when it looked
    found: Found = field(default_factory=Found)
    vertex: list[live_jobs.LiveJob] = field(default_factory=list)
    local: list[local_jobs.LocalJob] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "project": self.project,
            "regions": self.regions,
            "items": [item.as_json() for item in self.found.items],
            "cannot_tell": self.found.cannot_tell,
            "exit_code": exit_code(self.found),
        }


def pulumi_project(root: Path = REPO_ROOT) -> str:
    """The Pulumi project's name (Pulumi.yaml `name`): the `pulumi_project` label of everything it makes."""
    path = root / "Pulumi.yaml"
    try:
        name = (yaml.safe_load(path.read_text()) or {}).get("name")
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            "(Pulumi.yaml)", f"cannot read {path}: {exc}", "run from the project root"
        ) from None
    if not isinstance(name, str) or not name:
        raise ConfigError("(Pulumi.yaml)", f"{path} names no project", "give it `name: vertex-training`")
    return name


def _safely(what: str, read: Callable[[], Found]) -> Found:
    """One finder; whatever it raises becomes one named cannot_tell entry, never a traceback."""
    try:
        return read()
    except Exception as exc:
        return Found(
            cannot_tell=[f"{what} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"]
        )


def regions_of(cfg: StackConfig, every_region: bool, found: Found) -> list[str]:
    """The home region and every region the config names; with `every_region`, every Vertex AI region too."""
    named = cfg.capacity.regions(cfg.region)
    if not every_region:
        return named
    try:
        return list(dict.fromkeys([*named, *vertex_jobs.all_regions(cfg.gcp_project, cfg.region)]))
    except live_jobs.REGION_ERRORS as exc:
        first = str(exc).splitlines()[0]
        found.cannot_tell.append(
            f"every Vertex AI region (Locations API: {first}); read the config's regions only"
        )
        return named


def scan(cfg: StackConfig, project_name: str, every_region: bool) -> Scan:
    """Everything of the stack that is still there: local jobs for a local stack, else the cloud's."""
    labels = stack_labels(project_name, cfg.stack)
    labels.pop("managed-by")
    if cfg.is_local:
        result = Scan(cfg.stack, "local", ["local"], f"live local jobs under {cfg.local_dir}")
        found, result.local = local_jobs.find(cfg.local_dir, project_name, cfg.stack)
        result.found.add(found)
        return result
    result = Scan(cfg.stack, cfg.gcp_project, [], f"project {cfg.gcp_project}")
    problem = credentials_problem()
    if problem:
        result.blocked = problem
        result.found.cannot_tell.append(f"credentials: {problem}")
        return result
    result.regions = regions_of(cfg, every_region, result.found)
    result.looked_at = f"project {cfg.gcp_project}, regions {', '.join(result.regions)}"
    stack = StackId(cfg.gcp_project, project_name, cfg.stack)
    try:
        found, result.vertex = vertex_jobs.find(stack, result.regions)
    except Exception as exc:  # never a traceback: the jobs are then not known
        found = Found(cannot_tell=[f"Vertex AI jobs ({type(exc).__name__}: {exc})"])
    result.found.add(found)
    # Deployed models bill every hour: in the same regions as the jobs (a model deployed by hand included).
    result.found.add(_safely("endpoints", lambda: endpoints.find(stack, result.regions)))
    function = _function_name(project_name, cfg.stack) if cfg.kill_switch else None
    wanted_buckets = buckets.Wanted(cfg.gcp_project, cfg.region, cfg.bucket_name, labels, function)
    result.found.add(_safely("buckets", lambda: buckets.find(wanted_buckets)))
    wanted = monthly.Wanted(
        project=cfg.gcp_project,
        labels=labels,
        repository_id=_repository_id(cfg.stack),
        function=function,
        home=cfg.region,
        experiment=cfg.experiment,
    )
    # The stack makes its repository, TensorBoard, models and function in its home region; a fallback region
    # costs a few calls. Every region (--all-regions) is for jobs only: not every service is in every region.
    named = cfg.capacity.regions(cfg.region)
    result.found.add(_safely("regional resources", lambda: monthly.find(wanted, named)))
    return result


# The stack's names for its repository and function, as its components give them; imported for cloud stacks
# only, since the component modules load Pulumi (about 0.8 s).
def _repository_id(stack: str) -> str:
    from infra.components.registry import repository_id

    return repository_id(stack)


def _function_name(pulumi_project_name: str, stack: str) -> str:
    from infra.components.killswitch import guard_names

    return guard_names(pulumi_project_name, stack).function


def report(result: Scan, say: Say) -> None:
    if result.blocked:  # nothing was read: one line, not an empty table that reads as zero
        say(f"Stack {result.stack}: cannot tell what bills in {result.looked_at}: {result.blocked}.")
        return
    say(f"Leftovers of stack {result.stack} ({result.looked_at}):")
    for line in table(result.found.items) or ["nothing found"]:
        say(line)
    say(summary(result.stack, result.found))


def cancel(result: Scan, say: Say) -> None:
    """Cancel every live job found and wait until each has stopped (bounded; the wait is said)."""
    if result.vertex:
        for stopped in vertex_jobs.cancel(result.vertex, say=say):
            if stopped.final_state in (*live_jobs.LIVE_STATES, *live_jobs.STOPPING_STATES):
                say(f"still {stopped.final_state.removeprefix('JOB_STATE_')}: {stopped.job.name}")
    if result.local:
        for name, state in local_jobs.cancel(result.local, say=say).items():
            if state in local_jobs.LIVE_STATES:
                say(f"still {state.removeprefix('JOB_STATE_')}: local job {name}")
    if not (result.vertex or result.local):
        say("no live job to cancel")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m infra.leftovers", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stack", required=True, help="the stack whose leftovers to list (Pulumi.<stack>.yaml)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object: items and cannot_tell")
    parser.add_argument(
        "--cancel", action="store_true", help="cancel the live jobs found, wait until they stop, list again"
    )
    parser.add_argument(
        "--undeploy",
        action="store_true",
        help="undeploy the stack's deployed models found, wait until they are gone, list again",
    )
    parser.add_argument(
        "--all-regions",
        action="store_true",
        help="look in every Vertex AI region (jobs started by an older config), not only the config's",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, root: Path = REPO_ROOT) -> int:
    """The command; `root` holds Pulumi.yaml and the stack files (the project root)."""
    args = parse_args(argv)
    # With --json, progress goes to stderr and stdout holds the one object.
    say: Say = (lambda text: print(text, file=sys.stderr)) if args.json else print
    try:
        cfg = load_stack(args.stack, root, inputs_present=False)  # what is left, whatever became of them
        name = pulumi_project(root)
    except ConfigError as exc:
        return unknown(args, f"stack file: {exc}", f"error: {exc}")
    try:
        return run(cfg, name, args, say)
    except KeyboardInterrupt:  # Ctrl-C, often during --cancel's wait: what is known, not a traceback
        return unknown(
            args,
            "interrupted; cancels already sent still stand",
            f"interrupted: what stack {args.stack} leaves is not known; cancels already sent still stand. "
            f"Run `{commands.python_m('infra.leftovers', '--stack', args.stack)}` again to list it.",
        )
    except Exception as exc:  # a failure no finder contained: named in one line, never a traceback
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no message'}"
        return unknown(
            args,
            f"listing failed ({why})",
            f"error: listing stack {args.stack}'s leftovers failed ({why}); what it leaves is not known.",
        )


def unknown(args: argparse.Namespace, entry: str, line: str) -> int:
    """Nothing known: with --json one object whose cannot_tell says why, else `line` on stderr; exit 2."""
    if args.json:
        print(
            json.dumps({"stack": args.stack, "items": [], "cannot_tell": [entry], "exit_code": CANNOT_TELL})
        )
    else:
        print(line, file=sys.stderr)
    return CANNOT_TELL


def run(cfg: StackConfig, name: str, args: argparse.Namespace, say: Say) -> int:
    """List (and with --cancel, cancel and list again); print the report; the exit code."""
    result = scan(cfg, name, args.all_regions)
    if (args.cancel or args.undeploy) and not result.blocked:
        report(result, say)
        steps: list[tuple[str, Callable[[], None]]] = []
        if args.cancel:
            steps.append(("cancelling", lambda: cancel(result, say)))
        if args.undeploy and cfg.is_local:
            say("nothing to undeploy: the local stack deploys no model")
        elif args.undeploy:
            stack = StackId(cfg.gcp_project or "", name, cfg.stack)
            steps.append(("undeploying", lambda: endpoints.undeploy(stack, result.regions, say)))
        for step, run_step in steps:
            try:
                run_step()
            except Exception as exc:  # never a traceback: the listing after says what is still live
                say(f"{step} stopped early ({type(exc).__name__}: {exc})")
        result = scan(cfg, name, args.all_regions)
        done = [
            word for word, asked in (("cancelling", args.cancel), ("undeploying", args.undeploy)) if asked
        ]
        say(f"After {' and '.join(done)}:")
    if args.json:
        print(json.dumps(result.as_json(), indent=2, sort_keys=True))
    else:
        report(result, say)
    if args.cancel or args.undeploy:
        storage = [item for item in result.found.items if not item.live_job]
        if storage:
            say("Nothing was deleted; to remove what is left:")
            for item in storage:
                say(f"  {item.remove}")
    return exit_code(result.found)
