"""User ops (fkl.op) compiled and run: in vertical (after Crop/Resize), horizontal (batched ROIs) and
divergent chains, one kernel each, against numpy references, on the CPU and (when present) the GPU; a new
value never compiles, an edit of the body or of a header it includes compiles once; a body that does not
compile is a CompileError at the user's own line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import STATS
from fklir.runtime.launch import LAUNCHES
from tests.runtime.chains import from_target, on_target

RNG = np.random.default_rng(16)
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU"))]

GAMMA_CPP = """
struct Gamma {
    static FKL_HD float exec(float x, float gamma, float gain) { return gain * powf(x, gamma); }
};
"""

LUMA_CPP = """
struct Luma {
    // BT.601 luma of an RGB pixel, scaled: M = 1 output channel
    template <int C, int M>
    static FKL_HD void exec(const float* in, float* out, float scale) {
        out[0] = scale * (0.299f * in[0] + 0.587f * in[1] + 0.114f * in[2]);
    }
};
"""

Gamma = fkl.op(
    "Gamma",
    body=GAMMA_CPP,
    params={"gamma": "float32", "gain": "float32"},
    inputs=("float32",),
    reference=lambda x, gamma, gain: gain * np.power(x, gamma, dtype=np.float32),
)
Luma = fkl.op(
    "Luma",
    body=LUMA_CPP,
    params={"scale": "float32"},
    inputs=("float32",),
    pixel=True,
    channels=1,
    reference=lambda x, scale: scale * (0.299 * x[..., :1] + 0.587 * x[..., 1:2] + 0.114 * x[..., 2:3]),
)


def _gamma(x: np.ndarray, gamma: float, gain: float) -> np.ndarray:
    return np.float32(gain) * np.power(x.astype(np.float32), np.float32(gamma))


def _luma(x: np.ndarray, scale: float) -> np.ndarray:
    x = x.astype(np.float32)
    return np.float32(scale) * (0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2])


def _one_launch(pipe: Any, x: Any) -> Any:
    before = LAUNCHES.count
    out = pipe(x)
    assert LAUNCHES.count - before == 1, "one kernel launch per call"
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_flat_chain(target: str) -> None:
    x = RNG.random((17, 23, 3), dtype=np.float32)
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(0.5), Gamma(gamma=2.2, gain=3.0), fkl.TensorWrite(), target=target)
    out = from_target(target, _one_launch(pipe, on_target(target, x)))
    np.testing.assert_allclose(out, _gamma(x * np.float32(0.5), 2.2, 3.0), rtol=2e-6)
    assert pipe.ir().count("fkl.kernel") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_vertical_after_crop_and_resize(target: str) -> None:
    x = RNG.random((40, 50, 3), dtype=np.float32)
    crop = fkl.compose(fkl.TensorRead(), fkl.Crop(5, 6, 30, 20), fkl.Resize(16, 12), fkl.TensorWrite(), target="cpu")
    ops = (fkl.Crop(5, 6, 30, 20), fkl.Resize(16, 12), Gamma(gamma=1.5, gain=2.0), Luma(scale=0.5))
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)
    out = from_target(target, _one_launch(pipe, on_target(target, x)))
    assert out.shape == (12, 16)
    np.testing.assert_allclose(out, _luma(_gamma(crop(x), 1.5, 2.0), 0.5), rtol=1e-5, atol=1e-6)
    assert pipe.ir().count("fkl.kernel") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_horizontal_batched_rois(target: str) -> None:
    x = RNG.random((40, 50, 3), dtype=np.float32)
    rects = [(0, 0, 20, 20), (10, 5, 30, 25), (25, 10, 25, 30)]
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Crop(rects),
        fkl.Resize(8, 8),
        Gamma(gamma=0.5, gain=1.0),
        fkl.TensorWrite(),
        target=target,
    )
    out = from_target(target, _one_launch(pipe, on_target(target, x)))
    assert out.shape == (3, 8, 8, 3)
    for i, rect in enumerate(rects):
        roi = fkl.compose(fkl.TensorRead(), fkl.Crop(*rect), fkl.Resize(8, 8), fkl.TensorWrite(), target="cpu")(x)
        np.testing.assert_allclose(out[i], _gamma(roi, 0.5, 1.0), rtol=1e-6, err_msg=f"rect {i}")
    assert pipe.ir().count("fkl.kernel") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_divergent_chains(target: str) -> None:
    x = RNG.random((30, 40, 3), dtype=np.float32)
    a = (fkl.TensorRead(), fkl.Resize(16, 12), Gamma(gamma=2.0, gain=1.0), Luma(scale=1.0), fkl.TensorWrite())
    b = (fkl.TensorRead(), fkl.Crop(2, 3, 16, 12), Luma(scale=2.0), fkl.TensorWrite())
    plane_map = [1, 2, 2, 1]
    pipe = fkl.compose_divergent(plane_map, a, b, target=target)
    out = from_target(target, _one_launch(pipe, on_target(target, x)))
    resized = fkl.compose(fkl.TensorRead(), fkl.Resize(16, 12), fkl.TensorWrite(), target="cpu")(x)
    expected = {1: _luma(_gamma(resized, 2.0, 1.0), 1.0), 2: _luma(x[3:15, 2:18], 2.0)}
    for z, k in enumerate(plane_map):
        np.testing.assert_allclose(out[z].reshape(12, 16), expected[k], rtol=1e-5, atol=1e-6, err_msg=f"plane {z}")
    assert pipe.ir().count("fkl.kernel") == 1


def test_the_interpreter_agrees_with_the_compiled_op() -> None:
    from fklir.frontend.lowering import lower_chain, run_passes
    from fklir.interpreters.fkl import run_module

    x = RNG.random((9, 11, 3), dtype=np.float32)
    ops = [fkl.TensorRead(), fkl.Crop(1, 2, 8, 6), Gamma(gamma=1.7, gain=0.5), Luma(scale=2.0), fkl.TensorWrite()]
    compiled = fkl.compose(*ops, target="cpu")(x)
    interpreted = run_module(run_passes(lower_chain(ops, "float32", 3, 1)), {"src": x})["dst"]
    np.testing.assert_allclose(compiled, interpreted.reshape(compiled.shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_a_new_value_does_not_compile(target: str) -> None:
    x = RNG.random((8, 8, 3), dtype=np.float32)

    def run(gamma: float) -> np.ndarray:
        pipe = fkl.compose(fkl.TensorRead(), Gamma(gamma=gamma, gain=1.0), fkl.TensorWrite(), target=target)
        return from_target(target, pipe(on_target(target, x)))

    run(1.25)
    compiles = STATS.compiles
    np.testing.assert_allclose(run(3.0), _gamma(x, 3.0, 1.0), rtol=2e-6)
    assert STATS.compiles == compiles, "a param value is runtime data"


@pytest.mark.parametrize("target", TARGETS)
def test_an_edit_of_the_body_or_of_an_included_header_compiles_by_itself(target: str, tmp_path: Path) -> None:
    (tmp_path / "offset.h").write_text("#define OFFSET 1.0f\n")
    body = tmp_path / "shift.h"
    body.write_text('#include "offset.h"\nstruct Shift { static FKL_HD float exec(float x) { return x + OFFSET; } };\n')
    x = RNG.random((6, 7, 3), dtype=np.float32)

    def run() -> np.ndarray:
        shift = fkl.op("Shift", body_file=body)
        return from_target(
            target, fkl.compose(fkl.TensorRead(), shift(), fkl.TensorWrite(), target=target)(on_target(target, x))
        )

    np.testing.assert_allclose(run(), x + 1)
    compiles = STATS.compiles
    np.testing.assert_allclose(run(), x + 1)
    assert STATS.compiles == compiles, "the same declaration is cached"
    (tmp_path / "offset.h").write_text("#define OFFSET 2.0f\n")
    np.testing.assert_allclose(run(), x + 2)
    assert STATS.compiles == compiles + 1, "an included header's edit compiles once"
    body.write_text(body.read_text().replace("x + OFFSET", "x - OFFSET"))
    np.testing.assert_allclose(run(), x - 2)
    assert STATS.compiles == compiles + 2, "the body's edit compiles once"


@pytest.mark.parametrize("target", TARGETS)
def test_a_body_that_does_not_compile_names_the_op_and_the_users_line(target: str, tmp_path: Path) -> None:
    body = tmp_path / "broken.h"
    body.write_text("struct Broken {\n    static FKL_HD float exec(float x) { return x + not_declared; }\n};\n")
    broken = fkl.op("Broken", body_file=body)
    pipe = fkl.compose(fkl.TensorRead(), broken(), fkl.TensorWrite(), target=target)
    with pytest.raises(fkl.CompileError, match=r"fkl\.op 'Broken' does not compile") as caught:
        pipe(on_target(target, np.zeros((2, 2, 3), np.float32)))
    assert f"{body}(2)" in str(caught.value) or f"{body}:2:" in str(caught.value)


@pytest.mark.parametrize("target", TARGETS)
def test_an_inline_body_that_does_not_compile_points_into_the_declaring_script(target: str) -> None:
    broken = fkl.op(
        "InlineBroken",
        body="""struct InlineBroken {
    static FKL_HD float exec(float x) { return x +* 1.0f; }
};""",
    )
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "x +* 1.0f; }" in text)
    pipe = fkl.compose(fkl.TensorRead(), broken(), fkl.TensorWrite(), target=target)
    with pytest.raises(fkl.CompileError, match=r"fkl\.op 'InlineBroken' does not compile") as caught:
        pipe(on_target(target, np.zeros((2, 2, 3), np.float32)))
    here = str(Path(__file__).resolve())
    assert f"{here}({line})" in str(caught.value) or f"{here}:{line}:" in str(caught.value)


@pytest.mark.parametrize("target", TARGETS)
def test_params_arrive_in_their_declared_types_and_the_result_type_changes(target: str) -> None:
    mix = fkl.op(
        "Mix",
        body="""struct Mix {
    static FKL_HD float exec(fkl::u8 x, fkl::f16 h, fkl::i32 n, bool negate) {
        const float v = fkl::Cast<float>::exec(h) * (float)x + (float)n;
        return negate ? -v : v;
    }
};""",
        params={"h": "float16", "n": "int32", "negate": "bool"},
        inputs=("uint8",),
        out="float32",
    )
    x = RNG.integers(0, 256, (5, 9, 3), dtype=np.uint8)
    pipe = fkl.compose(fkl.TensorRead(), mix(h=0.5, n=-3, negate=True), fkl.TensorWrite(), target=target)
    out = from_target(target, pipe(on_target(target, x)))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, -(0.5 * x.astype(np.float32) - 3))


@pytest.mark.parametrize("target", TARGETS)
def test_new_param_values_build_no_ir(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user op's params are runtime values like a built-in's: new ones reuse the plan without IR."""
    from fklir.jit.pipeline import Pipeline

    x = RNG.random((13, 19, 3), dtype=np.float32)

    def pipe(gamma: float, gain: float, scale: float) -> Any:
        ops = (Gamma(gamma=gamma, gain=gain), Luma(scale=scale))
        return fkl.compose(fkl.TensorRead(), fkl.Crop(1, 2, 15, 9), *ops, fkl.TensorWrite(), target=target)

    pipe(2.2, 3.0, 1.0)(on_target(target, x))

    def refuse(self: Pipeline, sig: object) -> Any:
        raise AssertionError("IR was built for a known structure")

    monkeypatch.setattr(Pipeline, "_lowered", refuse)
    for gamma, gain, scale in [(0.5, 1.25, 2.0), (1.7, -0.5, 0.25)]:
        got = from_target(target, pipe(gamma, gain, scale)(on_target(target, x)))
        want = _luma(_gamma(x[2:11, 1:16], gamma, gain), scale)
        np.testing.assert_allclose(got, want, rtol=5e-6, atol=1e-6)
