"""Shipped fkl.jit kernels (SPEC §6.2), one package each in the seed's layout: `<name>/<name>.cuh` (the
CUDA source), `<name>/<name>.cpp` (the C++ source) and `<name>/__init__.py` (the kernel's declaration and
its Python function). Import the one you use, e.g. `from fklir.kernels.nv12_to_rgb import nv12_to_rgb`."""
