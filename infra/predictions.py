"""`python -m infra.predictions DIR`: a batch prediction's output as one table, or CSV: image, class,
probability (the most probable class; `--all-classes`: one row per class), or the image's error.

DIR is the job's `predictions_dir` output, or its `output_dir` (its newest prediction-* folder is read), on
Cloud Storage (the caller's credentials) or, for runner local, on this machine.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterable, Sequence

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions

from infra.vertex.batch import results

COLUMNS = ("image", "class", "probability", "error")


def table_rows(rows: Iterable[results.Row], all_classes: bool) -> list[tuple[str, str, str, str]]:
    out = []
    for row in rows:
        if row.error:
            out.append((row.image, "", "", row.error))
            continue
        for name, probability in row.classes if all_classes else row.classes[:1]:
            out.append((row.image, name, f"{probability:.4f}", ""))
    return out


def text_table(rows: Sequence[tuple[str, ...]]) -> str:
    header = COLUMNS if any(r[3] for r in rows) else COLUMNS[:3]
    cells = [tuple(r[: len(header)]) for r in rows]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(header)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() for cell in cells]
    return "\n".join(lines)


def print_rows(rows: Sequence[results.Row], as_csv: bool, all_classes: bool, where: str) -> int:
    """The table (or CSV) on stdout, a count on stderr; returns how many images failed."""
    table = table_rows(rows, all_classes)
    if as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(table)
    else:
        print(text_table(table))
    failed = sum(1 for row in rows if row.error)
    print(f"{len(rows) - failed} images classified, {failed} failed ({where})", file=sys.stderr)
    return failed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m infra.predictions", description=__doc__)
    p.add_argument("dir", metavar="DIR", help="predictions_dir (or output_dir) of a batch prediction")
    p.add_argument("--csv", action="store_true", help="CSV on stdout instead of a table")
    p.add_argument("--all-classes", action="store_true", help="one row per class of each image")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        where = results.newest_predictions(args.dir)
        rows = list(results.rows(where))
    except (gexc.GoogleAPICallError, auth_exceptions.GoogleAuthError, OSError, ValueError) as exc:
        print(f"error: cannot read the predictions under {args.dir}: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print(
            f"error: no prediction.results-* or prediction.errors_stats-* files under {args.dir}; pass the "
            "job's predictions_dir output (or its output_dir)",
            file=sys.stderr,
        )
        return 2
    print_rows(rows, args.csv, args.all_classes, where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
