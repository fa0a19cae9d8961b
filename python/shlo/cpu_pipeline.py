"""The CPU pipeline: static StableHLO -> linalg -> loops -> LLVM dialect, in named stages.

Each stage is a plain list of pipeline elements. Code generation for linalg
ops is a separate, swappable ``CodegenStrategy``: per-op-kind recipes in the
transform dialect (``shlo.codegen_recipes``: tiling, packing, vectorization of
contractions, convolutions, ...) plus the passes around them, so a strategy
changes without touching the legalization, bufferization or LLVM stages.
"""

from __future__ import annotations

from dataclasses import dataclass

from shlo.dtypes import EMULATED_FLOATS


@dataclass(frozen=True)
class CodegenStrategy:
    """How linalg-on-tensors becomes loops over buffers.

    ``recipes`` (names in ``shlo.codegen_recipes.RECIPES``) transform the ops
    of their kind first; ``tensor_passes`` then run before bufferization
    (fusion, tiling, packing), ``loop_passes`` after it (the loop conversion,
    vectorization, threading).
    """

    name: str
    tensor_passes: tuple[str, ...]
    loop_passes: tuple[str, ...]
    recipes: tuple[str, ...] = ()

    def tensor_stage(self) -> list[str]:
        if not self.recipes:
            return list(self.tensor_passes)
        return [
            f"shlo-insert-codegen-recipes{{recipes={','.join(self.recipes)}}}",
            "transform-interpreter",
            "shlo-erase-codegen-recipes",
            *self.tensor_passes,
        ]


# Fuse elementwise producers into consumers, then emit scalar loops.
SCALAR_LOOPS = CodegenStrategy(
    name="scalar-loops",
    tensor_passes=(
        # Linear-time fusion of elementwise trees first; upstream's quadratic
        # fusion then sees few ops.
        "shlo-fuse-elementwise-trees",
        "func.func(linalg-fuse-elementwise-ops)",
        "canonicalize",
    ),
    loop_passes=("func.func(convert-linalg-to-loops)",),
)

# Arguments and results keep identity layouts so numpy arrays pass as they are;
# results become out-parameters that the caller allocates, and static result
# allocations are replaced by those parameters (no copy back).
_BUFFERIZE = (
    "shlo-copy-duplicate-results",
    "shlo-read-only-arguments",
    # Loops (scf.while from stablehlo.while) may yield fresh buffers.
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map}",
    "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true}",
    "canonicalize",
    "buffer-deallocation-pipeline",
    # The JIT has no memrefCopy: copies of strided views become linalg.copy.
    "shlo-lower-strided-copies",
)

_TO_LLVM = (
    # First: complex math becomes arith and math ops, which the passes below lower.
    "convert-complex-to-standard",
    "convert-scf-to-cf",
    "expand-strided-metadata",
    "lower-affine",
    # Allocations call _mlir_memref_to_llvm_alloc & co., which the runtime
    # checks: a failed malloc becomes an error instead of a null write.
    "finalize-memref-to-llvm{use-generic-functions=true}",
    # bf16 too: LLVM's own bf16 arithmetic flushes subnormals on hosts with
    # AVX512-BF16 and calls compiler-rt (absent) on the others.
    "arith-emulate-unsupported-floats{source-types="
    + ",".join(("bf16", *EMULATED_FLOATS))
    + " target-type=f32}",
    "math-extend-to-supported-types{target-type=f32}",
    "shlo-precise-libm-calls",
    # Right after the emulation: its f8/f4 extf/truncf become integer code.
    "shlo-expand-small-float-conversions",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    # After every pass that may emit arith.truncf: f64 -> f16/bf16 and
    # f32 -> bf16 become code that needs no runtime function.
    "shlo-expand-f64-truncation",
    "convert-arith-to-llvm",
    "convert-complex-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "convert-index-to-llvm",
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
)


# Our lowerings for StableHLO ops that upstream stablehlo-legalize-to-linalg
# leaves alone or lowers wrongly, in the order they run.
PRE_LINALG_LOWERINGS: tuple[str, ...] = (
    # First: collectives become slices, concatenates and maps that later passes may fix.
    "shlo-lower-collectives",
    "shlo-lower-scatter",
    "shlo-lower-sort",
    "shlo-lower-select-and-scatter",
    "shlo-lower-fft",
    "shlo-lower-triangular-solve",
    "shlo-lower-cholesky",
    "shlo-lower-rng",
    # After the lowerings above, which may emit the ops it fixes.
    "shlo-fix-elementwise-semantics",
    # Before the saturation, whose bounds a small float may not hold.
    "shlo-widen-small-float-converts",
    # NaN -> 0 and saturation for float-to-integer converts, as the interpreter.
    "shlo-saturate-float-to-int",
    "shlo-lower-complex-bitcast",
    "shlo-lower-complex-cbrt",
    "shlo-normalize-dot-general",
    "shlo-normalize-reduce",
    "shlo-fold-tuples",
    # Keep last: the lowerings above may emit stablehlo.while and stablehlo.if.
    "shlo-lower-control-flow",
)


@dataclass(frozen=True)
class CpuPipeline:
    """The stages from static StableHLO to the LLVM dialect, in order."""

    strategy: CodegenStrategy = SCALAR_LOOPS
    pre_linalg: tuple[str, ...] = PRE_LINALG_LOWERINGS

    def stages(self) -> list[tuple[str, list[str]]]:
        return [
            (
                "legalize-to-linalg",
                [
                    *self.pre_linalg,
                    # Copies shared cheap producers into the fusions below (indexing maps).
                    "shlo-fuse-elementwise-by-indexing",
                    "stablehlo-legalize-to-linalg",
                    # Before any fusion: all-parallel ops that read their init fuse wrongly.
                    "shlo-parallel-inits-to-inputs",
                    # Before code generation: name every op nothing above lowered.
                    "shlo-check-lowered{target=cpu}",
                    "stablehlo-convert-to-signless",
                    "canonicalize",
                ],
            ),
            ("tensor-codegen", self.strategy.tensor_stage()),
            ("bufferize", list(_BUFFERIZE)),
            ("loop-codegen", list(self.strategy.loop_passes)),
            ("to-llvm", list(_TO_LLVM)),
        ]

    def elements(self, through: str | None = None) -> list[str]:
        """The pipeline elements of every stage, or of the stages up to ``through``."""
        elements: list[str] = []
        for name, stage in self.stages():
            elements += stage
            if name == through:
                return elements
        if through is not None:
            raise ValueError(f"no stage {through!r} in the CPU pipeline")
        return elements
