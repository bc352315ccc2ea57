"""fkl.jit's TensorMatcher and symbols (SPEC §6.2): binding on first use, agreement everywhere, every
error message exactly (argument, dimension, symbol and who bound it), scalar checks, memoised matching."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.jit.matcher import Arguments
from fklir.jit.tensors import Tensor, contiguous_strides

jit = fkl.jit
N, C = jit.SymbolicSize("N"), jit.SymbolicSize("C")
T = jit.SymbolicDType("T", ("float32", "float16"))
D = jit.SymbolicDevice()


def _rows() -> Arguments:
    """The SPEC's scale_rows arguments."""
    return Arguments(
        "scale_rows",
        [
            ("out", jit.TensorMatcher((N, C)).with_dtype(T).with_device(D)),
            ("x", jit.TensorMatcher((N, C)).with_dtype(T).with_device(D)),
            ("alpha", "float32"),
        ],
    )


def _tensor(shape: tuple[int, ...], dtype: str = "float32", device: int | None = None, strides: Any = None) -> Tensor:
    strides = contiguous_strides(shape) if strides is None else strides
    return Tensor(0x1000, shape, strides, dtype, device, "torch")


def _raises(error: type[Exception], message: str, arguments: Arguments, *values: object) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        arguments.bind(values)


def test_symbols_bind_on_first_use_and_reach_the_match() -> None:
    match, converted = _rows().bind((np.zeros((3, 5), np.float16), np.ones((3, 5), np.float16), 2))
    assert match.symbols == {"N": 3, "C": 5, "T": "float16", "device": "cpu"}
    assert match.target == "cpu"
    assert match.device is None
    assert converted[2].value == 2.0


def test_a_dimension_that_disagrees_names_argument_dim_symbol_and_binder() -> None:
    _raises(
        ValueError,
        "x: dim 1 is 5, but C = 3 (bound by out)",
        _rows(),
        np.zeros((4, 3), np.float32),
        np.zeros((4, 5), np.float32),
        1.0,
    )


def test_a_symbol_used_twice_in_one_tensor_must_agree() -> None:
    square = Arguments("sq", [("m", jit.TensorMatcher((N, N)))])
    square.bind((np.zeros((4, 4), np.float32),))
    _raises(ValueError, "m: dim 1 is 5, but N = 4 (bound by m)", square, np.zeros((4, 5), np.float32))


def test_fixed_and_any_extents() -> None:
    fixed = Arguments("k", [("x", jit.TensorMatcher((3, -1)))])
    fixed.bind((np.zeros((3, 100), np.uint8),))
    _raises(ValueError, "x: dim 0 is 4, but must be 3", fixed, np.zeros((4, 100), np.uint8))


def test_rank() -> None:
    _raises(
        ValueError,
        "out: expected 2 dims (N, C), got 3 (shape (2, 3, 4))",
        _rows(),
        np.zeros((2, 3, 4), np.float32),
        np.zeros((2, 3), np.float32),
        1.0,
    )


def test_dtype_messages() -> None:
    _raises(
        TypeError,
        "out: dtype float64 is not one of T's (float32, float16)",
        _rows(),
        np.zeros((2, 3)),
        np.zeros((2, 3)),
        1.0,
    )
    _raises(
        TypeError,
        "x: dtype is float16, but T = float32 (bound by out)",
        _rows(),
        np.zeros((2, 3), np.float32),
        np.zeros((2, 3), np.float16),
        1.0,
    )
    fixed = Arguments("k", [("x", jit.TensorMatcher((-1,)).with_dtype(np.uint8))])
    _raises(TypeError, "x: dtype is int8, but must be uint8", fixed, np.zeros(3, np.int8))


def test_dtype_spellings_agree() -> None:
    torch = pytest.importorskip("torch")
    for spelling in ("float16", np.float16, np.dtype("float16"), torch.float16):
        assert jit.TensorMatcher((N,)).with_dtype(spelling).dtype == "float16"
    assert jit.SymbolicDType("U", (np.float32, torch.bfloat16)).allowed == ("float32", "bfloat16")
    with pytest.raises(TypeError, match=r"^with_dtype: 'complex64' is not an element type; supported: uint8, "):
        jit.TensorMatcher((N,)).with_dtype("complex64")


