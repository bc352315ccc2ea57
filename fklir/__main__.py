"""`python -m fklir` runs the `fklir` command line, for environments where the console script is not on PATH."""

from __future__ import annotations

import sys

from fklir.tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
