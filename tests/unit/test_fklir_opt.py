"""fklir-opt run in-process: linear-time string lexing, SSA dominance, its passes/targets/dialects, --version.

The lit tests under tests/filecheck/fklir-opt/ pin the same behaviour through the console script;
these check what lit cannot: wall time, the regex against xDSL's own, and the helpers directly.
"""

from __future__ import annotations

import importlib.metadata
import random
import re
import time
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, i32
from xdsl.dialects.test import TestOp as GenericOp  # aliased: pytest would collect a Test* class
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import ParseError
from xdsl.utils.mlir_lexer import MLIRLexer

import fklir
import fklir as fkl
from fklir.diagnostics import LocatingParser, OpError
from fklir.dialects.dominance import check_region_dominance
from fklir.dialects.fkl import FKL, KernelOp
from fklir.passes import get_all_passes
from fklir.tools.fklir_opt import FklirOptMain, main
from fklir.tools.string_literals import LINEAR_STRING_REGEX, clarify_string_error

# xDSL 0.74's string regex, copied as the reference: the linear one must accept exactly its strings.
XDSL_STRING_REGEX = re.compile(r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

IMAGE = "!fkl.image<?x?x3xf32>"


def run_opt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """fklir-opt's exit code, stdout and stderr."""
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def parse(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(FKL)
    return LocatingParser(ctx, text, "t.mlir").parse_module()


# ---- linear-time lexing of string literals ------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "where"),
    [
        ("a" * 100_000, ""),  # the reported case: plain characters to the end of the line
        ("a b" * 33_333, '\nfkl.write %0, "dst" : ' + IMAGE + "\n"),  # more lines follow
        ("\\n\\t\\\\\\22" * 12_500, ""),  # valid escapes only, never closed
    ],
    ids=["plain", "more-lines", "escapes"],
)
def test_long_unterminated_string_is_reported_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tail: str, where: str
) -> None:
    path = tmp_path / "bad.mlir"
    run_opt(capsys, "--version")  # import and register everything before timing
    path.write_text(f'%0 = fkl.read "src : {tail}{where}')
    start = time.perf_counter()
    code, out, err = run_opt(capsys, str(path))
    elapsed = time.perf_counter() - start
    assert code == 1
    assert out == ""
    assert err.startswith(f"{path}:1:15: error: unterminated string\n")
    assert "Traceback" not in err
    # xDSL's backtracking regex would not finish this line in any lifetime
    assert elapsed < 0.5, f"{elapsed:.2f} s"


def test_long_valid_string_lexes_in_linear_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "ab\\22c" * 20_000
    path = tmp_path / "long.mlir"
    path.write_text(f'%0 = fkl.read "{name}" : {IMAGE}\nfkl.write %0, "dst" : {IMAGE}\n')
    run_opt(capsys, "--version")
    start = time.perf_counter()
    code, out, err = run_opt(capsys, str(path))
    elapsed = time.perf_counter() - start
    assert (code, err) == (0, "")
    assert f'fkl.read "{name}"' in out
    assert elapsed < 1.0, f"{elapsed:.2f} s"


def test_linear_regex_accepts_exactly_xdsls_strings() -> None:
    rng = random.Random(1234)
    alphabet = ['"', "\\", "a", " ", "n", "t", "0", "F", "g", "\n", "\v", "\f", "é"]
    for _ in range(20_000):
        text = '"' + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        expected = XDSL_STRING_REGEX.match(text)
        got = LINEAR_STRING_REGEX.match(text)
        assert (got and got.span()) == (expected and expected.span()), repr(text)


def test_fklir_opt_installs_the_linear_regex() -> None:
    assert MLIRLexer._unescaped_characters_regex is LINEAR_STRING_REGEX  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ('%0 = fkl.read "src', "unterminated string", 15),
        ('%0 = fkl.read "src\n : ' + IMAGE, "unterminated string", 15),
        ('%0 = fkl.read "s\\"rc\\', "invalid escape \\ in string", 21),
        ('%0 = fkl.read "s\\x1" : ' + IMAGE, "invalid escape \\x in string", 17),
        ('%0 = fkl.read "s\\1g" : ' + IMAGE, "invalid escape \\1 in string", 17),
        ('%0 = fkl.read "s\fc" : ' + IMAGE, "character '\\x0c' not allowed in a string", 17),
        ('fkl.kernel @"k0 params !fkl.params<> {', "unterminated string", 13),
        ('"abc', "unterminated string", 1),
    ],
)
def test_string_errors_say_what_and_where(text: str, message: str, column: int) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    error = clarify_string_error(info.value)
    assert error.msg.startswith(message)
    assert error.span.get_location() == ("t.mlir", 1, column)


def test_other_parse_errors_pass_through_unchanged() -> None:
    with pytest.raises(ParseError) as info:
        parse(f"%0 = fkl.mul %0, [1.0, 2.0 : {IMAGE}")
    assert clarify_string_error(info.value) is info.value


# ---- SSA dominance -------------------------------------------------------------------------------


def kernel_text(*body: str) -> str:
    lines = "\n".join(f"  {line}" for line in body)
    return f"fkl.kernel @k0 params !fkl.params<> {{\n{lines}\n}}\n"


