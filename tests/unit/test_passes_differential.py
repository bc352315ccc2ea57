"""Every pass keeps the meaning of the IR: the reference interpreter gives the same result before
and after it, on random images and random chains; and fklir-opt round-trips what pipe.ir() prints."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

import fklir as fkl
from fklir.frontend.lowering import lower_chain, lower_pipeline, make_context
from fklir.interpreters.fkl import run_module
from fklir.passes.default_pipeline import DEFAULT_PASSES
from fklir.passes.infer_types import InferTypesPass

RNG = np.random.default_rng(7)

CHAINS = {
    "roi": (
        fkl.TensorRead(),
        fkl.Crop([(3, 2, 20, 11), (9, 5, 17, 13)]),
        fkl.Resize(8, 6),
        fkl.Mul(2.0),
        fkl.Sub((1.0, 2.0, 3.0)),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
    ),
    "float": (
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Mul(0.5),
        fkl.Add(3.0),
        fkl.Max(40.0),
        fkl.TensorSplit(),
    ),
    "int": (fkl.TensorRead(), fkl.Add(7), fkl.Mul((3, 5, 7)), fkl.Min(200), fkl.TensorWrite()),
    "nearest": (
        fkl.TensorRead(),
        fkl.Crop(1, 1, 25, 14),
        fkl.Resize(9, 31, "nearest"),
        fkl.Div(2),
        fkl.TensorWrite(),
    ),
}


DIVERGENT = (
    (fkl.TensorRead(), fkl.Resize(9, 7), fkl.Mul(2.0), fkl.SaturateCast("uint8"), fkl.TensorWrite()),
    (fkl.TensorRead(), fkl.Crop(2, 3, 12, 8), fkl.Resize(9, 7, "nearest"), fkl.TensorWrite()),
    (fkl.TensorRead(), fkl.Crop(1, 1, 9, 7), fkl.Add(3), fkl.Min(100), fkl.TensorWrite()),
)


def _check_passes_preserve(module: object, inputs: dict[str, np.ndarray]) -> None:
    ctx = make_context()
    InferTypesPass().apply(ctx, module)  # the interpreter needs types; inference itself is tested below
    expected = run_module(module, inputs)["dst"]  # pyright: ignore[reportArgumentType]
    for p in DEFAULT_PASSES:
        p.apply(ctx, module)  # pyright: ignore[reportArgumentType]
        module.verify()  # pyright: ignore[reportAttributeAccessIssue]
        got = run_module(module, inputs)["dst"]  # pyright: ignore[reportArgumentType]
        np.testing.assert_array_equal(got, expected, err_msg=f"after {p.name}")


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_each_pass_preserves_results(name: str) -> None:
    image = RNG.integers(0, 256, (19, 33, 3), dtype=np.uint8)
    _check_passes_preserve(lower_chain(CHAINS[name], "uint8", 3, 1), {"src": image})


@pytest.mark.parametrize("seed", range(5))
def test_each_pass_preserves_image_lists_and_divergent_batches(seed: int) -> None:
    rng = np.random.default_rng(seed)
    images = {f"src{i}": rng.integers(0, 256, (19, 33, 3), dtype=np.uint8) for i in range(4)}
    _check_passes_preserve(lower_pipeline([CHAINS["nearest"]], "uint8", 3, 1, images=4), images)
    plane_map = [int(k) for k in rng.permutation([0, 1, 2, int(rng.integers(0, 3))])]
    image = rng.integers(0, 256, (19, 33, 3), dtype=np.uint8)
    _check_passes_preserve(lower_pipeline(DIVERGENT, "uint8", 3, 1, plane_map=plane_map), {"src": image})


def test_infer_types_then_default_pipeline_equals_frontend_types() -> None:
    ctx = make_context()
    module = lower_chain(CHAINS["roi"], "uint8", 3, 1)
    for p in DEFAULT_PASSES:
        p.apply(ctx, module)
    text = str(module)
    assert text.count("fkl.kernel") == 1
    assert "!fkl.image<?x?x3xui8, planes 2>" in text and "!fkl.image<?x?x3xf32, planes 2>" in text


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_fklir_opt_round_trips_pipe_ir(name: str, tmp_path: object) -> None:
    import subprocess
    import sys
    from pathlib import Path

    pipe = fkl.compose(*CHAINS[name], target="cpu")
    text = pipe.ir("uint8", (19, 33, 3))
    path = Path(str(tmp_path)) / "chain.mlir"
    path.write_text(text)
    reparsed = Parser(make_context(), text).parse_module()
    reparsed.verify()
    result = subprocess.run(
        [sys.executable, "-m", "fklir.tools.fklir_opt", str(path)], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == text.strip()


@pytest.mark.parametrize("seed", range(25))
def test_random_chains_cpu_equals_reference(seed: int) -> None:
    """Random valid chains of arithmetic, casts and geometry on random odd-sized images."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(5, 40)), int(rng.integers(5, 40))
    c = int(rng.integers(1, 5))
    ops: list[fkl.frontend.ops.Op] = [fkl.TensorRead()]  # type: ignore[name-defined]
    dtype = "uint8"
    if rng.random() < 0.5:
        x0, y0 = int(rng.integers(0, w // 2)), int(rng.integers(0, h // 2))
        ops.append(fkl.Crop(x0, y0, int(rng.integers(1, w - x0 + 1)), int(rng.integers(1, h - y0 + 1))))
    if rng.random() < 0.5:
        ops.append(
            fkl.Resize(int(rng.integers(1, 30)), int(rng.integers(1, 30)), str(rng.choice(["linear", "nearest"])))
        )
        dtype = "float32" if ops[-1].interp == "linear" else dtype  # type: ignore[attr-defined]
    if dtype == "uint8" and rng.random() < 0.7:
        ops.append(fkl.Cast("float32"))
        dtype = "float32"
    for _ in range(int(rng.integers(1, 5))):
        kind = (fkl.Add, fkl.Sub, fkl.Mul, fkl.Max, fkl.Min, fkl.Div)[int(rng.integers(0, 6))]
        if dtype == "uint8":
            value = int(rng.integers(1, 6))
        else:
            value = (
                tuple(float(v) for v in rng.uniform(0.5, 3.0, c)) if rng.random() < 0.5 else float(rng.uniform(0.5, 3))
            )
        ops.append(kind(value))
    if dtype == "float32" and rng.random() < 0.6:
        ops.append(fkl.SaturateCast(str(rng.choice(["uint8", "int16", "int8"]))))
    ops.append(fkl.TensorWrite())
    shape = (h, w) if c == 1 else (h, w, c)
    image = rng.integers(0, 256, shape, dtype=np.uint8)
    pipe = fkl.compose(*ops, target="cpu")
    got = pipe(image)
    module = lower_chain(pipe.ops, "uint8", c, 1)
    InferTypesPass().apply(make_context(), module)
    ref = run_module(module, {"src": image})["dst"]
    ref = ref.reshape(got.shape)
    if got.dtype.kind in "iu":
        assert np.abs(got.astype(np.int64) - ref.astype(np.int64)).max(initial=0) <= 1
        assert (got == ref).mean() > 0.98
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-3)
