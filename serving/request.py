"""`python -m serving.request IMAGE...`: the predict route's JSON body for these JPEG/PNG files, on stdout
(e.g. `... | curl -s -H 'Content-Type: application/json' --data @- http://127.0.0.1:8080/predict`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from serving.client import request_body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving.request", description=__doc__.split("\n")[0])
    parser.add_argument("images", nargs="+", type=Path, metavar="IMAGE", help="JPEG or PNG files")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.images if not p.is_file()]
    if missing:
        print(f"error: no such image file: {', '.join(missing)}", file=sys.stderr)
        return 2
    sys.stdout.write(request_body([p.read_bytes() for p in args.images]).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
