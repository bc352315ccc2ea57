"""User ops (fkl.op, SPEC §6.1) without compiling: the declaration and its checks, the IR (one kernel, the
params hoisted into one f64 slot), the content hash that keys the cache, the emitted C++ (the body under
a #line of the user's file, the call), and the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import fklir as fkl
from fklir.dialects import fkl as fkld
from fklir.frontend.lowering import kernels_of, lower_chain, run_passes
from fklir.interpreters.fkl import run_module

GAMMA_CPP = """struct Gamma {
    static FKL_HD float exec(float x, float gamma) { return powf(x, gamma); }
};
"""

SWAP_CPP = """struct Swap {
    template <int C, int M>
    static FKL_HD void exec(const fkl::u8* in, fkl::u8* out, int first) {
        for (int c = 0; c < M; ++c) out[c] = in[first == 0 ? M - 1 - c : c];
    }
};
"""


def _gamma(reference: bool = True) -> type[fkl.frontend.user_ops.UserOpDescriptor]:  # type: ignore[name-defined]
    return fkl.op(
        "Gamma",
        body=GAMMA_CPP,
        params={"gamma": "float32"},
        inputs=("float32",),
        out="same",
        reference=(lambda x, gamma: np.power(x, gamma, dtype=np.float32)) if reference else None,
    )


def _swap() -> type[fkl.frontend.user_ops.UserOpDescriptor]:  # type: ignore[name-defined]
    return fkl.op(
        "Swap",
        body=SWAP_CPP,
        params={"first": "int32"},
        inputs=("uint8",),
        pixel=True,
        reference=lambda x, first: x[..., ::-1] if first == 0 else x,
    )


def _kernel_ir(*ops: object, dtype: str = "float32", channels: int = 3) -> ModuleOp:
    return run_passes(lower_chain([fkl.TensorRead(), *ops, fkl.TensorWrite()], dtype, channels, 1))  # type: ignore[list-item]


# ---- the declaration ---------------------------------------------------------------------------------


def test_params_are_checked_when_the_op_is_made() -> None:
    Gamma = _gamma()
    with pytest.raises(TypeError, match="Gamma: missing param 'gamma'"):
        Gamma()
    with pytest.raises(TypeError, match="Gamma: unknown param 'gama'; its params are gamma"):
        Gamma(gama=2.2)
    with pytest.raises(TypeError, match="Gamma: param 'gamma'"):
        Gamma(gamma="2.2")
    with pytest.raises(ValueError, match="Gamma: param 'gamma' is float32"):
        Gamma(gamma=1e300)
    Swap = _swap()
    with pytest.raises(ValueError, match=r"Swap: param 'first' is int32, which cannot hold 0\.5"):
        Swap(first=0.5)
    assert Swap(first=np.int64(1)).values == (1.0,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"body": GAMMA_CPP, "body_file": "x.h"}, "give exactly one of body= .* or body_file="),
        ({}, "give exactly one of body="),
        ({"body": GAMMA_CPP, "params": {"2x": "float32"}}, "a param name must be a C\\+\\+ identifier"),
        ({"body": GAMMA_CPP, "params": {"g": "float128"}}, "unknown dtype 'float128'"),
        ({"body": GAMMA_CPP, "inputs": ()}, "inputs must be a non-empty sequence"),
        ({"body": GAMMA_CPP, "channels": 1}, "channels= is for the pixel form"),
        ({"body": GAMMA_CPP, "pixel": True, "channels": 5}, "channel count must be from 1 to 4, got 5"),
        ({"body_file": "no/such/file.h"}, "body_file 'no/such/file.h' is not a file"),
    ],
)
def test_a_bad_declaration_names_the_op(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=f"fkl.op Gamma: {message}|Gamma: {message}"):
        fkl.op("Gamma", **kwargs)  # type: ignore[arg-type]


def test_the_name_must_be_a_cpp_identifier() -> None:
    with pytest.raises(ValueError, match="its name must be a C\\+\\+ identifier"):
        fkl.op("my op", body=GAMMA_CPP)


def test_an_input_type_it_does_not_take_is_an_error_at_compose_naming_the_op() -> None:
    pipe = fkl.compose(fkl.TensorRead(), _gamma()(gamma=2.0), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"test_user_ops.py:\d+:1: error: 'fkl.user' Gamma does not take uint8 input"):
        pipe.ir("uint8", (4, 4, 3))


# ---- the IR -------------------------------------------------------------------------------------------


def test_a_user_op_fuses_into_one_kernel_with_its_params_in_one_f64_slot() -> None:
    Gamma = _gamma()
    pipe = fkl.compose(fkl.TensorRead(), fkl.Resize(8, 8), fkl.Mul(2.0), Gamma(gamma=2.2), fkl.TensorWrite())
    ir = pipe.ir("float32", (16, 16, 3))
    assert ir.count("fkl.kernel") == 1
    assert "user4: f64 x 1" in ir and "user4 = [2.2]" in ir
    assert (
        f'fkl.user "Gamma" %2, param "user4" params(gamma: f32) inputs [f32] out same hash "{Gamma.SPEC.digest}"' in ir
    )


def test_a_value_never_reaches_the_structure() -> None:
    Gamma = _gamma()
    from fklir.backend.build import structural_ir

    (a,) = kernels_of(_kernel_ir(Gamma(gamma=2.2)))
    (b,) = kernels_of(_kernel_ir(Gamma(gamma=0.5)))
    assert structural_ir(a) == structural_ir(b)


def test_the_verifier_checks_the_values_against_the_params() -> None:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(fkld.FKL)
    head = '%0 = fkl.read "s" : !fkl.image<?x?x1xf32>\n'
    sig = 'inputs [f32] out same hash "0123456789abcdef" : !fkl.image<?x?x1xf32>'
    cases = {
        f'%1 = fkl.user "G" %0, [1.0, 2.0] params(g: f32) {sig}': "takes 1 values \\(g\\), got 2",
        f'%1 = fkl.user "G" %0, 2.5 params(n: i32) {sig}': "param 'n' value 2.5 is not representable",
        f'%1 = fkl.user "G" %0 params(g: f32) {sig}': "needs exactly one of an inline value or a parameter slot",
        f'%1 = fkl.user "G" %0, 1.0 params() {sig}': "has no params, so no values",
        f'%1 = fkl.user "G" %0 params() {sig.replace("0123456789abcdef", "xyz")}': "hash must be 16 to 64",
        f'%1 = fkl.user "G" %0 params() {sig.replace("[f32]", "[ui8]")}': "G does not take float32 input",
    }
    for line, message in cases.items():
        module = Parser(ctx, head + line + '\nfkl.write %1, "d" : !fkl.image<?x?x1xf32>').parse_module()
        with pytest.raises(VerifyException, match=message):
            module.verify()


# ---- the content hash ---------------------------------------------------------------------------------


def test_the_hash_follows_the_body_and_every_file_it_includes(tmp_path: Path) -> None:
    (tmp_path / "helper.h").write_text("inline FKL_HD float twice(float x) { return 2.0f * x; }\n")
    body = tmp_path / "twice.h"
    body.write_text('#include "helper.h"\nstruct Twice { static FKL_HD float exec(float x) { return twice(x); } };\n')
    first = fkl.op("Twice", body_file=body).SPEC.digest
    assert fkl.op("Twice", body_file=body).SPEC.digest == first
    (tmp_path / "helper.h").write_text("inline FKL_HD float twice(float x) { return x + x; }\n")
    second = fkl.op("Twice", body_file=body).SPEC.digest
    assert second != first
    body.write_text(body.read_text() + "// edited\n")
    assert fkl.op("Twice", body_file=body).SPEC.digest not in (first, second)
    assert fkld.DECLARATIONS[first].include_dirs == (str(tmp_path),)


# ---- the emitted C++ ----------------------------------------------------------------------------------


def test_the_body_comes_once_under_a_line_directive_of_the_users_file() -> None:
    Gamma = _gamma()
    pipe = fkl.compose(fkl.TensorRead(), Gamma(gamma=2.2), Gamma(gamma=0.5), fkl.TensorWrite(), target="cpu")
    source = pipe.source_for("float32", (4, 4, 3))
    lines = source.splitlines()
    start = lines.index(f"// fkl.op Gamma (hash {Gamma.SPEC.digest[:16]})")
    declared_at = Path(__file__).read_text().splitlines().index('GAMMA_CPP = """struct Gamma {') + 1
    assert lines[start + 1] == f'#line {declared_at} "{Path(__file__).resolve()}"'
    assert source.count("struct Gamma") == 1
    reset = next(line for line in lines if line.endswith('"<fklir kernel>"'))
    assert reset == f'#line {lines.index(reset) + 2} "<fklir kernel>"'  # the next line's own number
    assert (
        "Gamma::exec(v0, fkl::Cast<fkl::f32>::exec(p.user1[0]));" in source
        and "Gamma::exec(v1, fkl::Cast<fkl::f32>::exec(p.user2[0]));" in source
    )


def test_the_pixel_form_calls_exec_with_the_channel_counts() -> None:
    pipe = fkl.compose(fkl.TensorRead(), _swap()(first=0), fkl.TensorWrite(), target="cpu")
    source = pipe.source_for("uint8", (4, 4, 3))
    assert "// fkl.user_pixel Swap" in source
    assert "Swap::exec<3, 3>(v0, v1, fkl::Cast<fkl::i32>::exec(p.user_pixel1[0]));" in source


# ---- the reference interpreter ------------------------------------------------------------------------


def test_the_interpreter_runs_a_user_op_through_its_reference() -> None:
    x = np.random.default_rng(1).random((5, 6, 3), dtype=np.float32)
    out = run_module(_kernel_ir(_gamma()(gamma=2.2)), {"src": x})["dst"]
    np.testing.assert_array_equal(out[0], np.power(x, np.float32(2.2)))
    img = np.random.default_rng(2).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    swapped = run_module(_kernel_ir(_swap()(first=0), dtype="uint8"), {"src": img})["dst"]
    np.testing.assert_array_equal(swapped[0], img[..., ::-1])


def test_the_interpreter_refuses_a_user_op_without_a_reference() -> None:
    module = _kernel_ir(_gamma(reference=False)(gamma=2.2))
    with pytest.raises(
        ValueError, match=r"'fkl.user' Gamma has no reference: give fkl\.op\(\.\.\., reference=\.\.\.\)"
    ):
        run_module(module, {"src": np.zeros((2, 2, 3), np.float32)})


def test_an_undeclared_hash_is_named_with_the_way_to_declare_it() -> None:
    module = _kernel_ir(_gamma()(gamma=2.2))
    (kernel,) = kernels_of(module)
    (user,) = [op for op in kernel.walk() if isinstance(op, fkld.UserOp)]
    user.properties["hash"] = type(user.digest)("f" * 64)
    with pytest.raises(ValueError, match=r"no fkl\.op declares hash f{16}\.\.\. in this process .*--load FILE\.py"):
        run_module(module, {"src": np.zeros((2, 2, 3), np.float32)})
