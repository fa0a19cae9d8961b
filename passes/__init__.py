"""The registry of shlo's Python passes, by pass argument.

One pass per module, in a folder per stage (frontend, decompose, linalg,
cpu, testing); each module docstring is a summary line plus a before/after
example, and docs/passes.md is generated from them. A pass module is
imported when its pass is first used, so running the frontend or the
interpreter imports no backend's passes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from shlo.pass_framework import Pass

# Pass argument -> "module:class" under shlo.passes.
_PASS_CLASSES = {
    "shlo-accumulate-narrow-floats-as-xla": "decompose.accumulate_narrow_floats_as_xla:AccumulateNarrowFloatsAsXlaPass",
    "shlo-approximate-math": "cpu.approximate_math:ApproximateMathPass",
    "shlo-arith-constants-to-stablehlo": "frontend.arith_constants_to_stablehlo:ArithConstantsToStablehloPass",
    "shlo-call-precompiled-kernels": "cpu.call_precompiled_kernels:CallPrecompiledKernelsPass",
    "shlo-canonicalize-dot-general": "decompose.canonicalize_dot_general:CanonicalizeDotGeneralPass",
    "shlo-canonicalize-dynamic-reduce-window": "frontend.canonicalize_dynamic_reduce_window:CanonicalizeDynamicReduceWindowPass",
    "shlo-check-lowered": "linalg.check_lowered:CheckLoweredPass",
    "shlo-check-shape-assertions": "frontend.check_shape_assertions:CheckShapeAssertionsPass",
    "shlo-collapse-transposed-loops": "cpu.collapse_transposed_loops:CollapseTransposedLoopsPass",
    "shlo-copy-into-slices": "cpu.copy_into_slices:CopyIntoSlicesPass",
    "shlo-copy-duplicate-results": "linalg.copy_duplicate_results:CopyDuplicateResultsPass",
    "shlo-erase-codegen-recipes": "cpu.erase_codegen_recipes:EraseCodegenRecipesPass",
    "shlo-expand-f64-truncation": "cpu.expand_f64_truncation:ExpandF64TruncationPass",
    "shlo-expand-small-float-conversions": "cpu.expand_small_float_conversions:ExpandSmallFloatConversionsPass",
    "shlo-fix-elementwise-semantics": "frontend.fix_elementwise_semantics:FixElementwiseSemanticsPass",
    "shlo-fold-tuples": "decompose.fold_tuples:FoldTuplesPass",
    "shlo-flush-denormals": "cpu.flush_denormals:FlushDenormalsPass",
    "shlo-forward-scalar-buffers": "linalg.forward_scalar_buffers:ForwardScalarBuffersPass",
    "shlo-mark-precompiled-kernels": "cpu.mark_precompiled_kernels:MarkPrecompiledKernelsPass",
    "shlo-mark-precompiled-row-kernels": "cpu.mark_precompiled_row_kernels:MarkPrecompiledRowKernelsPass",
    "shlo-mark-precompiled-elementwise": "cpu.mark_precompiled_elementwise:MarkPrecompiledElementwisePass",
    "shlo-mark-precompiled-transposes": "cpu.mark_precompiled_transposes:MarkPrecompiledTransposesPass",
    "shlo-scalar-loop-state": "linalg.scalar_loop_state:ScalarLoopStatePass",
    "shlo-fuse-elementwise-by-indexing": "linalg.fuse_elementwise_by_indexing:FuseElementwiseByIndexingPass",
    "shlo-fuse-elementwise-trees": "linalg.fuse_elementwise_trees:FuseElementwiseTreesPass",
    "shlo-free-after-last-use": "linalg.free_after_last_use:FreeAfterLastUsePass",
    "shlo-fuse-rows": "cpu.fuse_rows:FuseRowsPass",
    "shlo-hoist-loop-invariants": "decompose.hoist_loop_invariants:HoistLoopInvariantsPass",
    "shlo-guard-integer-division": "frontend.guard_integer_division:GuardIntegerDivisionPass",
    "shlo-innermost-parallel-dim-first": "cuda.innermost_parallel_dim_first:InnermostParallelDimFirstPass",
    "shlo-copies-to-kernels": "cuda.copies_to_kernels:CopiesToKernelsPass",
    "shlo-parallel-reductions": "cuda.parallel_reductions:ParallelReductionsPass",
    "shlo-register-tiled-matmuls": "cuda.register_tiled_matmuls:RegisterTiledMatmulsPass",
    "shlo-insert-codegen-recipes": "cpu.insert_codegen_recipes:InsertCodegenRecipesPass",
    "shlo-keep-loops-rolled": "cpu.keep_loops_rolled:KeepLoopsRolledPass",
    "shlo-legalize-broadcasts": "frontend.legalize_broadcasts:LegalizeBroadcastsPass",
    "shlo-legalize-quantized-regions": "frontend.legalize_quantized_regions:LegalizeQuantizedRegionsPass",
    "shlo-legalize-shape-computations": "frontend.legalize_shape_computations:LegalizeShapeComputationsPass",
    "shlo-lower-cholesky": "decompose.lower_cholesky:LowerCholeskyPass",
    "shlo-lower-collectives": "decompose.lower_collectives:LowerCollectivesPass",
    "shlo-lower-complex-bitcast": "decompose.lower_complex_bitcast:LowerComplexBitcastPass",
    "shlo-lower-complex-cbrt": "decompose.lower_complex_cbrt:LowerComplexCbrtPass",
    "shlo-lower-concatenate": "cpu.lower_concatenate:LowerConcatenatePass",
    "shlo-lower-control-flow": "decompose.lower_control_flow:LowerControlFlowPass",
    "shlo-lower-custom-calls": "decompose.lower_custom_calls:LowerCustomCallsPass",
    "shlo-lower-fft": "decompose.lower_fft:LowerFftPass",
    "shlo-lower-reduce-window-scan": "decompose.lower_reduce_window_scan:LowerReduceWindowScanPass",
    "shlo-lower-reverse": "cpu.lower_reverse:LowerReversePass",
    "shlo-torch-sort-to-stablehlo": "frontend.torch_sort_to_stablehlo:TorchSortToStablehloPass",
    "shlo-lower-rng": "decompose.lower_rng:LowerRngPass",
    "shlo-lower-scatter": "decompose.lower_scatter:LowerScatterPass",
    "shlo-lower-scalar-transfers": "cpu.lower_scalar_transfers:LowerScalarTransfersPass",
    "shlo-lower-select-and-scatter": "decompose.lower_select_and_scatter:LowerSelectAndScatterPass",
    "shlo-lower-sort": "decompose.lower_sort:LowerSortPass",
    "shlo-lower-strided-copies": "linalg.lower_strided_copies:LowerStridedCopiesPass",
    "shlo-lower-triangular-solve": "decompose.lower_triangular_solve:LowerTriangularSolvePass",
    "shlo-split-complex-dots": "decompose.split_complex_dots:SplitComplexDotsPass",
    "shlo-min-max-as-select": "cpu.min_max_as_select:MinMaxAsSelectPass",
    "shlo-normalize-dot-general": "decompose.normalize_dot_general:NormalizeDotGeneralPass",
    "shlo-normalize-reduce": "decompose.normalize_reduce:NormalizeReducePass",
    "shlo-outline-contractions": "cpu.outline_contractions:OutlineContractionsPass",
    "shlo-outline-kernels": "cpu.outline_kernels:OutlineKernelsPass",
    "shlo-outline-tensor-kernels": "cpu.outline_tensor_kernels:OutlineTensorKernelsPass",
    "shlo-outline-repeated-layers": "cpu.outline_repeated_layers:OutlineRepeatedLayersPass",
    "shlo-pack-entry-arguments": "linalg.pack_entry_arguments:PackEntryArgumentsPass",
    "shlo-parallel-inits-to-inputs": "linalg.parallel_inits_to_inputs:ParallelInitsToInputsPass",
    "shlo-plan-vector-codegen": "cpu.plan_vector_codegen:PlanVectorCodegenPass",
    "shlo-precise-libm-calls": "cpu.precise_libm_calls:PreciseLibmCallsPass",
    "shlo-read-only-arguments": "linalg.read_only_arguments:ReadOnlyArgumentsPass",
    "shlo-prefetch-matmul-rows": "cpu.prefetch_matmul_rows:PrefetchMatmulRowsPass",
    "shlo-prefetch-ahead": "cpu.prefetch_ahead:PrefetchAheadPass",
    "shlo-store-booleans-as-bytes": "linalg.store_booleans_as_bytes:StoreBooleansAsBytesPass",
    "shlo-reciprocal-division": "cpu.reciprocal_division:ReciprocalDivisionPass",
    "shlo-temporaries-in-output-blocks": "cpu.temporaries_in_output_blocks:TemporariesInOutputBlocksPass",
    "shlo-remove-dynamism": "frontend.remove_dynamism:RemoveDynamismPass",
    "shlo-remove-fusion-fences": "linalg.remove_fusion_fences:RemoveFusionFencesPass",
    "shlo-saturate-float-to-int": "decompose.saturate_float_to_int:SaturateFloatToIntPass",
    "shlo-sequential-small-foralls": "cpu.sequential_small_foralls:SequentialSmallForallsPass",
    "shlo-small-buffers-on-stack": "cpu.small_buffers_on_stack:SmallBuffersOnStackPass",
    "shlo-sink-slices": "decompose.sink_slices:SinkSlicesPass",
    "shlo-split-full-reductions": "cpu.split_full_reductions:SplitFullReductionsPass",
    "shlo-split-transposed-convolutions": "decompose.split_transposed_convolutions:SplitTransposedConvolutionsPass",
    "shlo-split-spatial-convolutions": "decompose.split_spatial_convolutions:SplitSpatialConvolutionsPass",
    "shlo-split-grouped-convolutions": "decompose.split_grouped_convolutions:SplitGroupedConvolutionsPass",
    "shlo-simplify": "frontend.simplify:SimplifyPass",
    "shlo-test-print-indexing-maps": "testing.test_print_indexing_maps:TestPrintIndexingMapsPass",
    "shlo-unroll-replicas": "frontend.unroll_replicas:UnrollReplicasPass",
    "shlo-verify-static": "frontend.verify_static:VerifyStaticPass",
    "shlo-widen-small-float-converts": "decompose.widen_small_float_converts:WidenSmallFloatConvertsPass",
    "shlo-write-over-dead-inputs": "linalg.write_over_dead_inputs:WriteOverDeadInputsPass",
    "shlo-widen-integer-dots": "cpu.widen_integer_dots:WidenIntegerDotsPass",
    "shlo-widen-unsigned-quantized": "frontend.widen_unsigned_quantized:WidenUnsignedQuantizedPass",
}


class _PassRegistry(Mapping[str, type[Pass]]):
    """Pass argument -> pass class, each module imported on first lookup."""

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = paths
        self._loaded: dict[str, type[Pass]] = {}

    def __getitem__(self, name: str) -> type[Pass]:
        cls = self._loaded.get(name)
        if cls is None:
            module, _, attribute = self._paths[name].partition(":")
            cls = getattr(importlib.import_module(f"shlo.passes.{module}"), attribute)
            self._loaded[name] = cls
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


PASSES: Mapping[str, type[Pass]] = _PassRegistry(_PASS_CLASSES)

__all__ = ["PASSES"]
