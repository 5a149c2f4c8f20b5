"""Entry point kept at its old path: local jobs started by earlier versions ran `python -m` this module."""

import sys
from pathlib import Path

from infra.vertex.runners.local.supervisor import supervise

if __name__ == "__main__":
    print(supervise(Path(sys.argv[1])))
