"""Entry point kept at its old path: studies recorded by earlier versions run `python -m` this module."""

import sys

from infra.vertex.runners.local.study import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
