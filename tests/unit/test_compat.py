"""fkl-python compatibility (SPEC §7): native 1-D inputs, and every `fklir.compat` entry point against
fkl-python's documented behaviour."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import cv2
import numpy as np
import pytest

import fklir as fkl
import fklir.compat as fklc
from fklir.compat import environment
from fklir.compat.tensor import fkl_shape

gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
RNG = np.random.default_rng(17)


# ---- native 1-D inputs --------------------------------------------------------------------------


def _scale(target: str) -> fkl.Pipeline:
    return fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(), target=target)


def test_one_dim_input_is_one_row_cpu() -> None:
    x = RNG.standard_normal(16).astype(np.float32)
    y = _scale("cpu")(x)
    assert y.shape == (16,)
    np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6)
    out = np.empty(16, np.float32)
    assert _scale("cpu")(x, out=out) is out


def test_one_dim_output_follows_the_geometry_cpu() -> None:
    x = np.arange(16, dtype=np.float32)
    one_row = fkl.compose(fkl.TensorRead(), fkl.Resize(8, 1), fkl.TensorWrite(), target="cpu")
    two_rows = fkl.compose(fkl.TensorRead(), fkl.Resize(8, 2), fkl.TensorWrite(), target="cpu")
    assert one_row(x).shape == (8,)
    assert two_rows(x).shape == (2, 8)
    np.testing.assert_array_equal(one_row(x), two_rows(x)[0])


def test_one_dim_input_matches_one_row_image_cpu() -> None:
    x = RNG.integers(0, 255, 33, dtype=np.uint8)
    chain = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")
    np.testing.assert_array_equal(chain(x), chain(x[None, :])[0])


@gpu
def test_one_dim_input_gpu() -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(16, dtype=torch.float32, device="cuda")
    y = _scale("gpu")(x)
    assert tuple(y.shape) == (16,)
    torch.testing.assert_close(y, x * 2 + 1)
    out = torch.empty(16, dtype=torch.float32, device="cuda")
    assert _scale("gpu")(x, out=out) is out
    y_bound = fkl.compose(fkl.TensorRead(x), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(out))()
    torch.testing.assert_close(y_bound, x * 2 + 1)


# ---- fklir.compat -------------------------------------------------------------------------------


def _rotation(angle_degrees: float, center: tuple[float, float]) -> np.ndarray:
    return cv2.getRotationMatrix2D(center, angle_degrees, 1.0)


@pytest.mark.parametrize("channels", [1, 3])
def test_warping_takes_fkl_convention_output_to_source_cpu(channels: int) -> None:
    shape = (40, 64, channels) if channels > 1 else (40, 64)
    x = (RNG.random(shape) * 255).astype(np.float32)
    m = _rotation(30.0, (20.0, 32.0))
    compat = fklc.compose(fklc.TensorRead(), fklc.Warping(m, 64, 40), fklc.TensorWrite(), target="cpu")(x)
    expected = cv2.warpAffine(x, m, (64, 40), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    assert float(np.abs(compat - expected).max()) <= 1e-3
    native = fkl.compose(fkl.TensorRead(), fkl.Warping(m, 64, 40), fkl.TensorWrite(), target="cpu")(x)
    assert float(np.abs(native - cv2.warpAffine(x, m, (64, 40), flags=cv2.INTER_LINEAR)).max()) <= 1e-3
    assert float(np.abs(native - compat).max()) > 1.0  # the silent difference the compat layer removes


def test_warping_perspective_fkl_convention_cpu() -> None:
    x = (RNG.random((40, 64)) * 255).astype(np.float32)
    m = np.vstack([_rotation(-12.0, (30.0, 20.0)), [0.0005, -0.0004, 1.0]])
    got = fklc.compose(fklc.TensorRead(), fklc.Warping(m, 64, 40), fklc.TensorWrite(), target="cpu")(x)
    expected = cv2.warpPerspective(x, m, (64, 40), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    assert float(np.abs(got - expected).max()) <= 1e-3


def test_split_write_returns_one_buffer_of_planes_cpu() -> None:
    x = RNG.integers(0, 255, (6, 7, 3), dtype=np.uint8)
    got = fklc.compose(fklc.TensorRead(), fklc.SplitWrite(), target="cpu")(x)
    assert isinstance(got, np.ndarray) and got.shape == (3, 6, 7)
    np.testing.assert_array_equal(got, x.transpose(2, 0, 1))
    assert got.tobytes() == np.ascontiguousarray(x.transpose(2, 0, 1)).tobytes()


def test_one_dim_input_through_compat_cpu() -> None:
    x = np.arange(16, dtype=np.float32)
    got = fklc.compose(fklc.TensorRead(), fklc.Mul(2.0), fklc.TensorWrite(), target="cpu")(x)
    assert got.shape == (16,)
    np.testing.assert_array_equal(got, x * 2)


def test_compose_divergent_on_a_list_of_images_cpu() -> None:
    images = [RNG.random((4, 8)).astype(np.float32) for _ in range(3)]
    pipe = fklc.compose_divergent(
        [1, 2, 2],
        [fklc.TensorRead(), fklc.Mul(2.0), fklc.TensorWrite()],
        [fklc.TensorRead(), fklc.Add(5.0), fklc.TensorWrite()],
        target="cpu",
    )
    got = pipe(images)
    np.testing.assert_allclose(got, np.stack([images[0] * 2, images[1] + 5, images[2] + 5]), rtol=1e-6)


def test_read_set_takes_fkl_defaults_and_ignores_the_input_cpu() -> None:
    pipe = fklc.compose(fklc.ReadSet(21.0, 8, 4), fklc.Mul(2.0), fklc.Add(1.0), fklc.TensorWrite(), target="cpu")
    np.testing.assert_array_equal(pipe(np.zeros((4, 8), np.float32)), np.full((4, 8), 43.0, np.float32))
    assert fklc.compose(fklc.ReadSet(1.0, 5), fklc.TensorWrite(), target="cpu")().shape == (1, 5)


def test_border_reader_defaults_to_replicate() -> None:
    assert fklc.BorderReader().mode == fkl.BorderReader("replicate").mode


def test_device_buffer_shape_rule() -> None:
    assert fkl_shape(16, 1, 1, 1) == (16,)
    assert fkl_shape(8, 4, 3, 1) == (4, 8, 3)
    assert fkl_shape(8, 4, 1, 5) == (5, 4, 8)
    assert fkl_shape(8, 1, 3, 2) == (2, 1, 8, 3)


def test_environment_variables_warn_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "_warned", set())
    environ = {"FKL_ARCH": "sm_120", "FKL_INCLUDE": "/opt/fkl/include", "FKL_ROOT": "/opt/fkl", "HOME": "/root"}
    with pytest.warns(RuntimeWarning) as record:
        assert environment.warn_ignored(environ) == ["FKL_ARCH", "FKL_INCLUDE", "FKL_ROOT"]
    assert [str(w.message).split()[0] for w in record] == ["FKL_ARCH", "FKL_INCLUDE", "FKL_ROOT"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert environment.warn_ignored(environ) == []


def test_backend_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    from fklir.backend import build

    monkeypatch.setattr(build, "_gpu_backend", None)
    assert fklc.get_backend().kind in ("nvcc", "nvrtc")
    fklc.set_backend("nvrtc")
    assert fklc.get_backend().kind == "nvrtc" == fkl.get_backend()
    with pytest.warns(RuntimeWarning, match="clang"):
        fklc.set_backend("clang")
    assert build._gpu_backend is None
    with pytest.raises(ValueError, match="unknown backend"):
        fklc.set_backend("hipcc")


def test_install_makes_fkl_resolve_to_compat(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("fkl", "fkl.tensor", "fkl.backend"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    fklc.install()
    import fkl  # pyright: ignore[reportMissingImports]
    from fkl.tensor import _DLManagedTensor  # pyright: ignore[reportMissingImports]

    from fklir.runtime.dlpack import DLManagedTensor

    assert fkl is fklc
    assert _DLManagedTensor is DLManagedTensor
    assert sys.modules["fkl.backend"].get_backend().kind in ("nvcc", "nvrtc")
    for name in ("fkl", "fkl.tensor", "fkl.backend"):
        monkeypatch.delitem(sys.modules, name)


SCRIPT = """
import sys
import numpy as np
import fkl
from fkl.tensor import _DLManagedTensor
from helper import scale

pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(scale()), fkl.Add(1.0), fkl.TensorWrite(), target="cpu")
out = pipe(np.arange(4, dtype=np.float32))
print("argv", sys.argv[1:], "name", __name__, "out", out.tolist(), "kind", type(fkl.get_backend()).__name__)
"""


def test_python_m_compat_runs_an_fkl_python_script(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "helper.py").write_text("def scale():\n    return 2.0\n")
    run = subprocess.run(
        [sys.executable, "-m", "fklir.compat", str(tmp_path / "script.py"), "--frames", "3"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "argv ['--frames', '3'] name __main__ out [1.0, 3.0, 5.0, 7.0] kind CompilerBackend" in run.stdout


def test_python_m_compat_usage() -> None:
    run = subprocess.run([sys.executable, "-m", "fklir.compat"], capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "usage" in run.stderr


def test_compat_circular_tensor_defaults_cpu() -> None:
    with pytest.raises(ValueError, match="batch must be >= 2"):
        fklc.CircularTensor(4, 2, 1)
    ct = fklc.CircularTensor(4, 2, 3, "uint8", 3, target="cpu")
    assert ct.order == "newest_first" and ct.layout == "packed"
    for k in range(1, 5):
        ct.update(np.full((2, 4, 3), k, np.uint8))
    assert ct.snapshot()[:, 0, 0, 0].tolist() == [4, 3, 2]


# ---- compat on the GPU --------------------------------------------------------------------------


@gpu
def test_device_buffer_bytes_round_trip() -> None:
    buf = fklc.DeviceBuffer(8, 4, "uint8", channels=3)
    assert buf.shape == (4, 8, 3) and (buf.width, buf.height, buf.channels, buf.planes) == (8, 4, 3, 1)
    data = bytes(RNG.integers(0, 255, 96, dtype=np.uint8))
    buf.copy_from_host(data)
    assert buf.copy_to_host() == data
    buf.copy_from_host(b"\x07" * 10)  # shorter data fills the start, as in fkl-python
    assert buf.copy_to_host() == b"\x07" * 10 + data[10:]
    row = fklc.DeviceBuffer(16)
    assert row.shape == (16,) and row.dtype == np.float32


@gpu
def test_pipelines_give_fkl_device_buffers() -> None:
    x = fklc.DeviceBuffer(16, dtype="float32")
    x.copy_from_host(np.arange(16, dtype=np.float32).tobytes())
    out = fklc.compose(fklc.TensorRead(), fklc.Mul(2.0), fklc.TensorWrite())(x)
    assert isinstance(out, fklc.DeviceBuffer) and out.shape == (16,)
    assert np.frombuffer(out.copy_to_host(), np.float32).tolist() == [2.0 * i for i in range(16)]
    native_out = fkl.DeviceBuffer((16,), "float32")  # an output the caller gives stays what it was
    assert type(fklc.compose(fklc.TensorRead(), fklc.Mul(2.0), fklc.TensorWrite())(x, out=native_out)) is type(
        native_out
    )
    bound = fklc.compose(fklc.TensorRead(x), fklc.Mul(2.0), fklc.TensorWrite(native_out))
    assert bound() is native_out and type(native_out) is fkl.DeviceBuffer
    planes = fklc.compose(fklc.TensorRead(), fklc.SplitWrite())(fklc.DeviceBuffer(8, 4, "uint8", channels=3))
    assert isinstance(planes, fklc.DeviceBuffer) and planes.shape == (3, 4, 8) and planes.planes == 3


@gpu
def test_warping_fkl_convention_gpu() -> None:
    x = (RNG.random((40, 64, 3)) * 255).astype(np.float32)
    m = _rotation(30.0, (20.0, 32.0))
    src = fklc.DeviceBuffer(64, 40, "float32", channels=3)
    src.copy_from_host(x.tobytes())
    out = fklc.compose(fklc.TensorRead(), fklc.Warping(m, 64, 40), fklc.TensorWrite())(src)
    got = np.frombuffer(out.copy_to_host(), np.float32).reshape(40, 64, 3)
    expected = cv2.warpAffine(x, m, (64, 40), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    assert float(np.abs(got - expected).max()) <= 1e-3


@gpu
def test_compat_circular_tensor_snapshot_gpu() -> None:
    ct = fklc.CircularTensor(4, 2, 3, "uint8", channels=3, layout="planar", out_dtype="float32")
    for k in range(1, 5):
        frame = fklc.DeviceBuffer(4, 2, "uint8", channels=3)
        frame.copy_from_host(bytes([k]) * 24)
        ct.update(frame, ops=[fklc.Cast("float32"), fklc.Mul(2.0)])
    snap = ct.snapshot()
    assert isinstance(snap, fklc.DeviceBuffer) and snap.shape == (9, 2, 4) and snap.planes == 9
    planes = np.frombuffer(snap.copy_to_host(), np.float32).reshape(3, 3, 2, 4)
    assert planes[:, 0, 0, 0].tolist() == [8.0, 6.0, 4.0]  # newest first


GPU_SCRIPT = """
import struct
import fkl

W, H = 8, 4
src = [float(i) for i in range(W * H)]
x = fkl.DeviceBuffer(W, H, "float32")
x.copy_from_host(struct.pack(f"{W * H}f", *src))
out = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite())(x)
assert list(struct.unpack(f"{W * H}f", out.copy_to_host())) == [v * 2 + 1 for v in src]
div = fkl.compose_divergent(
    [1, 2], [fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite()], [fkl.TensorRead(), fkl.Add(5.0), fkl.TensorWrite()]
)
both = struct.unpack(f"{2 * W * H}f", div([x, x]).copy_to_host())
assert list(both) == [v * 2 for v in src] + [v + 5 for v in src]
ct = fkl.CircularTensor(W, H, batch=2, dtype="float32")
ct.update(x).update(out)
assert struct.unpack(f"{2 * W * H}f", ct.snapshot().copy_to_host())[0] == 1.0  # newest first
print("OK", fkl.get_backend().kind)
"""


@gpu
def test_python_m_compat_runs_a_gpu_fkl_python_script(tmp_path: Path) -> None:
    (tmp_path / "example.py").write_text(GPU_SCRIPT)
    run = subprocess.run(
        [sys.executable, "-m", "fklir.compat", str(tmp_path / "example.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("OK n")
