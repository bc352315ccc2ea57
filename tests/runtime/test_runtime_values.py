"""Arithmetic values and warps are runtime values (SPEC §2, issue 28): a pipeline whose structure this process
or the disk cache has compiled before takes new Add/Sub/Mul/Div/Max/Min values and new warp matrices, sizes
and inverse flags without building IR or importing xDSL; the values reach the parameter block checked with
the IR's own rules and words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build
from fklir.jit.pipeline import Pipeline
from tests.fresh_process import forget_loaded
from tests.runtime.catalogue_support import packed_source, reference
from tests.warp_formula import assert_float_warp_exact, warp_formula

RNG = np.random.default_rng(28)


def chain(mul: object, sub: object, target: str = "cpu", out: str = "float32") -> fkl.Pipeline:
    """x * mul - sub on a float chain (a uint8 image is cast to float32 first and saturated back)."""
    head, tail = ((), ()) if out == "float32" else ((fkl.Cast("float32"),), (fkl.SaturateCast(out),))
    ops = (*head, fkl.Mul(mul), fkl.Sub(sub), *tail)
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)


def forbid_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building IR from here on fails the test."""

    def refuse(self: Pipeline, sig: object) -> Any:
        raise AssertionError("IR was built for a known structure")

    monkeypatch.setattr(Pipeline, "_lowered", refuse)


def test_new_values_of_a_known_structure_build_no_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    x = RNG.random((17, 33, 3), dtype=np.float32) * 10
    chain(2.0, 3.0)(x)  # compiles (or loads) the structure, builds its IR once
    compiles = build.STATS.compiles
    forbid_ir(monkeypatch)
    for mul, sub in [(0.5, -1.25), ((1.5, -2.0, 3.25), 7.0), (1e-3, (0.0, 1.0, -1.0))]:
        got = chain(mul, sub)(x)
        expected = x * np.asarray(mul, np.float32) - np.asarray(sub, np.float32)
        np.testing.assert_array_equal(got, expected.astype(np.float32))
    assert build.STATS.compiles == compiles


def test_equal_absdiff_and_threshold_values_are_runtime_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """SPEC §8's value forms: new values of a known chain build no IR and compile nothing."""
    x = RNG.integers(0, 12, (17, 33, 3), dtype=np.uint8)

    def mask(diff: object, above: object, equal: object) -> fkl.Pipeline:
        ops = (fkl.AbsDiff(diff), fkl.Threshold(above), fkl.Equal(equal))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")

    mask(5, 2, 1)(x)
    compiles = build.STATS.compiles
    forbid_ir(monkeypatch)
    for diff, above, equal in [(3, 4, 0), ((1, 6, 9), (0, 2, 7), (1, 0, 1))]:
        got = mask(diff, above, equal)(x)
        d = np.abs(x.astype(np.int64) - np.asarray(diff)).astype(np.uint8)
        expected = (d > np.asarray(above)).astype(np.uint8) == np.asarray(equal)
        np.testing.assert_array_equal(got, expected)
    assert build.STATS.compiles == compiles


def test_list_calls_take_new_values_without_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    images = [RNG.random((9, 7, 3), dtype=np.float32) for _ in range(3)]
    fkl.compose(fkl.TensorRead(), fkl.Add(1.0), fkl.Max(0.25), fkl.TensorWrite(), target="cpu")(images)
    forbid_ir(monkeypatch)
    got = fkl.compose(fkl.TensorRead(), fkl.Add(-0.5), fkl.Max((0.1, 0.2, 0.3)), fkl.TensorWrite(), target="cpu")(
        images
    )
    expected = np.maximum(np.stack(images) - np.float32(0.5), np.array([0.1, 0.2, 0.3], np.float32))
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_rect_batches_take_new_values_and_rects_without_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    x = RNG.random((40, 50, 3), dtype=np.float32)

    def crops(rects: list[tuple[int, int, int, int]], add: object) -> np.ndarray:
        ops = (fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(8, 6), fkl.Add(add), fkl.TensorWrite())
        return np.asarray(fkl.compose(*ops, target="cpu")(x))

    crops([(0, 0, 20, 10), (5, 7, 30, 20)], 1.0)
    forbid_ir(monkeypatch)
    rects = [(3, 2, 17, 11), (10, 9, 33, 25), (0, 0, 50, 40)]
    got = crops(rects, (0.5, -2.0, 4.0))
    shifted = crops(rects, 0.0)  # the same kernel, the crops alone
    np.testing.assert_array_equal(got, shifted + np.array([0.5, -2.0, 4.0], np.float32))
    cv2 = pytest.importorskip("cv2")
    for plane, (cx, cy, w, h) in enumerate(rects):
        resized = cv2.resize(x[cy : cy + h, cx : cx + w], (8, 6), interpolation=cv2.INTER_LINEAR)
        np.testing.assert_allclose(shifted[plane], resized, atol=1e-3, rtol=1e-4)


