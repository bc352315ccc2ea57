"""Property-based differential test of DAGs (SPEC §8): random chains of the pool with a branch joined in
(tests/unit/property_dags.py) give on the CPU target what the reference interpreter gives, every output —
exactly for integer outputs, to a few ulps for floats; on the device, the GPU target likewise."""

from __future__ import annotations

import pytest
from hypothesis import given

import fklir as fkl
from tests.unit.property_chains import TARGETS, assert_same, longer_run, property_settings
from tests.unit.property_dags import DAG_TEMPLATES, DrawnDag, dags, make_dag_templates, run_dag

SEEDS, EXAMPLES = longer_run()


@property_settings(120)
@given(dags())
def test_random_dags_cpu_equals_reference(drawn: DrawnDag) -> None:
    got, expected = run_dag(drawn, "cpu")
    what = f"{drawn.template} {[op.op_name for op in drawn.ops]}"
    assert len(got) == len(expected) == 1 + drawn.template.mid, what
    for out, ref in zip(got, expected, strict=True):
        assert_same(out, ref, what)


def test_the_dag_pool_joins_every_kind() -> None:
    kinds = {t.kind for t in DAG_TEMPLATES}
    assert {"add", "sub", "mul", "max", "min", "absdiff"} <= kinds
    assert any(t.mid for t in DAG_TEMPLATES) and not all(t.mid for t in DAG_TEMPLATES)
    # flat DAG kernels: a branch read as it is into a chain without geometry
    assert any(t.direct and not t.chain.geometry for t in DAG_TEMPLATES)


@pytest.mark.gpu
@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
@property_settings(40)
@given(dags())
def test_random_dags_gpu_equals_reference(drawn: DrawnDag) -> None:
    got, expected = run_dag(drawn, "gpu")
    what = f"{drawn.template} {[op.op_name for op in drawn.ops]}"
    for out, ref in zip(got, expected, strict=True):
        assert_same(out, ref, what)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", SEEDS)
def test_more_dag_pools_equal_reference(seed: int, target: str) -> None:
    """A longer run (FKLIR_PROPERTY_SEEDS, docs/testing.md): random DAGs of other seeded pools."""

    @property_settings(max(1, EXAMPLES // 2))
    @given(dags(make_dag_templates(24, seed)))
    def check(drawn: DrawnDag) -> None:
        got, expected = run_dag(drawn, target)
        for out, ref in zip(got, expected, strict=True):
            assert_same(out, ref, f"seed {seed}: {drawn.template} {[op.op_name for op in drawn.ops]}")

    check()
