"""`fkl-default-pipeline`: the passes every composed chain goes through, in order.

validate the chain structure → infer types → outline one kernel per chain → hoist values into
parameter blocks. After it the module holds exactly one `fkl.kernel` per launch. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from fklir.passes.hoist_params import HoistParamsPass
from fklir.passes.infer_types import InferTypesPass
from fklir.passes.outline_kernels import OutlineKernelsPass
from fklir.passes.validate_chain import ValidateChainPass

DEFAULT_PASSES: tuple[ModulePass, ...] = (
    ValidateChainPass(),
    InferTypesPass(),
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
