"""`python -m infra.plan --stack NAME [--json]`, from the project root: exit 0 for a valid stack, 1 if not."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.config import ConfigError, example_id_error, shapes
from infra.config.reader import problems
from infra.config.stack_file import load_stack, stack_values
from infra.plan.jobs import planned_jobs
from infra.plan.program import declared, project_name
from infra.plan.report import Plan, as_json, as_text, errors_json, errors_text
from infra.plan.serving import planned_deployments
from infra.vertex.cost.pricing import Catalog


def make_plan(stack: str, root: Path) -> Plan:
    """The stack's plan: its file read by the program's own loader, the program run as a first preview."""
    from infra.stack import build, image_uris

    Catalog.offline()  # prices from the cited table: the plan reads nothing from Google
    cfg = load_stack(stack, root, allow_example_ids=True)
    resources = declared(lambda: build(cfg), project_name(root), stack)
    example = None if cfg.is_local else example_id_error(stack_values(stack, root), stack)
    notes = (
        (f"{example.name}: {example.problem}; `pulumi up` stops here.\n  Fix: {example.fix}",)
        if example
        else ()
    ) + tuple(shapes.config_warnings(cfg))
    # Resources by type and name (the engine registers them in whatever order their inputs resolve); jobs in
    # the order registered, which follows their dependencies: the order they run in.
    ordered = tuple(sorted(resources, key=lambda r: (r.type, r.name)))
    images = tuple(image_uris(cfg).items())
    serving = tuple(planned_deployments(resources))
    jobs = tuple(planned_jobs(resources))
    return Plan(stack, cfg.gcp_project, ordered, jobs, notes, images, serving)


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.plan",
        description="What `pulumi up` would create and what its jobs may cost, offline (no credentials).",
    )
    parser.add_argument("--stack", required=True, help="the stack whose Pulumi.<stack>.yaml to plan")
    parser.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    args = parser.parse_args(argv)
    try:
        plan = make_plan(args.stack, root or Path.cwd())
    except ConfigError as error:
        found = problems(error)
        print((errors_json if args.json else errors_text)(args.stack, found))
        return 1
    print((as_json if args.json else as_text)(plan))
    return 1 if plan.failures else 0


if __name__ == "__main__":
    sys.exit(main())
