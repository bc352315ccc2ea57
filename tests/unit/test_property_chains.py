"""Property-based differential test: random valid chains (random ops, element types, channel
counts, odd image sizes, planes) give on the CPU target what the reference interpreter gives —
exactly for integer and bool outputs, to a few ulps for floats.

The structures come from a fixed, seeded pool (tests/unit/property_chains.py) and hypothesis draws
values, sizes and images freely, so a run compiles a bounded number of kernels (values never
recompile). derandomize=True keeps CI stable.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.unit.property_chains import (
    TARGETS,
    TEMPLATES,
    Drawn,
    assert_same,
    chains,
    longer_run,
    pool,
    property_settings,
    run_target,
)

SEEDS, EXAMPLES = longer_run()


@property_settings(400)
@given(chains())
def test_random_chains_cpu_equals_reference(drawn: Drawn) -> None:
    out, expected = run_target(drawn, "cpu")
    assert_same(out, expected, f"{drawn.template} {[op.op_name for op in drawn.ops]}")


@property_settings(120)
@given(chains([t for t in TEMPLATES if t.per_image]))
def test_random_per_image_chains_cpu_equals_reference(drawn: Drawn) -> None:
    """The batches of the pool with their values per image (fkl.per_image): plane by plane in the interpreter."""
    out, expected = run_target(drawn, "cpu")
    assert_same(out, expected, f"{drawn.template} {[op.op_name for op in drawn.ops]}")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", SEEDS)
def test_more_pools_equal_reference(seed: int, target: str) -> None:
    """A longer run (FKLIR_PROPERTY_SEEDS, docs/testing.md): random chains of other seeded pools."""

    @property_settings(EXAMPLES)
    @given(chains(pool(seed)))
    def check(drawn: Drawn) -> None:
        out, expected = run_target(drawn, target)
        assert_same(out, expected, f"seed {seed}: {drawn.template} {[op.op_name for op in drawn.ops]}")

    check()


def test_the_pool_covers_the_catalogue() -> None:
    kinds = {token[0] for t in TEMPLATES for token in (*t.geometry, *t.compute)}
    reads = {t.read for t in TEMPLATES}
    writes = {t.write for t in TEMPLATES}
    dtypes = {t.dtype for t in TEMPLATES}
    assert {"crop", "border", "resize", "warp", "deinterlace"} <= kinds
    assert {"arith", "cast", "satcast", "reorder", "reorder_rt", "color", "reduce"} <= kinds
    assert reads == {"read", "pack", "set"} and writes == {"write", "split", "tsplit", "split_write"}
    assert len(dtypes) >= 8
    per_image = [t for t in TEMPLATES if t.per_image]
    assert per_image and {"arith"} <= {token[0] for t in per_image for token in t.compute}
