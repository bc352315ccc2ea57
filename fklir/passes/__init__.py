"""fkl passes: IR → IR transformations, one per module. `get_all_passes()` is the lazy registry."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def validate_chain() -> type[ModulePass]:
        from fklir.passes.validate_chain import ValidateChainPass

        return ValidateChainPass

    def infer_types() -> type[ModulePass]:
        from fklir.passes.infer_types import InferTypesPass

        return InferTypesPass

    def outline_kernels() -> type[ModulePass]:
        from fklir.passes.outline_kernels import OutlineKernelsPass

        return OutlineKernelsPass

    def hoist_params() -> type[ModulePass]:
        from fklir.passes.hoist_params import HoistParamsPass

        return HoistParamsPass

    def backward_fusion() -> type[ModulePass]:
        from fklir.passes.backward_fusion import BackwardFusionPass

        return BackwardFusionPass

    def batch_horizontal() -> type[ModulePass]:
        from fklir.passes.batch_horizontal import HorizontalBatchingPass

        return HorizontalBatchingPass

    def batch_divergent() -> type[ModulePass]:
        from fklir.passes.batch_divergent import DivergentBatchingPass

        return DivergentBatchingPass

    def cse_branches() -> type[ModulePass]:
        from fklir.passes.cse_branches import EliminateCommonBranchesPass

        return EliminateCommonBranchesPass

    def eliminate_dead_outputs() -> type[ModulePass]:
        from fklir.passes.eliminate_dead_outputs import EliminateDeadOutputsPass

        return EliminateDeadOutputsPass

    def default_pipeline() -> type[ModulePass]:
        from fklir.passes.default_pipeline import DefaultPipelinePass

        return DefaultPipelinePass

    return {
        "fkl-validate-chain": validate_chain,
        "fkl-infer-types": infer_types,
        "fkl-outline-kernels": outline_kernels,
        "fkl-hoist-params": hoist_params,
        "fkl-backward-fusion": backward_fusion,
        "fkl-batch-horizontal": batch_horizontal,
        "fkl-batch-divergent": batch_divergent,
        "fkl-cse": cse_branches,
        "fkl-eliminate-dead-outputs": eliminate_dead_outputs,
        "fkl-default-pipeline": default_pipeline,
    }
