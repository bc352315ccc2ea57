"""The fklir-opt fuzz child: one in-process `fklir-opt` run per request (xDSL is imported once).

A request is the argument list; the reply is (exit code, stdout, stderr). An exception that escapes
main() is printed into stderr as a traceback and reported as exit code None, so the parent sees it
exactly as a user of the command line would.
"""

from __future__ import annotations

import io
import traceback
from contextlib import redirect_stderr, redirect_stdout

from fklir.tools.fklir_opt import main
from tests.fuzz.child import serve


def run_opt(args: list[str]) -> tuple[int | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code: int | None = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # whatever escapes main() is what the harness reports
            traceback.print_exc()
            code = None
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":
    serve(run_opt)
