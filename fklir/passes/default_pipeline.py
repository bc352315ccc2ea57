"""`fkl-default-pipeline`: the passes every composed chain goes through, in order.

validate the chain structure → merge per-rect / per-image chains (horizontal batching) → infer
types → fold geometry into the reads (backward fusion) → merge a DAG's identical branches (cse) → put
divergent chains of one output into one kernel → outline one kernel per remaining chain (or graph) → hoist
values into parameter blocks. After it the module holds exactly one `fkl.kernel` per launch. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from fklir.passes.backward_fusion import BackwardFusionPass
from fklir.passes.batch_divergent import DivergentBatchingPass
from fklir.passes.batch_horizontal import HorizontalBatchingPass
from fklir.passes.cse_branches import EliminateCommonBranchesPass
from fklir.passes.hoist_params import HoistParamsPass
from fklir.passes.infer_types import InferTypesPass
from fklir.passes.outline_kernels import OutlineKernelsPass
from fklir.passes.validate_chain import ValidateChainPass

DEFAULT_PASSES: tuple[ModulePass, ...] = (
    ValidateChainPass(),
    HorizontalBatchingPass(),
    InferTypesPass(),
    BackwardFusionPass(),
    EliminateCommonBranchesPass(),
    DivergentBatchingPass(),
    OutlineKernelsPass(),
    HoistParamsPass(),
)


@dataclass(frozen=True)
class DefaultPipelinePass(ModulePass):
    name = "fkl-default-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in DEFAULT_PASSES:
            p.apply(ctx, op)
            op.verify()
