"""Entry point of `python -m infra.leftovers`."""

import sys

from infra.leftovers.command import main

sys.exit(main())
