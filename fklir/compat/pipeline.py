"""fkl-python's compose() and compose_divergent(): fklir's pipelines, whose DeviceBuffer results are given
back as fkl-python DeviceBuffers (bytes out), and whose ReadSet chains take (and ignore) the input
fkl-python scripts pass them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fklir.compat.tensor import DeviceBuffer
from fklir.frontend import ops as fops
from fklir.jit.pipeline import DivergentPipeline, Pipeline
from fklir.runtime import device_buffer as native


def as_fkl(result: Any, out: object) -> Any:
    """A pipeline's result as fkl-python gives it: a DeviceBuffer the pipeline allocated becomes an
    fkl-python DeviceBuffer (the same object, no copy); an output the caller gave stays as it is."""
    return DeviceBuffer.adopt(result) if out is None and type(result) is native.DeviceBuffer else result


class FusedKernel(Pipeline):
    """fkl-python's composed chain: fklir's Pipeline (same calls: k(x), k(x, out=y), k(x, stream=s), k())."""

    def __call__(self, x: object = None, out: object = None, stream: object = None) -> Any:
        if self.generator is not None:
            x = None  # fkl-python scripts pass ReadSet chains an input for its size; the size is ReadSet's
        given = out if out is not None or self._bound is None else self._bound.dst  # TensorWrite(out)'s
        return as_fkl(super().__call__(x, out, stream), given)


class DivergentKernel(DivergentPipeline):
    """fkl-python's divergent chain: fklir's DivergentPipeline, called on a list of images (one per plane)."""

    def __call__(self, x: object = None, out: object = None, stream: object = None) -> Any:
        return as_fkl(super().__call__(x, out, stream), out)


def compose(*ops: fops.Op, target: str = "gpu", thread_fusion: bool = False) -> FusedKernel:
    """fkl-python's compose(). `thread_fusion` is accepted and has no effect: fklir's kernels always give
    each thread whole 16-byte vectors where the chain allows it."""
    del thread_fusion
    return FusedKernel(ops, target)


def compose_divergent(
    plane_map: object, *chains: Sequence[fops.Op] | Pipeline, target: str | None = None
) -> DivergentKernel:
    return DivergentKernel(plane_map, chains, target)
