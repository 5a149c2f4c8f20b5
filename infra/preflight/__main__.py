"""`python -m infra.preflight --stack NAME [--json]`, from the project root: exit 0 ready, 1 not."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.config import ConfigError
from infra.config.reader import problems
from infra.config.stack_file import load_stack
from infra.preflight.caller import credentials
from infra.preflight.results import Result, as_json, exit_code, missing, text
from infra.preflight.run import run


def _config_lines(findings: tuple[ConfigError, ...]) -> list[Result]:
    return [missing("stack configuration", f"{e.name}: {e.problem}", e.fix) for e in findings]


def check_stack(root: Path, stack: str) -> tuple[str, list[Result]]:
    """The stack's project and every check's result. A stack file that cannot be used still gets the
    credentials line (who you are is known without it), then one line per configuration problem."""
    try:
        cfg = load_stack(stack, root)
    except ConfigError as exc:
        found, _caller = credentials("<your-project-id>")
        return "not read", [found, *_config_lines(problems(exc))]
    return cfg.gcp_project, run(cfg)


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.preflight",
        description="Read-only checks of everything a stack's `pulumi up` needs in Google Cloud.",
    )
    parser.add_argument("--stack", required=True, help="the stack whose Pulumi.<stack>.yaml to check")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args(argv)
    project, results = check_stack(root or Path.cwd(), args.stack)
    print((as_json if args.json else text)(args.stack, project, results))
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