def test_kernel_use_before_def_is_a_verifier_error_at_the_use() -> None:
    module = parse(
        kernel_text(
            f'%0 = fkl.read "src" : {IMAGE}',
            f'fkl.write %2, "dst" : {IMAGE}',
            f"%1 = fkl.add %0, 1.0 : {IMAGE}",
            f"%2 = fkl.mul %1, 2.0 : {IMAGE}",
        )
    )
    kernel = module.body.block.first_op
    assert isinstance(kernel, KernelOp)
    with pytest.raises(OpError) as info:
        kernel.verify()
    assert info.value.op.name == "fkl.write"
    assert str(info.value) == "'fkl.write' operand #0 is used before it is defined (defined by 'fkl.mul' at line 5:3)"


def test_kernel_in_order_verifies() -> None:
    body = (f'%0 = fkl.read "src" : {IMAGE}', f"%1 = fkl.add %0, 1.0 : {IMAGE}", f'fkl.write %1, "dst" : {IMAGE}')
    parse(kernel_text(*body)).verify()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (kernel_text(f'%0 = fkl.read "src" : {IMAGE}', f"%1 = fkl.add %1, 1.0 : {IMAGE}"), 3),  # its own result
        (f'%1 = fkl.mul %0, 2.0 : {IMAGE}\n%0 = fkl.read "src" : {IMAGE}\n', 1),  # top level
    ],
    ids=["self-use", "top-level"],
)
def test_fklir_opt_reports_use_before_def(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int
) -> None:
    path = tmp_path / "chain.mlir"
    path.write_text(text)
    code, out, err = run_opt(capsys, str(path), "-p", "fkl-default-pipeline", "-t", "cpp")
    assert code == 1
    assert out == ""
    located = rf"{re.escape(str(path))}:{line}:\d+: error: "
    assert re.match(located + r"'fkl\.\w+' operand #0 is used before it is defined", err)
    assert "Traceback" not in err


def test_dominance_of_nested_regions_sees_only_values_above_the_parent() -> None:
    # outer block: %a, then an op whose region uses %a (fine) and %b (defined after the op: not fine)
    a = GenericOp(result_types=[i32])
    inner_ok = GenericOp(operands=[a])
    holder_ok = GenericOp(regions=[Region(Block([inner_ok]))])
    b = GenericOp(result_types=[i32])
    check_region_dominance(Region(Block([a, holder_ok, b])))

    inner_bad = GenericOp(operands=[b])
    holder_bad = GenericOp(regions=[Region(Block([inner_bad]))])
    c = GenericOp(result_types=[i32])
    with pytest.raises(OpError) as info:
        check_region_dominance(Region(Block([c, holder_bad, GenericOp(operands=[c])])))
    assert info.value.op is inner_bad


def test_dominance_accepts_block_arguments_and_refuses_an_inner_value_outside() -> None:
    inner_block = Block(arg_types=[i32])
    inner_def = GenericOp(operands=[inner_block.args[0]], result_types=[i32])
    inner_block.add_op(inner_def)
    holder = GenericOp(regions=[Region(inner_block)])
    check_region_dominance(Region(Block([holder])))

    # a value defined inside a region is not visible after the op that holds it
    inner_block2 = Block([inner2 := GenericOp(result_types=[i32])])
    user = GenericOp(operands=[inner2])
    with pytest.raises(OpError) as info:
        check_region_dominance(Region(Block([GenericOp(regions=[Region(inner_block2)]), user])))
    assert info.value.op is user


# ---- what the tool offers ------------------------------------------------------------------------


def test_only_fkl_passes_targets_and_dialects() -> None:
    tool = FklirOptMain([])
    assert set(tool.available_targets) == {"mlir", "cpp", "cuda"}
    assert set(tool.available_passes) == set(get_all_passes())
    assert set(tool.ctx.registered_dialect_names) == {"builtin", "fkl"}


def test_help_lists_fkl_passes_and_targets_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt(capsys, "--help")
    assert code == 0
    text = " ".join(out.split()).replace("- ", "-")  # undo argparse's wrapping
    assert "Available targets are: mlir,cuda,cpp " in text
    for name in get_all_passes():
        assert name in text
    for xdsl_name in ("wgsl", "llvm", "riscv", "canonicalize", "convert-", "csl"):
        assert xdsl_name not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-t", "wgsl"], "invalid choice: 'wgsl'"),
        (["-t", "llvm"], "invalid choice: 'llvm'"),
        (["-p", "cse"], "Unrecognized passes: ['cse']"),
        (["-p", "fkl-infer-types{"], "Error parsing pass pipeline specification"),
        (["-t", "cpp{"], "Error parsing pass pipeline specification"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_unknown_target_pass_or_flag_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = tmp_path / "chain.mlir"
    path.write_text(f'%0 = fkl.read "src" : {IMAGE}\nfkl.write %0, "dst" : {IMAGE}\n')
    code, out, err = run_opt(capsys, str(path), *args)
    assert code == 1
    assert out == ""
    assert "fklir-opt: error: " in err
    assert message in err
    assert "Traceback" not in err


def test_version_names_fklir_and_xdsl(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt(capsys, "--version")
    fklir_version = fkl.__version__  # the installed distribution's, or the source tree's where none is
    xdsl_version = importlib.metadata.version("xdsl")
    assert code == 0
    assert out == f"fklir-opt (fklir {fklir_version}, xdsl {xdsl_version})\n"


def test_version_falls_back_to_the_package_attribute(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_version = importlib.metadata.version

    def no_fklir_distribution(name: str) -> str:
        if name == "fklir":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", no_fklir_distribution)
    monkeypatch.setattr(fklir, "__version__", "9.8.7+source", raising=False)
    _, out, _ = run_opt(capsys, "--version")
    assert out.startswith("fklir-opt (fklir 9.8.7+source, xdsl ")
