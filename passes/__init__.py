"""The registry of shlo's Python passes, by pass argument.

One pass per module; each module docstring is a summary line plus a
before/after example, and docs/passes.md is generated from them.
"""

from __future__ import annotations

from shlo.pass_framework import Pass
from shlo.passes.approximate_math import ApproximateMathPass
from shlo.passes.canonicalize_dot_general import CanonicalizeDotGeneralPass
from shlo.passes.canonicalize_dynamic_reduce_window import CanonicalizeDynamicReduceWindowPass
from shlo.passes.check_lowered import CheckLoweredPass
from shlo.passes.check_shape_assertions import CheckShapeAssertionsPass
from shlo.passes.copy_duplicate_results import CopyDuplicateResultsPass
from shlo.passes.erase_codegen_recipes import EraseCodegenRecipesPass
from shlo.passes.expand_f64_truncation import ExpandF64TruncationPass
from shlo.passes.expand_small_float_conversions import ExpandSmallFloatConversionsPass
from shlo.passes.fix_elementwise_semantics import FixElementwiseSemanticsPass
from shlo.passes.fold_tuples import FoldTuplesPass
from shlo.passes.fuse_elementwise_by_indexing import FuseElementwiseByIndexingPass
from shlo.passes.fuse_elementwise_trees import FuseElementwiseTreesPass
from shlo.passes.fuse_rows import FuseRowsPass
from shlo.passes.guard_integer_division import GuardIntegerDivisionPass
from shlo.passes.insert_codegen_recipes import InsertCodegenRecipesPass
from shlo.passes.legalize_broadcasts import LegalizeBroadcastsPass
from shlo.passes.legalize_quantized_regions import LegalizeQuantizedRegionsPass
from shlo.passes.lower_cholesky import LowerCholeskyPass
from shlo.passes.lower_collectives import LowerCollectivesPass
from shlo.passes.lower_complex_bitcast import LowerComplexBitcastPass
from shlo.passes.lower_complex_cbrt import LowerComplexCbrtPass
from shlo.passes.lower_control_flow import LowerControlFlowPass
from shlo.passes.lower_fft import LowerFftPass
from shlo.passes.lower_reduce_window_scan import LowerReduceWindowScanPass
from shlo.passes.lower_rng import LowerRngPass
from shlo.passes.lower_scatter import LowerScatterPass
from shlo.passes.lower_select_and_scatter import LowerSelectAndScatterPass
from shlo.passes.lower_sort import LowerSortPass
from shlo.passes.lower_strided_copies import LowerStridedCopiesPass
from shlo.passes.lower_triangular_solve import LowerTriangularSolvePass
from shlo.passes.normalize_dot_general import NormalizeDotGeneralPass
from shlo.passes.normalize_reduce import NormalizeReducePass
from shlo.passes.outline_contractions import OutlineContractionsPass
from shlo.passes.outline_kernels import OutlineKernelsPass
from shlo.passes.pack_entry_arguments import PackEntryArgumentsPass
from shlo.passes.parallel_inits_to_inputs import ParallelInitsToInputsPass
from shlo.passes.plan_vector_codegen import PlanVectorCodegenPass
from shlo.passes.precise_libm_calls import PreciseLibmCallsPass
from shlo.passes.read_only_arguments import ReadOnlyArgumentsPass
from shlo.passes.remove_dynamism import RemoveDynamismPass
from shlo.passes.remove_fusion_fences import RemoveFusionFencesPass
from shlo.passes.saturate_float_to_int import SaturateFloatToIntPass
from shlo.passes.simplify import SimplifyPass
from shlo.passes.test_print_indexing_maps import TestPrintIndexingMapsPass
from shlo.passes.unroll_replicas import UnrollReplicasPass
from shlo.passes.verify_static import VerifyStaticPass
from shlo.passes.widen_small_float_converts import WidenSmallFloatConvertsPass
from shlo.passes.widen_unsigned_quantized import WidenUnsignedQuantizedPass

