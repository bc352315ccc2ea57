"""The shipped nv12_to_rgb kernel (fklir/kernels/nv12_to_rgb) against independent references: cv2.cvtColor
(COLOR_YUV2RGB_NV12 / BGR, BT.601 limited range) exactly, and the ITU-R BT.601 / BT.709 matrices in numpy
float64 within ±1, on even-but-odd-looking sizes, batches, random and extreme frames, both input layouts,
packed and planar outputs; the Highway CPU version against its plain C++ twin bit for bit (or, without
libhwy-dev, the error naming it); every error path; on the GPU, torch, CuPy and DeviceBuffer inputs
against the CPU's results, on both compilers and the caller's stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cv2
import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build, compilers
from fklir.jit import highway
from fklir.kernels import nv12_to_rgb as nv12_module
from fklir.kernels.nv12_to_rgb import nv12_to_rgb

RNG = np.random.default_rng(1612)
gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")

SIZES = [(2, 2), (34, 18), (18, 34), (66, 130), (6, 38)]  # (H, W): even, but not multiples of 4, 8 or 16
# ITU-R (Kr, Kb), written out here rather than taken from the module: the reference must not share its
# numbers with the code it checks.
KR_KB = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}


def random_frames(shape: tuple[int, ...], height: int, width: int) -> np.ndarray[Any, Any]:
    """`shape` frames in cv2's single-buffer layout (..., H * 3 / 2, W), random bytes."""
    return RNG.integers(0, 256, (*shape, height * 3 // 2, width), dtype=np.uint8)


def planes(frames: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The (Y, UV) planes of single-buffer frames, as separate contiguous arrays."""
    height = frames.shape[-2] * 2 // 3
    width = frames.shape[-1]
    y = np.ascontiguousarray(frames[..., :height, :])
    uv = np.ascontiguousarray(frames[..., height:, :]).reshape(*frames.shape[:-2], height // 2, width // 2, 2)
    return y, uv


def cv2_reference(frames: np.ndarray[Any, Any], order: str = "RGB") -> np.ndarray[Any, Any]:
    code = cv2.COLOR_YUV2RGB_NV12 if order == "RGB" else cv2.COLOR_YUV2BGR_NV12
    if frames.ndim == 2:
        return cv2.cvtColor(frames, code)
    return np.stack([cv2.cvtColor(frame, code) for frame in frames])


def matrix_reference(frames: np.ndarray[Any, Any], standard: str, full_range: bool) -> np.ndarray[Any, Any]:
    """The standard's YCbCr -> RGB in float64, rounded and saturated: (..., H, W, 3) RGB. Limited range
    expands Y from 16..235 and Cb, Cr from 16..240 (a Y below 16 is black, as in OpenCV); each chroma
    sample serves its 2x2 pixels."""
    y, uv = planes(frames)
    chroma = uv.astype(np.float64).repeat(2, axis=-3).repeat(2, axis=-2) - 128
    cb, cr = chroma[..., 0], chroma[..., 1]
    luma = y.astype(np.float64)
    if not full_range:
        luma = (np.maximum(luma, 16) - 16) * 255 / 219
        cb, cr = cb * 255 / 224, cr * 255 / 224
    kr, kb = KR_KB[standard]
    kg = 1 - kr - kb
    r = luma + 2 * (1 - kr) * cr
    g = luma - 2 * kr * (1 - kr) / kg * cr - 2 * kb * (1 - kb) / kg * cb
    b = luma + 2 * (1 - kb) * cb
    return np.clip(np.rint(np.stack([r, g, b], axis=-1)), 0, 255).astype(np.uint8)


def max_difference(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> int:
    return int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())


# ----- CPU: against cv2 and the standards --------------------------------------------------------------


@pytest.mark.parametrize(("height", "width"), SIZES)
@pytest.mark.parametrize("order", ["RGB", "BGR"])
def test_single_buffer_equals_cv2(height: int, width: int, order: str) -> None:
    frame = random_frames((), height, width)
    np.testing.assert_array_equal(nv12_to_rgb(frame, order=order), cv2_reference(frame, order))


@pytest.mark.parametrize(("height", "width"), SIZES)
def test_two_planes_equal_the_single_buffer(height: int, width: int) -> None:
    frames = random_frames((3,), height, width)
    y, uv = planes(frames)
    np.testing.assert_array_equal(nv12_to_rgb(y, uv), cv2_reference(frames))
    np.testing.assert_array_equal(nv12_to_rgb(y[1], uv[1]), cv2_reference(frames[1]))


@pytest.mark.parametrize("value", [0, 255])
def test_extreme_frames_equal_cv2(value: int) -> None:
    constant = np.full((34 * 3 // 2, 18), value, np.uint8)
    np.testing.assert_array_equal(nv12_to_rgb(constant), cv2_reference(constant))
    extremes = RNG.choice(np.array([0, 255], np.uint8), (4, 34 * 3 // 2, 18))
    np.testing.assert_array_equal(nv12_to_rgb(extremes), cv2_reference(extremes))


def test_batch_equals_cv2_per_frame() -> None:
    frames = random_frames((5,), 66, 130)
    np.testing.assert_array_equal(nv12_to_rgb(frames), cv2_reference(frames))


@pytest.mark.parametrize("standard", ["bt601", "bt709"])
@pytest.mark.parametrize("full_range", [False, True])
@pytest.mark.parametrize(("height", "width"), [(34, 18), (66, 130)])
def test_standards_and_ranges_within_one_of_the_matrix(
    standard: str, full_range: bool, height: int, width: int
) -> None:
    frames = random_frames((2,), height, width)
    frames[0, :2] = 0  # the extremes of Y (and of UV in the last rows) on every run
    frames[0, 2:4] = 255
    frames[1, -1] = RNG.choice(np.array([0, 255], np.uint8), width)
    got = nv12_to_rgb(frames, standard=standard, full_range=full_range)
    assert max_difference(got, matrix_reference(frames, standard, full_range)) <= 1
    bgr = nv12_to_rgb(frames, standard=standard, full_range=full_range, order="BGR")
    np.testing.assert_array_equal(bgr, got[..., ::-1])


@pytest.mark.parametrize("order", ["RGB", "BGR"])
@pytest.mark.parametrize("normalize", [False, True])
def test_planar_float32_is_the_packed_result(order: str, normalize: bool) -> None:
    frames = random_frames((2,), 34, 18)
    packed = nv12_to_rgb(frames, order=order, standard="bt709")
    planar = nv12_to_rgb(frames, order=order, standard="bt709", dtype="float32", normalize=normalize)
    assert planar.dtype == np.float32 and planar.shape == (2, 3, 34, 18)
    expected = packed.transpose(0, 3, 1, 2).astype(np.float32)
    np.testing.assert_allclose(planar, expected / 255 if normalize else expected, rtol=1e-6, atol=0)
    single = nv12_to_rgb(frames[0], dtype="float32")
    assert single.shape == (3, 34, 18)
    np.testing.assert_array_equal(single, cv2_reference(frames[0]).transpose(2, 0, 1))


def test_out_is_written_and_returned() -> None:
    frame = random_frames((), 34, 18)
    out = np.zeros((34, 18, 3), np.uint8)
    assert nv12_to_rgb(frame, out=out) is out
    np.testing.assert_array_equal(out, cv2_reference(frame))
    planar = np.zeros((3, 34, 18), np.float32)
    assert nv12_to_rgb(frame, dtype="float32", out=planar) is planar
    np.testing.assert_array_equal(planar, cv2_reference(frame).transpose(2, 0, 1))


def test_pitched_planes() -> None:
    """Y and UV rows with a pitch beyond the width (a decoder's surface), and a strided batch."""
    frames = random_frames((3,), 34, 18)
    y, uv = planes(frames)
    y_surface = np.zeros((3, 34, 32), np.uint8)
    y_surface[..., :18] = y
    uv_surface = np.zeros((3, 17, 16, 2), np.uint8)
    uv_surface[..., :9, :] = uv
    got = nv12_to_rgb(y_surface[..., :18], uv_surface[..., :9, :])
    np.testing.assert_array_equal(got, cv2_reference(frames))
    np.testing.assert_array_equal(nv12_to_rgb(frames[::2]), cv2_reference(frames[::2]))


def test_torch_cpu_tensors() -> None:
    torch = pytest.importorskip("torch")
    frames = random_frames((2,), 34, 18)
    got = nv12_to_rgb(torch.from_numpy(frames), order="BGR")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.uint8
    np.testing.assert_array_equal(got.numpy(), cv2_reference(frames, "BGR"))


# ----- Highway -----------------------------------------------------------------------------------------


@pytest.mark.skipif(not highway.highway_available(), reason="needs libhwy-dev")
@pytest.mark.parametrize(("height", "width"), [*SIZES, (1080, 1920), (4, 1918)])
@pytest.mark.parametrize(("standard", "full_range"), [("bt601", False), ("bt709", True)])
def test_highway_equals_plain_cpp(height: int, width: int, standard: str, full_range: bool) -> None:
    frames = random_frames((2,), height, width)
    for order in ("RGB", "BGR"):
        options: dict[str, Any] = {"standard": standard, "full_range": full_range, "order": order}
        plain = nv12_to_rgb(frames, highway=False, **options)
        np.testing.assert_array_equal(nv12_to_rgb(frames, highway=True, **options), plain)
        np.testing.assert_array_equal(nv12_to_rgb(frames, **options), plain)  # the default: Highway


@pytest.fixture
def without_highway(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A compiler that does not find Highway's header, and a Highway kernel not yet built."""
    nv12_module.highway_kernel.cache_clear()
    monkeypatch.setattr(highway, "highway_available", lambda: False)
    yield
    nv12_module.highway_kernel.cache_clear()


@pytest.mark.usefixtures("without_highway")
def test_without_highway_the_error_names_the_package() -> None:
    frame = random_frames((), 34, 18)
    message = r"^nv12_to_rgb_packed_hwy: its cpu= source uses Google Highway, .* install Debian's libhwy-dev"
    with pytest.raises(RuntimeError, match=message):
        nv12_to_rgb(frame, highway=True)
    np.testing.assert_array_equal(nv12_to_rgb(frame), cv2_reference(frame))  # the default: plain C++


def test_highway_kernels_link_libhwy() -> None:
    assert nv12_module.highway_kernel().link_flags == ("-lhwy",)
    assert nv12_module.PACKED.link_flags == ()


# ----- errors ------------------------------------------------------------------------------------------


def test_odd_sizes_are_refused() -> None:
    odd = r"^nv12_to_rgb: NV12 needs an even width and height \(a chroma sample per 2x2 pixels\), got "
    with pytest.raises(ValueError, match=odd + "width 17$"):
        nv12_to_rgb(np.zeros((51, 17), np.uint8))
    with pytest.raises(ValueError, match=odd + "width 17$"):
        nv12_to_rgb(np.zeros((2, 34, 17), np.uint8), np.zeros((2, 17, 8, 2), np.uint8))
    with pytest.raises(ValueError, match=odd + "height 33$"):
        nv12_to_rgb(np.zeros((33, 34), np.uint8), np.zeros((16, 17, 2), np.uint8))
    # a single buffer of an odd height has no whole number of rows: H * 3 / 2 is refused as such
    with pytest.raises(ValueError, match=r"^nv12_to_rgb: frame has 50 rows, not H \* 3 / 2"):
        nv12_to_rgb(np.zeros((50, 34), np.uint8))


def test_errors() -> None:
    frame = random_frames((), 34, 18)
    y, uv = planes(frame)
    cases: list[tuple[type[Exception], str, dict[str, Any], tuple[Any, ...]]] = [
        (ValueError, r"order must be one of RGB, BGR, got 'rgb'", {"order": "rgb"}, (frame,)),
        (
            ValueError,
            r"dtype must be uint8 \(packed\) or float32 \(planar\), got 'float16'",
            {"dtype": "float16"},
            (frame,),
        ),
        (ValueError, r"normalize=True scales the float32 output", {"normalize": True}, (frame,)),
        (ValueError, r"standard must be one of bt601, bt709, got 'bt2020'", {"standard": "bt2020"}, (frame,)),
        (TypeError, r"frame must be uint8, got float32", {}, (frame.astype(np.float32),)),
        (ValueError, r"frame must be \(H \* 3 / 2, W\) or \(B, H \* 3 / 2, W\)", {}, (frame[None, None],)),
        (
            ValueError,
            r"uv must be \(17, 9, 2\) \(H / 2, W / 2, 2\) for y of shape \(34, 18\), got \(17, 8, 2\)",
            {},
            (y, uv[:, :8]),
        ),
        (TypeError, r"uv must be uint8, got uint16", {}, (y, uv.astype(np.uint16))),
        (
            ValueError,
            r"out must be uint8 of shape \(34, 18, 3\), got uint8 of shape \(18, 34, 3\)",
            {"out": np.zeros((18, 34, 3), np.uint8)},
            (frame,),
        ),
        (
            ValueError,
            r"out must be float32 of shape \(3, 34, 18\), got uint8",
            {"out": np.zeros((3, 34, 18), np.uint8), "dtype": "float32"},
            (frame,),
        ),
        (
            ValueError,
            r"highway=True is for the CPU's packed uint8 output",
            {"highway": True, "dtype": "float32"},
            (frame,),
        ),
        (ValueError, r"the CPU target has no streams", {"stream": 0}, (frame,)),
    ]
    for error, message, options, args in cases:
        prefix = "" if "CPU target" in message else "^nv12_to_rgb: "
        with pytest.raises(error, match=prefix + message):
            nv12_to_rgb(*args, **options)


# ----- GPU ---------------------------------------------------------------------------------------------


@pytest.fixture(params=["nvcc", "nvrtc"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each GPU test on both compilers, the caller's choice restored after."""
    name = str(request.param)
    if not (compilers.nvcc_available() if name == "nvcc" else compilers.nvrtc_available()):
        pytest.skip(f"needs {name}")
    previous = build._gpu_backend  # pyright: ignore[reportPrivateUsage]
    fkl.set_backend(name)
    yield name
    fkl.set_backend(previous)


# The packed kernel's paths (nv12_to_rgb.cuh): 3840 and 1920 are whole warps of 16-pixel runs in 16-byte
# vectors; 1040 ends in a warp with one run; 1048 (8 mod 16) takes 8-byte vectors and ends in a partial run (the
# byte path); 1004 (4 mod 8) takes the byte path; the SIZES are narrower than a run.
GPU_SIZES = [*SIZES, (1080, 1920), (4, 260), (6, 3840), (4, 1040), (4, 1048), (2, 1004)]


@gpu
@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(("height", "width"), GPU_SIZES)
def test_gpu_torch_equals_cv2(height: int, width: int) -> None:
    torch = pytest.importorskip("torch")
    frames = random_frames((3,), height, width)
    on_gpu = torch.from_numpy(frames).cuda()
    for order in ("RGB", "BGR"):
        got = nv12_to_rgb(on_gpu, order=order)
        assert got.is_cuda and got.shape == (3, height, width, 3)
        np.testing.assert_array_equal(got.cpu().numpy(), cv2_reference(frames, order))
    y, uv = planes(frames)
    got = nv12_to_rgb(torch.from_numpy(y[0]).cuda(), torch.from_numpy(uv[0]).cuda())
    np.testing.assert_array_equal(got.cpu().numpy(), cv2_reference(frames[0]))


@gpu
@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(("standard", "full_range"), [("bt601", False), ("bt601", True), ("bt709", False)])
@pytest.mark.parametrize("normalize", [False, True])
def test_gpu_planar_and_standards_equal_the_cpu(standard: str, full_range: bool, normalize: bool) -> None:
    torch = pytest.importorskip("torch")
    frames = random_frames((2,), 66, 130)
    options: dict[str, Any] = {"standard": standard, "full_range": full_range, "order": "BGR"}
    on_gpu = torch.from_numpy(frames).cuda()
    np.testing.assert_array_equal(nv12_to_rgb(on_gpu, **options).cpu().numpy(), nv12_to_rgb(frames, **options))
    planar = nv12_to_rgb(on_gpu, dtype="float32", normalize=normalize, **options)
    assert planar.shape == (2, 3, 66, 130)
    np.testing.assert_array_equal(
        planar.cpu().numpy(), nv12_to_rgb(frames, dtype="float32", normalize=normalize, **options)
    )


@gpu
def test_gpu_pitched_and_misaligned() -> None:
    """Pitched Y/UV views, and a packed out at an odd address: the byte path."""
    torch = pytest.importorskip("torch")
    frames = random_frames((2,), 34, 18)
    y, uv = planes(frames)
    y_surface = torch.zeros((2, 34, 32), dtype=torch.uint8, device="cuda")
    y_surface[..., :18] = torch.from_numpy(y).cuda()
    uv_surface = torch.zeros((2, 17, 16, 2), dtype=torch.uint8, device="cuda")
    uv_surface[..., :9, :] = torch.from_numpy(uv).cuda()
    got = nv12_to_rgb(y_surface[..., :18], uv_surface[..., :9, :])
    np.testing.assert_array_equal(got.cpu().numpy(), cv2_reference(frames))
    storage = torch.zeros(1 + 34 * 20 * 3, dtype=torch.uint8, device="cuda")
    out = storage[1:].view(34, 20, 3)
    frame = random_frames((), 34, 20)
    nv12_to_rgb(torch.from_numpy(frame).cuda(), out=out)
    np.testing.assert_array_equal(out.cpu().numpy(), cv2_reference(frame))


@gpu
@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("offset", [0, 1, 8, 16])
def test_gpu_offset_views(offset: int) -> None:
    """Input and output views `offset` bytes into their storage, on a width of whole runs: 0 and 16 take
    16-byte vectors, 8 takes 8-byte ones, 1 the byte path."""
    torch = pytest.importorskip("torch")
    height, width = 6, 1024
    frames = random_frames((2,), height, width)
    size = frames.size
    source = torch.zeros(offset + size, dtype=torch.uint8, device="cuda")
    source[offset:] = torch.from_numpy(frames.reshape(-1)).cuda()
    target = torch.zeros(offset + 2 * height * width * 3, dtype=torch.uint8, device="cuda")
    out = target[offset:].view(2, height, width, 3)
    nv12_to_rgb(source[offset:].view(frames.shape), out=out)
    np.testing.assert_array_equal(out.cpu().numpy(), cv2_reference(frames))


@gpu
def test_gpu_cupy_and_device_buffer() -> None:
    frames = random_frames((2,), 34, 18)
    expected = cv2_reference(frames)
    buffer = fkl.DeviceBuffer.from_host(frames)
    got = nv12_to_rgb(buffer)
    assert isinstance(got, fkl.DeviceBuffer)
    np.testing.assert_array_equal(got.copy_to_host(), expected)
    y, uv = planes(frames[0])
    got = nv12_to_rgb(fkl.DeviceBuffer.from_host(y), fkl.DeviceBuffer.from_host(uv))
    np.testing.assert_array_equal(got.copy_to_host(), expected[0])
    cupy = pytest.importorskip("cupy")
    got = nv12_to_rgb(cupy.asarray(frames), dtype="float32")
    np.testing.assert_array_equal(cupy.asnumpy(got), expected.transpose(0, 3, 1, 2))


@gpu
def test_gpu_caller_stream() -> None:
    torch = pytest.importorskip("torch")
    frames = random_frames((4,), 66, 130)
    on_gpu = torch.from_numpy(frames).cuda()
    out = torch.empty((4, 66, 130, 3), dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        nv12_to_rgb(on_gpu, out=out, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), cv2_reference(frames))


@gpu
def test_gpu_misaligned_planar_out_is_refused() -> None:
    torch = pytest.importorskip("torch")
    frame = torch.from_numpy(random_frames((), 34, 18)).cuda()
    storage = torch.zeros(1 + 3 * 34 * 18, dtype=torch.float32, device="cuda")
    with pytest.raises(ValueError, match=r"^nv12_to_rgb: a GPU out must start at a multiple of 8 bytes"):
        nv12_to_rgb(frame, dtype="float32", out=storage[1:].view(3, 34, 18))


@gpu
@pytest.mark.usefixtures("backend")
def test_gpu_repeated_calls_on_a_stream_convert_each_call_s_frames() -> None:
    """Calls on arrays like the last ones on a caller's stream (jit/warm_calls.py): each converts its own
    frames, into its own out or a new one, packed and planar, in either order."""
    torch = pytest.importorskip("torch")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    frames = [random_frames((2,), 66, 130) for _ in range(4)]
    with torch.cuda.stream(stream):
        on_gpu = [torch.from_numpy(f).cuda() for f in frames]
        outs = [torch.empty((2, 66, 130, 3), dtype=torch.uint8, device="cuda") for _ in frames]
        into = [
            nv12_to_rgb(f, order=("RGB", "BGR")[i % 2], out=o, stream=stream)
            for i, (f, o) in enumerate(zip(on_gpu, outs, strict=True))
        ]
        made = [nv12_to_rgb(f, dtype="float32", normalize=True, stream=stream) for f in on_gpu]
    stream.synchronize()
    assert all(a is b for a, b in zip(into, outs, strict=True))
    for i, (f, out, planar) in enumerate(zip(frames, outs, made, strict=True)):
        np.testing.assert_array_equal(out.cpu().numpy(), cv2_reference(f, ("RGB", "BGR")[i % 2]))
        expected = cv2_reference(f).transpose(0, 3, 1, 2).astype(np.float32) * np.float32(1 / 255)
        np.testing.assert_allclose(planar.cpu().numpy(), expected, rtol=0, atol=1e-7)