def test_contiguity_and_strides() -> None:
    x = np.zeros((17, 33), np.float32)
    _raises(
        ValueError,
        "x: not contiguous (shape (33, 17), strides (1, 33) in elements); pass a contiguous array or declare "
        "the strides with with_strides(...)",
        Arguments("k", [("x", jit.TensorMatcher((-1, -1)))]),
        x.T,
    )
    S = jit.SymbolicSize("S")
    strided = Arguments("k", [("x", jit.TensorMatcher((N, C)).with_strides((1, S))), ("y", jit.TensorMatcher((S,)))])
    match, _ = strided.bind((x.T, np.zeros(33, np.float32)))
    assert match.symbols == {"N": 33, "C": 17, "S": 33}
    _raises(ValueError, "x: stride of dim 0 is 2, but must be 1", strided, x[:, ::2].T, np.zeros(33, np.float32))
    _raises(ValueError, "y: dim 0 is 32, but S = 33 (bound by x)", strided, x.T, np.zeros(32, np.float32))
    with pytest.raises(ValueError, match=r"^with_strides: 1 strides for the 2 dims \(N, C\)$"):
        jit.TensorMatcher((N, C)).with_strides((1,))


def test_extents_of_one_and_empty_arrays_count_as_contiguous() -> None:
    any_2d = Arguments("k", [("x", jit.TensorMatcher((-1, -1)))])
    any_2d.bind((np.zeros((4, 8), np.float32)[::2][:1],))  # an extent of 1 with any stride
    any_2d.bind((np.zeros((0, 8), np.float32)[:, ::2],))


def _device_matcher(device: Any) -> jit.TensorMatcher:
    return jit.TensorMatcher((-1,)).with_device(device)


