"""Random valid DAGs for the property tests (SPEC §8): each a chain of the pool (tests/unit/property_chains.py)
with a branch joined into it (Add ... Min, AbsDiff, Div on floats) after its geometry and some of its compute
ops, the branch reading a second input of another size and resizing it (nearest: the chain's type) to the
chain's size there, or (`direct`) an input of the chain's size as it is (a chain without geometry then makes
a flat DAG kernel), and for some a MidWrite right after the join. The structures are a fixed, seeded pool, so
a run compiles a bounded set of kernels; hypothesis draws the values, sizes and images."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import fklir as fkl
from fklir.dialects import fkl as fkl_ir
from fklir.frontend.lowering import lower_graph, run_passes
from fklir.frontend.ops import Geometry, out_sizes
from fklir.interpreters.fkl import run_module
from fklir.jit.signature import input_signature
from fklir.passes.infer_types import InferTypesPass
from tests.unit.property_chains import FLOATS, TEMPLATES, Drawn, Template, _after, _geometry_type, chains

_JOINS = {"add": fkl.Add, "sub": fkl.Sub, "mul": fkl.Mul, "max": fkl.Max, "min": fkl.Min, "absdiff": fkl.AbsDiff}


@dataclass(frozen=True)
class DagTemplate:
    chain: Template
    at: int  # the chain's compute ops before the join
    kind: str  # the join
    mid: bool  # a MidWrite right after the join
    direct: bool  # the branch reads an input of the chain's size, no geometry


def _join_points(t: Template) -> list[tuple[int, str, int]]:
    """(compute ops before, dtype, channels) where a branch can join: a numeric type numpy holds."""
    dtype, channels = _geometry_type(t.geometry, t.dtype), t.channels
    points = [(0, dtype, channels)]
    for i, token in enumerate(t.compute, start=1):
        dtype, channels = _after(token, dtype, channels)
        points.append((i, dtype, channels))
    return [p for p in points if p[1] not in ("bool", "bfloat16")]


def make_dag_templates(count: int, seed: int = 2026) -> list[DagTemplate]:
    rng = random.Random(seed)
    eligible = [t for t in TEMPLATES if t.composable and not t.per_image and _join_points(t)]
    pool: list[DagTemplate] = []
    flat = [t for t in eligible if not t.geometry]  # a direct branch into one of these: a flat DAG kernel
    while len(pool) < count:
        direct = rng.random() < 0.4
        t = rng.choice(flat if direct and flat else eligible)
        at, dtype, _ = rng.choice(_join_points(t))
        kinds = [*_JOINS, *(["div"] if dtype in FLOATS else [])]
        pool.append(DagTemplate(t, at, rng.choice(kinds), rng.random() < 0.5, direct))
    return pool


DAG_TEMPLATES = make_dag_templates(24)


@dataclass
class DrawnDag:
    ops: list[Any]
    inputs: list[np.ndarray]
    template: DagTemplate


def _point_type(t: Template, at: int) -> tuple[str, int]:
    return next((d, c) for i, d, c in _join_points(t) if i == at)


@st.composite
def dags(draw: Any, templates: list[DagTemplate] = DAG_TEMPLATES) -> DrawnDag:
    dt: DagTemplate = draw(st.sampled_from(templates))
    chain: Drawn = draw(chains([dt.chain]))
    assert chain.x is not None
    t, ops = dt.chain, list(chain.ops)
    geometry = [op for op in ops if isinstance(op, Geometry)]
    sig, width, height = input_signature(chain.x.shape, t.dtype)
    (w, h), *_ = out_sizes(geometry, [(width, height)] * sig.planes)
    dtype, channels = _point_type(t, dt.at)
    bw, bh = (w, h) if dt.direct else (draw(st.integers(1, 23)), draw(st.integers(1, 19)))
    # a batch keeps its channel axis: (B, H, W) would read as one image of W channels when W is 2..4
    shape = (sig.planes, bh, bw, channels) if sig.batched else (bh, bw, *((channels,) if channels > 1 else ()))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    if dtype in FLOATS:
        other = (rng.random(shape) * 200 - 100).astype(dtype)
    else:
        info = np.iinfo(dtype)
        other = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
    if dt.kind == "div":
        other[other == 0] = 1
    branch = fkl.Input(1) if dt.direct else fkl.Input(1, fkl.Resize(w, h, "nearest"))
    join = fkl.Div(branch) if dt.kind == "div" else _JOINS[dt.kind](branch)
    at = 1 + len(t.geometry) + dt.at
    ops[at:at] = [join, *([fkl.MidWrite()] if dt.mid else [])]
    return DrawnDag(ops, [chain.x, other], dt)


def reference(drawn: DrawnDag) -> list[Any]:
    """The reference interpreter on the frontend's IR of the graph (types inferred, no other pass)."""
    sources = []
    for x in drawn.inputs:
        sig, _, _ = input_signature(x.shape, str(x.dtype))
        sources.append(fkl_ir.ImageType(sig.dtype, sig.channels, sig.planes))
    module = run_passes(lower_graph(drawn.ops, sources), (InferTypesPass(),))
    outputs = run_module(module, {"src": drawn.inputs[0], "in1": drawn.inputs[1]})
    return [outputs[f"out{k}"] for k in range(len(outputs))]


def run_dag(drawn: DrawnDag, target: str) -> tuple[list[Any], list[Any]]:
    """(outputs in the reference's layouts, reference outputs) on one target."""
    expected = reference(drawn)
    inputs: list[Any] = drawn.inputs
    if target == "gpu":
        from fklir.runtime.device_buffer import DeviceBuffer

        inputs = [DeviceBuffer.from_host(x) for x in inputs]
    got = fkl.compose(*drawn.ops, target=target)(*inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    hosted = [g if isinstance(g, np.ndarray) else g.copy_to_host() for g in got]
    return [g.reshape(e.shape) for g, e in zip(hosted, expected, strict=True)], expected