def test_integer_chains_take_new_integral_values(monkeypatch: pytest.MonkeyPatch) -> None:
    x = RNG.integers(0, 256, (13, 21, 3), dtype=np.uint8)
    ops = lambda v, d: (fkl.TensorRead(), fkl.Add(v), fkl.Div(d), fkl.TensorWrite())  # noqa: E731
    fkl.compose(*ops(1, 2), target="cpu")(x)
    forbid_ir(monkeypatch)
    got = fkl.compose(*ops(7, (3, 5, 9)), target="cpu")(x)
    expected = ((x.astype(np.int64) + 7) % 256) // np.array([3, 5, 9])
    np.testing.assert_array_equal(got, expected.astype(np.uint8))


@pytest.mark.parametrize(
    "target",
    [
        "cpu",
        pytest.param(
            "gpu",
            marks=[pytest.mark.gpu, pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")],
        ),
    ],
)
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_warp_matrices_sizes_and_inverse_are_runtime_values(
    kind: str, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new matrix, output size and inverse flag each call: no IR, the exact blend of each (SPEC §3)."""
    x = RNG.random((29, 37, 3), dtype=np.float32) * 255

    def matrix(angle: float, scale: float) -> np.ndarray:
        c, s = np.cos(angle) * scale, np.sin(angle) * scale
        m = np.array([[c, -s, 4.0 + angle], [s, c, -3.0 + scale]])
        return m if kind == "affine" else np.vstack([m, [1e-3 * angle, -2e-3 * scale, 1.0]])

    def warp(m: np.ndarray, w: int, h: int, inverse: bool) -> np.ndarray:
        ops = (fkl.TensorRead(), fkl.Warping(m, w, h, inverse=inverse), fkl.Mul(0.5), fkl.TensorWrite())
        pipe = fkl.compose(*ops, target=target)
        if target == "cpu":
            return pipe(x)
        from fklir.runtime.device_buffer import DeviceBuffer

        return pipe(DeviceBuffer.from_host(x)).copy_to_host()

    warp(matrix(0.3, 1.1), 40, 30, False)
    forbid_ir(monkeypatch)
    for angle, scale, w, h, inverse in [(-0.4, 0.8, 41, 23, False), (0.9, 1.3, 17, 35, True), (0.0, 1.0, 37, 29, True)]:
        m = matrix(angle, scale)
        got = warp(m, w, h, inverse)
        assert got.shape == (h, w, 3)
        assert_float_warp_exact(got, warp_formula(x, m, w, h, inverse) * 0.5, f"{kind} {angle} {inverse}")


def test_saturate_bounds_and_border_constants_are_runtime_values(monkeypatch: pytest.MonkeyPatch) -> None:
    x = RNG.integers(0, 256, (15, 19, 3), dtype=np.uint8)

    def run(lo: object, hi: object, border: object) -> np.ndarray:
        ops = (fkl.BorderReader("constant", border), fkl.Crop((-3, -2, 25, 20)), fkl.Saturate(lo, hi))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)

    run(10, 200, 0)
    forbid_ir(monkeypatch)
    for lo, hi, border in [(0, 99, 255), ((5, 60, 7), 250, (1, 2, 3)), (100, (101, 150, 255), 7)]:
        padded = np.empty((20, 25, 3), np.uint8)
        padded[:] = np.asarray(border, np.uint8)
        padded[2:17, 3:22] = x
        expected = np.clip(padded, np.asarray(lo), np.asarray(hi)).astype(np.uint8)
        np.testing.assert_array_equal(run(lo, hi, border), expected)


@pytest.mark.parametrize("interp", ["linear", "nearest"])
def test_resize_sizes_and_backgrounds_are_runtime_values(interp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """New output sizes and letterbox backgrounds on a known structure: no IR, the reference interpreter's
    result (it runs the frontend's IR on numpy, apart from the kernels)."""
    x = RNG.integers(0, 256, (37, 53, 3), dtype=np.uint8)

    def ops(w: int, h: int, background: object) -> list[fkl.ops.Op]:
        resize = fkl.Resize(w, h, interp, aspect_ratio="preserve", background=background)
        return [fkl.TensorRead(), resize, fkl.TensorWrite()]

    fkl.compose(*ops(20, 20, 0), target="cpu")(x)
    expected = {size: reference(ops(*size, bg), packed_source(x)) for size, bg in _LETTERBOXES}
    forbid_ir(monkeypatch)
    for (w, h), background in _LETTERBOXES:
        got = fkl.compose(*ops(w, h, background), target="cpu")(x)
        assert got.shape == (h, w, 3)
        np.testing.assert_allclose(got, expected[(w, h)][0], rtol=1e-6, atol=1e-4)
        corner = np.broadcast_to(np.asarray(background, got.dtype), (3,))
        assert (got[0, 0] == corner).all() or (got[-1, -1] == corner).all()  # the letterbox shows


_LETTERBOXES = [((31, 17), 114), ((16, 40), (1, 2, 3)), ((64, 48), (250, 0, 7))]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            fkl.Mul(0.5),
            r"test_runtime_values\.py:\d+:1: error: 'fkl\.mul' value 0\.5 is not representable in the chain's "
            r"element type uint8; Cast to float first",
        ),
        (
            fkl.Div(0),
            r"test_runtime_values\.py:\d+:1: error: 'fkl\.div' divides an integer chain \(uint8\) by zero",
        ),
        (
            fkl.Mul((1, 2)),
            r"test_runtime_values\.py:\d+:1: error: 'fkl\.mul' has 2 values but the chain has 3 channels "
            r"\(give one value or one per channel\)",
        ),
        (
            fkl.Saturate(0.5, 200),
            r"test_runtime_values\.py:\d+:1: error: 'fkl\.saturate' value 0\.5 is not representable in the "
            r"chain's element type uint8; Cast to float first",
        ),
        (
            fkl.BorderReader("constant", (1, 2)),
            r"test_runtime_values\.py:\d+:1: error: 'fkl\.border' has 2 values but the chain has 3 channels "
            r"\(give one value or one per channel\)",
        ),
    ],
    ids=["not-representable", "integer-division-by-zero", "channel-count", "saturate-bound", "border-constant"],
)
def test_a_bad_new_value_is_refused_in_the_irs_words(value: fkl.ops.Op, message: str) -> None:
    x = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    good = {fkl.Mul: fkl.Mul(2), fkl.Div: fkl.Div(3), fkl.Saturate: fkl.Saturate(1, 2)}.get(
        type(value), fkl.BorderReader("constant", 9)
    )
    fkl.compose(fkl.TensorRead(), good, fkl.TensorWrite(), target="cpu")(x)  # the structure is known
    with pytest.raises(ValueError, match=message):
        fkl.compose(fkl.TensorRead(), value, fkl.TensorWrite(), target="cpu")(x)


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
def test_new_values_on_the_gpu_build_no_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    from fklir.runtime.device_buffer import DeviceBuffer

    x = RNG.integers(0, 256, (31, 45, 3), dtype=np.uint8)
    chain(2.0, 3.0, "gpu", "uint8")(DeviceBuffer.from_host(x))
    forbid_ir(monkeypatch)
    for mul, sub in [(0.5, -1.25), ((1.5, 0.25, 3.0), 7.0)]:
        got = chain(mul, sub, "gpu", "uint8")(DeviceBuffer.from_host(x)).copy_to_host()
        value = x.astype(np.float32) * np.asarray(mul, np.float32) - np.asarray(sub, np.float32)
        np.testing.assert_array_equal(got, np.clip(np.rint(value), 0, 255).astype(np.uint8))