@pytest.mark.parametrize(
    ("device", "tensor_device", "error", "message"),
    [
        ("cpu", 0, TypeError, "x: on cuda:0, but must be on cpu"),
        ("cuda", None, TypeError, "x: on cpu, but must be on a CUDA device"),
        (1, 0, ValueError, "x: on cuda:0, but must be on cuda:1"),
        ("cuda:1", None, TypeError, "x: on cpu, but must be on cuda:1"),
    ],
)
def test_device_messages(device: Any, tensor_device: int | None, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        _device_matcher(device).check(_tensor((3,), device=tensor_device), "x", {})


def test_a_symbolic_device_must_agree() -> None:
    bindings: dict[str, tuple[object, str]] = {}
    _device_matcher(D).check(_tensor((3,), device=0), "out", bindings)
    with pytest.raises(ValueError, match=r"^x: on cuda:1, but device = cuda:0 \(bound by out\)$"):
        _device_matcher(D).check(_tensor((3,), device=1), "x", bindings)


def test_cpu_and_gpu_tensors_never_mix() -> None:
    arguments = Arguments("k", [("out", jit.TensorMatcher((-1,))), ("x", jit.TensorMatcher((-1,)))])
    with pytest.raises(
        TypeError, match=r"^x: on cpu, but out is on cuda:0; CPU and GPU tensors cannot be mixed in one call$"
    ):
        arguments._match([_tensor((3,), device=0), _tensor((3,))])
    with pytest.raises(ValueError, match=r"^x: on cuda:1, but out is on cuda:0; a kernel runs on one device$"):
        arguments._match([_tensor((3,), device=0), _tensor((3,), device=1)])


def test_a_gpu_match_names_its_device() -> None:
    match = _rows()._match([_tensor((2, 3), device=1), _tensor((2, 3), device=1), None])
    assert (match.target, match.device, match.symbols["device"]) == ("gpu", 1, 1)


@pytest.mark.parametrize(
    ("dtype", "value", "error", "message"),
    [
        ("float32", "2", TypeError, "alpha: expected a number for float32, got str '2'"),
        ("float32", True, TypeError, "alpha: expected a number for float32, got bool True"),
        ("float32", 1e39, ValueError, "alpha: 1e+39 is out of range for float32 (largest finite 3.40282e+38)"),
        ("uint8", 300, ValueError, "alpha: 300 is out of range for uint8 [0, 255]"),
        ("int32", 1.5, TypeError, "alpha: expected an integer for int32, got 1.5"),
        ("bool", 1, TypeError, "alpha: expected a bool, got int 1"),
    ],
)
def test_scalar_messages(dtype: str, value: object, error: type[Exception], message: str) -> None:
    arguments = Arguments("k", [("x", jit.TensorMatcher((-1,))), ("alpha", dtype)])
    _raises(error, message, arguments, np.zeros(2, np.float32), value)


def test_scalars_convert_to_their_ctypes() -> None:
    arguments = Arguments(
        "k", [("x", jit.TensorMatcher((-1,))), ("a", "float16"), ("b", "int32"), ("c", "bool"), ("d", "float64")]
    )
    _match, converted = arguments.bind((np.zeros(2, np.float32), 1.5, np.int16(-7), np.bool_(True), 0.1))
    assert converted[1].value == 0x3E00  # float16 1.5, as its bits
    assert converted[2].value == -7
    assert converted[3].value is True
    assert converted[4].value == 0.1


def test_argument_count_and_kinds() -> None:
    _raises(TypeError, "scale_rows: expected 3 arguments (out, x, alpha), got 2", _rows(), np.zeros((2, 3)), 1.0)
    _raises(
        TypeError,
        "x: expected a tensor (a numpy array, a torch tensor, a CuPy array, a DeviceBuffer or a CUDA array "
        "(__cuda_array_interface__)), got list",
        _rows(),
        np.zeros((2, 3), np.float32),
        [1.0],
        1.0,
    )


def test_declaration_errors() -> None:
    with pytest.raises(ValueError, match=r"^k: argument names must differ, got x, x$"):
        Arguments("k", [("x", jit.TensorMatcher((N,))), ("x", jit.TensorMatcher((N,)))])
    with pytest.raises(ValueError, match=r"^k: a kernel needs a tensor argument \(its device chooses the target\)$"):
        Arguments("k", [("alpha", "float32")])
    with pytest.raises(ValueError, match=r"^k: N names both a SymbolicSize and a SymbolicDType$"):
        Arguments("k", [("x", jit.TensorMatcher((N,)).with_dtype(jit.SymbolicDType("N")))])
    with pytest.raises(ValueError, match=r"^SymbolicSize: the name must be a Python identifier"):
        jit.SymbolicSize("2N")
    with pytest.raises(TypeError, match=r"^TensorMatcher: expected ints >= 0, -1 \(any\) or SymbolicSize, got -2$"):
        jit.TensorMatcher((-2,))
    with pytest.raises(ValueError, match=r"^with_device: expected 'cpu', 'cuda', 'cuda:N', N >= 0 or a Symbolic"):
        jit.TensorMatcher((N,)).with_device("gpu")


def test_with_methods_leave_the_original_unchanged() -> None:
    base = jit.TensorMatcher((N, C))
    typed = base.with_dtype("float32").with_device("cuda")
    assert base.dtype is None and base.device is None
    assert (typed.dtype, typed.device) == ("float32", "cuda")


def test_matching_is_memoised_per_signature() -> None:
    arguments = _rows()
    x = np.zeros((4, 6), np.float32)
    for alpha in (1.0, 2.0, 3.0):
        arguments.bind((np.empty_like(x), x, alpha))
    assert arguments.matches == 1
    arguments.bind((x[:3], x[:3], 1.0))  # a new shape
    arguments.bind((x.astype(np.float16), x.astype(np.float16), 1.0))  # a new dtype
    assert arguments.matches == 3
    arguments.bind((np.empty_like(x), x, 5.0))
    assert arguments.matches == 3
    # a scalar is checked on every call, even when its signature is known
    _raises(TypeError, "alpha: expected a number for float32, got NoneType None", arguments, x, x, None)


def test_a_failed_match_is_not_remembered() -> None:
    arguments = _rows()
    bad = (np.zeros((4, 3), np.float32), np.zeros((4, 5), np.float32), 1.0)
    for _ in range(2):
        with pytest.raises(ValueError, match="but C = 3"):
            arguments.bind(bad)
    assert arguments.matches == 2
