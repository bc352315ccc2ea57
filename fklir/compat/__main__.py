"""`python -m fklir.compat script.py [args]`: run an fkl-python script unchanged, `import fkl` resolving to
fklir.compat. The script runs as `__main__` with sys.argv = [script.py, args...] and its folder first on
sys.path, as `python script.py` would run it."""

from __future__ import annotations

import os
import runpy
import sys

from fklir.compat import install


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m fklir.compat script.py [args...]", file=sys.stderr)
        return 0 if argv else 2
    script = argv[0]
    if not os.path.isfile(script):
        print(f"python -m fklir.compat: no such script: {script}", file=sys.stderr)
        return 2
    install()
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