PASSES: dict[str, type[Pass]] = {
    ApproximateMathPass.argument: ApproximateMathPass,
    EraseCodegenRecipesPass.argument: EraseCodegenRecipesPass,
    InsertCodegenRecipesPass.argument: InsertCodegenRecipesPass,
    PlanVectorCodegenPass.argument: PlanVectorCodegenPass,
    OutlineContractionsPass.argument: OutlineContractionsPass,
    OutlineKernelsPass.argument: OutlineKernelsPass,
    PackEntryArgumentsPass.argument: PackEntryArgumentsPass,
    CanonicalizeDotGeneralPass.argument: CanonicalizeDotGeneralPass,
    CanonicalizeDynamicReduceWindowPass.argument: CanonicalizeDynamicReduceWindowPass,
    CheckLoweredPass.argument: CheckLoweredPass,
    CheckShapeAssertionsPass.argument: CheckShapeAssertionsPass,
    CopyDuplicateResultsPass.argument: CopyDuplicateResultsPass,
    ExpandF64TruncationPass.argument: ExpandF64TruncationPass,
    ExpandSmallFloatConversionsPass.argument: ExpandSmallFloatConversionsPass,
    FixElementwiseSemanticsPass.argument: FixElementwiseSemanticsPass,
    FoldTuplesPass.argument: FoldTuplesPass,
    FuseElementwiseByIndexingPass.argument: FuseElementwiseByIndexingPass,
    FuseElementwiseTreesPass.argument: FuseElementwiseTreesPass,
    FuseRowsPass.argument: FuseRowsPass,
    GuardIntegerDivisionPass.argument: GuardIntegerDivisionPass,
    LegalizeBroadcastsPass.argument: LegalizeBroadcastsPass,
    LegalizeQuantizedRegionsPass.argument: LegalizeQuantizedRegionsPass,
    LowerCholeskyPass.argument: LowerCholeskyPass,
    LowerCollectivesPass.argument: LowerCollectivesPass,
    LowerComplexBitcastPass.argument: LowerComplexBitcastPass,
    LowerComplexCbrtPass.argument: LowerComplexCbrtPass,
    LowerControlFlowPass.argument: LowerControlFlowPass,
    LowerFftPass.argument: LowerFftPass,
    LowerReduceWindowScanPass.argument: LowerReduceWindowScanPass,
    LowerRngPass.argument: LowerRngPass,
    LowerScatterPass.argument: LowerScatterPass,
    LowerSelectAndScatterPass.argument: LowerSelectAndScatterPass,
    LowerSortPass.argument: LowerSortPass,
    LowerStridedCopiesPass.argument: LowerStridedCopiesPass,
    LowerTriangularSolvePass.argument: LowerTriangularSolvePass,
    NormalizeDotGeneralPass.argument: NormalizeDotGeneralPass,
    NormalizeReducePass.argument: NormalizeReducePass,
    ParallelInitsToInputsPass.argument: ParallelInitsToInputsPass,
    PreciseLibmCallsPass.argument: PreciseLibmCallsPass,
    ReadOnlyArgumentsPass.argument: ReadOnlyArgumentsPass,
    RemoveFusionFencesPass.argument: RemoveFusionFencesPass,
    RemoveDynamismPass.argument: RemoveDynamismPass,
    SaturateFloatToIntPass.argument: SaturateFloatToIntPass,
    SimplifyPass.argument: SimplifyPass,
    TestPrintIndexingMapsPass.argument: TestPrintIndexingMapsPass,
    UnrollReplicasPass.argument: UnrollReplicasPass,
    VerifyStaticPass.argument: VerifyStaticPass,
    WidenSmallFloatConvertsPass.argument: WidenSmallFloatConvertsPass,
    WidenUnsignedQuantizedPass.argument: WidenUnsignedQuantizedPass,
}

__all__ = ["PASSES"]