TARGETS = [
    "cpu",
    pytest.param(
        "gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")]
    ),
]


def _run(target: str, ops: list[fkl.ops.Op], x: np.ndarray | None) -> np.ndarray:
    pipe = fkl.compose(*ops, target=target)
    if target == "cpu":
        return np.asarray(pipe() if x is None else pipe(x))
    from fklir.runtime.device_buffer import DeviceBuffer

    return (pipe() if x is None else pipe(DeviceBuffer.from_host(x))).copy_to_host()


@pytest.mark.parametrize("target", TARGETS)
def test_add_last_reorder_matrix_and_loop_values_are_runtime_values(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AddLast's value, VectorReorderRT's permutation, MxVFloat3's matrix and a StaticLoop's value: new ones
    build no IR; each result is the reference interpreter's."""
    x = RNG.random((19, 27, 3), dtype=np.float32) * 4 - 2

    def ops(add: float, order: tuple[int, ...], m: np.ndarray, loop: float) -> list[fkl.ops.Op]:
        return [
            fkl.TensorRead(),
            fkl.MxVFloat3(m),
            fkl.StaticLoop(fkl.Mul(loop), 3),
            fkl.AddLast(add),
            fkl.VectorReorderRT(*order),
            fkl.TensorWrite(),
        ]

    first = ops(1.0, (0, 1, 2, 3), np.eye(3), 1.0)
    _run(target, first, x)
    cases = [
        (2.5, (3, 2, 1, 0), RNG.random((3, 3)) - 0.5, 0.5),
        (-7.0, (1, 1, 3, 0), RNG.random((3, 3)) * 2, -1.25),
        (0.125, (2, 0, 1, 3), np.diag([1.0, -1.0, 2.0]), 2.0),
    ]
    expected = [reference(ops(*case), packed_source(x)) for case in cases]
    forbid_ir(monkeypatch)
    for case, want in zip(cases, expected, strict=True):
        got = _run(target, ops(*case), x)
        assert got.shape == (19, 27, 4)
        np.testing.assert_allclose(got, np.asarray(want).reshape(got.shape), rtol=1e-6, atol=1e-6)
        assert (got[..., case[1].index(3)] == np.float32(case[0] * 1.0)).all()  # the added channel


@pytest.mark.parametrize("target", TARGETS)
def test_read_set_values_and_sizes_are_runtime_values(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def ops(value: tuple[float, ...], w: int, h: int) -> list[fkl.ops.Op]:
        return [fkl.ReadSet(value, w, h, "float32"), fkl.Mul(2.0), fkl.TensorWrite()]

    _run(target, ops((1.0, 2.0, 3.0), 8, 6), None)
    forbid_ir(monkeypatch)
    for value, w, h in [((0.5, -1.0, 7.0), 13, 5), ((3.0, 3.0, -0.25), 4, 11)]:
        got = _run(target, ops(value, w, h), None)
        np.testing.assert_array_equal(got, np.broadcast_to(np.asarray(value, np.float32) * 2, (h, w, 3)))


def test_a_bad_new_permutation_or_added_value_is_refused_in_the_irs_words() -> None:
    x = RNG.integers(0, 256, (9, 11, 3), dtype=np.uint8)
    fkl.compose(fkl.TensorRead(), fkl.VectorReorderRT(2, 1, 0), fkl.AddLast(255), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match=r"'fkl\.vector_reorder_rt' channel indices \[3\] are out of range"):
        fkl.compose(fkl.TensorRead(), fkl.VectorReorderRT(3, 1, 0), fkl.AddLast(1), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match=r"'fkl\.add_last' value 256\.0 is not representable in the chain's element"):
        fkl.compose(fkl.TensorRead(), fkl.VectorReorderRT(2, 1, 0), fkl.AddLast(256), fkl.TensorWrite(), target="cpu")(
            x
        )


def _targets() -> list[str]:
    return ["cpu", "gpu"] if fkl.gpu_available() else ["cpu"]


def _on(target: str, x: np.ndarray) -> Any:
    from fklir.runtime.device_buffer import DeviceBuffer

    return x if target == "cpu" else DeviceBuffer.from_host(x)


def _host(target: str, y: Any) -> np.ndarray:
    return np.asarray(y) if target == "cpu" else y.copy_to_host()


def _mul_sub(x: np.ndarray, mul: object, sub: object) -> np.ndarray:
    value = x.astype(np.float32) * np.asarray(mul, np.float32) - np.asarray(sub, np.float32)
    return np.clip(np.rint(value), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("target", _targets())
def test_pipelines_of_one_structure_share_a_plan_and_keep_their_values(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pipelines of one structure launch one plan (one parameter block), each with its own values: calls
    that alternate between them, with and without `out=`, each see their own."""
    forget_loaded(monkeypatch)  # else compose() also packs the plan an earlier test called last (other inputs)
    x = RNG.integers(0, 256, (23, 37, 3), dtype=np.uint8)
    values = [(2.0, 3.0), ((0.5, 1.5, 2.5), -4.0), (1.25, (9.0, 0.0, -9.0))]
    pipes = [chain(mul, sub, target, "uint8") for mul, sub in values]
    src = _on(target, x)
    for _round in range(3):
        for pipe, (mul, sub) in zip(pipes, values, strict=True):
            np.testing.assert_array_equal(_host(target, pipe(src)), _mul_sub(x, mul, sub))
    plans = {plan for pipe in pipes for plan, _values in pipe._plans.values()}
    blocks = {id(block) for pipe in pipes for _plan, block in pipe._plans.values()}
    assert len(plans) == 1 and len(blocks) == 3


def test_a_new_pipeline_of_a_known_structure_makes_no_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from fklir.runtime import launch

    x = RNG.integers(0, 256, (19, 29, 3), dtype=np.uint8)
    chain(2.0, 3.0, "cpu", "uint8")(x)
    made: list[object] = []
    monkeypatch.setattr(launch.CpuLaunch, "__init__", lambda *args: made.append(args))
    monkeypatch.setattr(build, "load_plan", lambda *args: made.append(args))
    out = np.empty_like(x)
    assert chain(0.75, -2.0, "cpu", "uint8")(x, out=out) is out
    np.testing.assert_array_equal(out, _mul_sub(x, 0.75, -2.0))
    assert made == []


def test_threads_calling_pipelines_of_one_structure_see_their_own_values() -> None:
    import concurrent.futures

    x = RNG.integers(0, 256, (61, 47, 3), dtype=np.uint8)
    muls = [0.5 + 0.25 * i for i in range(8)]
    pipes = [chain(mul, 1.0, "cpu", "uint8") for mul in muls]

    def run(i: int) -> bool:
        return all(np.array_equal(pipes[i](x), _mul_sub(x, muls[i], 1.0)) for _ in range(40))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, range(len(pipes))))


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
def test_a_bound_pipeline_keeps_its_values_beside_unbound_twins() -> None:
    from fklir.runtime.device_buffer import DeviceBuffer

    x = RNG.integers(0, 256, (21, 33, 3), dtype=np.uint8)
    src, dst = DeviceBuffer.from_host(x), DeviceBuffer((21, 33, 3), "uint8")
    head, tail = (fkl.Cast("float32"), fkl.Mul(1.5), fkl.Sub(2.0)), (fkl.SaturateCast("uint8"),)
    bound = fkl.compose(fkl.TensorRead(src), *head, *tail, fkl.TensorWrite(dst), target="gpu")
    twin = chain(0.25, -8.0, "gpu", "uint8")
    np.testing.assert_array_equal(twin(src).copy_to_host(), _mul_sub(x, 0.25, -8.0))
    bound()
    np.testing.assert_array_equal(dst.copy_to_host(), _mul_sub(x, 1.5, 2.0))
    np.testing.assert_array_equal(twin(src).copy_to_host(), _mul_sub(x, 0.25, -8.0))
    bound()
    np.testing.assert_array_equal(dst.copy_to_host(), _mul_sub(x, 1.5, 2.0))


_FRESH = """
import json, sys
import numpy as np
import fklir as fkl
from fklir.backend import build

mul, sub, order = float(sys.argv[2]), float(sys.argv[3]), [int(i) for i in sys.argv[4]]
x = np.random.default_rng(5).random((19, 23, 3), dtype=np.float32)
ops = (fkl.Mul(mul), fkl.Sub(sub), fkl.AddLast(mul), fkl.VectorReorderRT(*order))
got = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)
np.save(sys.argv[1], got)
xdsl = sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl."))
print(json.dumps({"compiles": build.STATS.compiles, "xdsl": bool(xdsl)}))
"""


def test_a_fresh_process_takes_values_it_never_saw_without_xdsl(tmp_path: Path) -> None:
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path / "cache")}

    def run(mul: float, sub: float, order: str) -> tuple[dict[str, object], np.ndarray]:
        out = tmp_path / f"{mul}-{sub}.npy"
        command = [sys.executable, "-c", _FRESH, str(out), str(mul), str(sub), order]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1]), np.load(out)

    def cache_files() -> list[tuple[str, bytes]]:
        """Each cache file and its contents (a hit only marks its entry's use time, for eviction)."""
        return sorted((str(p), p.read_bytes()) for p in (tmp_path / "cache").rglob("*") if p.is_file())

    first, _ = run(2.0, 3.0, "0123")
    assert first == {"compiles": 1, "xdsl": True}
    files = cache_files()
    second, got = run(-0.75, 11.5, "3102")
    assert second == {"compiles": 0, "xdsl": False}
    assert cache_files() == files, "a new value wrote to the cache"
    x = np.random.default_rng(5).random((19, 23, 3), dtype=np.float32)
    pixel = np.concatenate([x * np.float32(-0.75) - np.float32(11.5), np.full((19, 23, 1), -0.75, np.float32)], -1)
    np.testing.assert_array_equal(got, pixel[..., [3, 1, 0, 2]])


def test_a_structural_value_compiles_once() -> None:
    """What docs/ops.md calls structure (here a Cast's dtype and VectorReorder's compile-time indices) compiles
    once per new choice; repeating a choice, or changing only runtime values, compiles nothing."""
    x = RNG.integers(0, 256, (9, 13, 3), dtype=np.uint8)

    def run(dtype: str, order: tuple[int, ...], add: float) -> np.ndarray:
        ops = (fkl.Cast(dtype), fkl.VectorReorder(*order), fkl.Add(add))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)

    for dtype, order in [("float32", (2, 1, 0)), ("float64", (2, 1, 0)), ("float64", (0, 0, 1))]:
        compiles = build.STATS.compiles
        run(dtype, order, 1.0)
        first = build.STATS.compiles - compiles  # 1, or 0 where the disk cache had it
        got = run(dtype, order, 2.5)
        assert build.STATS.compiles - compiles == first <= 1
        np.testing.assert_array_equal(got, x[..., list(order)].astype(dtype) + 2.5)


def test_compose_of_a_known_structure_packs_its_values_so_the_first_call_is_warm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """compose() of a structure planned for one kind of input packs the new pipeline's values block for it, so
    that its first call on that kind launches as a warm call does (issue 28: first call <= warm + 5 µs); the
    block holds this pipeline's values, not its twin's. A bad value still fails at the call, in the IR's words."""
    from fklir.jit import pipeline

    monkeypatch.setattr(pipeline, "_SHARED_PLANS", {})  # other tests may have planned these for other inputs
    x = RNG.integers(0, 256, (13, 9, 3), dtype=np.uint8)
    chain(2.0, 3.0, "cpu", "uint8")(x)
    fresh = chain(0.5, -7.0, "cpu", "uint8")

    def add(value: float) -> fkl.Pipeline:
        return fkl.compose(fkl.TensorRead(), fkl.Add(value), fkl.TensorWrite(), target="cpu")

    add(1.0)(x)
    bad = add(0.5)  # 0.5 is not a uint8 value: no block is packed for it at compose

    def refuse(self: Pipeline, *args: object) -> Any:
        raise AssertionError("the first call packed a values block")

    with monkeypatch.context() as patched:
        patched.setattr(Pipeline, "_runtime_values", refuse)
        np.testing.assert_array_equal(fresh(x), _mul_sub(x, 0.5, -7.0))
    with pytest.raises(ValueError, match=r"error: 'fkl\.add' value 0\.5 is not representable .* uint8"):
        bad(x)


@pytest.mark.parametrize("target", TARGETS)
def test_a_pipeline_with_the_values_of_one_before_copies_its_block_and_keeps_its_own_rects(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame's new rects with the values of the frame before: the values block is that pipeline's copied, its
    rects (more, then fewer than before) its own, and no value is checked or packed again."""
    from fklir.frontend import ops as fops
    from fklir.runtime import launch

    x = RNG.integers(0, 256, (41, 53, 3), dtype=np.uint8)

    def rois(rects: list[tuple[int, int, int, int]]) -> fkl.Pipeline:
        ops = (fkl.Crop(rects), fkl.Resize(9, 7), fkl.Mul(1 / 255), fkl.Sub((0.5, 0.25, -1.0)), fkl.Div(0.25))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorSplit(), target=target)

    def expected(rects: list[tuple[int, int, int, int]]) -> np.ndarray:
        single = [
            fkl.compose(fkl.TensorRead(), fkl.Crop(*r), fkl.Resize(9, 7), fkl.TensorSplit(), target="cpu")
            for r in rects
        ]
        resized = np.stack([np.asarray(pipe(x)) for pipe in single]).astype(np.float32)
        scale = np.float32(1 / 255) * resized - np.array([0.5, 0.25, -1.0], np.float32)[:, None, None]
        return scale / np.float32(0.25)

    frames = [[(0, 0, 20, 10), (5, 7, 30, 20), (1, 2, 3, 4), (40, 30, 13, 11)], [(3, 2, 17, 11)], [(9, 9, 9, 9)] * 3]
    np.testing.assert_allclose(
        _host(target, rois(frames[0])(_on(target, x))), expected(frames[0]), rtol=1e-6, atol=1e-6
    )
    packed: list[object] = []
    original = launch.LaunchPlan.pack_values
    monkeypatch.setattr(launch.LaunchPlan, "pack_values", lambda self, v: packed.append(v) or original(self, v))
    monkeypatch.setattr(fops, "recipe_values", lambda *args: pytest.fail("a known value set was checked again"))
    for rects in frames[1:]:
        got = _host(target, rois(rects)(_on(target, x)))
        np.testing.assert_allclose(got, expected(rects), rtol=1e-6, atol=1e-6)
    assert packed == []


def test_values_that_compare_equal_but_compute_apart_are_packed_apart() -> None:
    """-0.0 == 0.0 (and hashes alike) but x * -0.0 is -0.0 where x * 0.0 is 0.0: the second pipeline packs its own
    block, never the first's; an integer and a float of one value fill one slot alike."""
    x = RNG.random((5, 7, 3), dtype=np.float32) + 0.5
    for first, second in ((0.0, -0.0), (-0.0, 0.0), ((1.0, 0.0, 2.0), (1.0, -0.0, 2.0))):
        signs = []
        for value in (first, second):
            pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(value), fkl.TensorWrite(), target="cpu")
            signs.append(np.signbit(np.asarray(pipe(x))))
        expected = [np.signbit(x * np.asarray(v, np.float32)) for v in (first, second)]
        np.testing.assert_array_equal(signs[0], expected[0])
        np.testing.assert_array_equal(signs[1], expected[1])
    y = RNG.integers(0, 100, (5, 7), dtype=np.uint8)
    for value in (3, 3.0):
        pipe = fkl.compose(fkl.TensorRead(), fkl.Add(value), fkl.TensorWrite(), target="cpu")
        np.testing.assert_array_equal(np.asarray(pipe(y)), y + 3)
