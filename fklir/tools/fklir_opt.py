"""`fklir-opt`: run any fkl pass pipeline on `.mlir` text, like mlir-opt.

    fklir-opt chain.mlir -p fkl-default-pipeline
    fklir-opt chain.mlir -p fkl-default-pipeline -t cuda      # emit the kernel's C++
    fklir-opt chain.mlir -p fkl-infer-types,fkl-outline-kernels --print-between-passes
    fklir-opt chain.mlir --load ops.py -p fkl-default-pipeline -t cpp   # user ops (fkl.op) that ops.py declares

Bad input is reported as `file:line:col: error: message` on stderr with exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import runpy
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from fklir.diagnostics import LocatingParser, OpError, first_invalid_op, located_message
from fklir.dialects.dominance import check_region_dominance
from fklir.tools.string_literals import clarify_string_error, install_linear_string_lexing

install_linear_string_lexing()


def fklir_version() -> str:
    """The installed distribution's version, else the package's own (a source tree on sys.path)."""
    try:
        return importlib.metadata.version("fklir")
    except importlib.metadata.PackageNotFoundError:
        import fklir

        return str(getattr(fklir, "__version__", "unknown"))


class _VersionFormat(str):
    """xDSL formats `version_format` only when --version is given: the fklir version is read then,
    since importlib.metadata scans the installed distributions, a cost every start would pay otherwise."""

    def format(self, *args: object, **kwargs: object) -> str:
        return super().format(*args, fklir_version=fklir_version(), **kwargs)


class FklirOptMain(xDSLOptMain):
    """xDSL's driver, narrowed to what fkl IR uses: the builtin and fkl dialects, fkl passes, and the
    mlir, cpp and cuda targets. xDSL's own passes and targets (wgsl, llvm, ...) take no fkl op, so
    listing them only invites runs that print nothing or fail to import."""

    version_format = _VersionFormat("fklir-opt (fklir {fklir_version}, xdsl {xdsl_version})")

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="fklir modular optimizer driver", args=args)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        # argparse names the tool after sys.argv[0]: `python -m fklir.tools.fklir_opt` would say
        # "__main__.py: error: ..."
        arg_parser.prog = "fklir-opt"
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--load",
            action="append",
            default=[],
            metavar="FILE.py",
            help="run FILE.py first, so that the user ops it declares with fkl.op are known (their C++ "
            "and reference, which the IR names by hash); repeatable",
        )

    def run(self) -> None:
        for path in self.args.load:
            _load(path)
        super().run()

    def register_all_dialects(self) -> None:
        from xdsl.dialects.builtin import Builtin

        from fklir.dialects import get_all_dialects

        self.ctx.register_dialect(Builtin.name, lambda: Builtin)
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        from fklir.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        from xdsl.targets import get_all_targets as get_xdsl_targets

        from fklir.backend.targets import get_all_targets

        self.available_targets["mlir"] = get_xdsl_targets()["mlir"]
        self.available_targets.update(get_all_targets())

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        try:
            # the parser lexes its first token as it is built
            parser = LocatingParser(self.ctx, chunk.read(), self.get_input_name())
            parser.line_offset = start_offset
            return parser.parse_module(not self.args.no_implicit_module)
        except ParseError as e:
            raise clarify_string_error(e) from None

    def apply_passes(self, prog: ModuleOp) -> None:
        """Verify with locations first, then run the pipeline; errors name the op and where it is."""
        try:
            if not self.args.disable_verify:
                _raise_located(prog)
            self.pipeline.apply(self.ctx, prog)
        except OpError as e:
            raise DiagnosticException(located_message(e.op, str(e))) from None
        except VerifyException as e:
            if (failure := first_invalid_op(prog)) is not None:
                raise DiagnosticException(located_message(*failure)) from None
            raise DiagnosticException(f"error: {e}") from None


def _load(path: str) -> None:
    """Run a Python file that declares user ops (not as __main__: its own script part stays quiet)."""
    try:
        runpy.run_path(path, run_name="__fklir_load__")
    except Exception as e:  # the user's file: whatever it raises is a bad input, not a crash
        raise ValueError(f"--load {path}: {type(e).__name__}: {e}") from None


def _raise_located(module: ModuleOp) -> None:
    # The top level holds chains as they are written; passes take them in text order, as kernels.
    check_region_dominance(module.body)
    if (failure := first_invalid_op(module)) is not None:
        raise OpError(*failure)


def _format_parse_error(e: ParseError) -> str:
    file, line, col = e.span.get_location()
    context = e.span.print_with_context(e.msg).split("\n", 1)[1]
    return f"{file}:{line}:{col}: error: {e.msg}\n{context}"


def main(args: Sequence[str] | None = None) -> None:
    try:
        FklirOptMain(args).run()
    except SystemExit as e:
        # argparse reports bad usage (an unknown target or flag) with status 2; every bad input exits 1.
        sys.exit(1 if e.code == 2 else e.code)
    except ArgSpecParseError as e:
        print(f"fklir-opt: error: {e}", file=sys.stderr)
        sys.exit(1)
    except ParseError as e:
        print(_format_parse_error(e), file=sys.stderr)
        sys.exit(1)
    except DiagnosticException as e:
        print(e, file=sys.stderr)
        sys.exit(1)
    except (ValueError, KeyError, OSError) as e:
        print(f"fklir-opt: error: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:
        if os.environ.get("FKLIR_DEBUG"):
            raise
        hint = "(set FKLIR_DEBUG=1 for a traceback)"
        print(f"fklir-opt: internal error: {type(e).__name__}: {e} {hint}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
