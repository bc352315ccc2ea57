"""CuPy and DLPack interop (GPU only): a CuPy array goes in and a CuPy array comes out on the same
device, with no copy through the host; the pipeline runs on CuPy's current stream when given it
(no synchronisation), and an fklir DeviceBuffer output is handed to CuPy through DLPack, which moves
ownership to CuPy.

The chain turns a BGR uint8 image into grey float32 in [0, 1]; both results are checked against the
same formula computed by CuPy. Without a GPU or CuPy it prints `skipped:` and exits 0.
"""

from __future__ import annotations

import numpy as np
from common import skip, target

import fklir as fkl


def main() -> None:
    if target(__doc__) != "gpu" or not fkl.gpu_available():
        skip("needs a CUDA GPU (this example has no CPU form: CuPy arrays live on the GPU)")
    try:
        import cupy as cp
    except ImportError:
        skip("CuPy is not installed (pip install -e '.[cupy]')")

    host = np.random.default_rng(2).integers(0, 256, (233, 317, 3), dtype=np.uint8)
    image = cp.asarray(host)
    pipe = fkl.compose(
        fkl.TensorRead(), fkl.ColorConversion("BGR2GRAY"), fkl.Cast("float32"), fkl.Mul(1 / 255), fkl.TensorWrite()
    )
    # 8-bit grey is OpenCV's fixed-point formula (SPEC §3), exact on every colour.
    b, g, r = (image[..., i].astype(cp.int32) for i in range(3))
    expected = ((9798 * r + 19235 * g + 3735 * b + 16384) >> 15).astype(cp.float32) * cp.float32(1 / 255)

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        grey = pipe(image, stream=stream)  # CuPy in -> CuPy out, on the caller's stream: no sync
    stream.synchronize()
    assert isinstance(grey, cp.ndarray) and grey.shape == (233, 317) and grey.dtype == cp.float32, type(grey)
    assert float(cp.abs(grey - expected).max()) < 1e-6

    buffer = pipe(fkl.DeviceBuffer.from_host(host))  # DeviceBuffer in -> DeviceBuffer out
    as_cupy = cp.from_dlpack(buffer)  # DLPack: CuPy owns the memory from here on
    assert float(cp.abs(as_cupy - expected).max()) < 1e-6
    print("gpu: CuPy -> fklir -> CuPy on a caller's stream and DeviceBuffer -> DLPack -> CuPy, both exact")


if __name__ == "__main__":
    main()
