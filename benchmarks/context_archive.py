"""What `imageBuilder: cloudbuild` uploads: the trainer's context archive, its size, the time to pack it.

.venv/bin/python benchmarks/context_archive.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import time

from infra.cloudbuild.context import archive_bytes, archive_files, archive_tag
from infra.components.image import TRAINER_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    files = archive_files()
    raw = sum((TRAINER_DIR / f).stat().st_size for f in files)
    started = time.perf_counter()
    archives = {archive_bytes() for _ in range(rounds)}
    elapsed = (time.perf_counter() - started) / rounds
    [data] = archives  # deterministic: every round gave the same bytes
    sizes = f"{raw / 1024:.1f} KiB raw, {len(data) / 1024:.1f} KiB gzip'd ({len(data)} bytes)"
    print(f"tag {archive_tag()}: {len(files)} files, {sizes}")
    print(f"packing takes {elapsed * 1000:.1f} ms ({rounds} rounds, identical bytes each time)")


if __name__ == "__main__":
    main()
