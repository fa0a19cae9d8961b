"""The CPU pipeline: static StableHLO -> linalg -> loops -> LLVM dialect, in named stages.

Each stage is a plain list of pipeline elements. Code generation for linalg
ops is a separate, swappable ``CodegenStrategy``, so tiling, packing,
vectorization or threading can replace the default loops without touching
the legalization, bufferization or LLVM stages.
"""

from __future__ import annotations

from dataclasses import dataclass

from shlo.dtypes import EMULATED_FLOATS


@dataclass(frozen=True)
class CodegenStrategy:
    """How linalg-on-tensors becomes loops over buffers.

    ``tensor_passes`` run before bufferization (fusion, tiling, packing),
    ``loop_passes`` after it (the loop conversion, vectorization, threading).
    """

    name: str
    tensor_passes: tuple[str, ...]
    loop_passes: tuple[str, ...]


# Fuse elementwise producers into consumers, then emit scalar loops.
SCALAR_LOOPS = CodegenStrategy(
    name="scalar-loops",
    tensor_passes=("func.func(linalg-fuse-elementwise-ops)", "canonicalize"),
    loop_passes=("func.func(convert-linalg-to-loops)",),
)

# Arguments and results keep identity layouts so numpy arrays pass as they are;
# results become out-parameters that the caller allocates, and static result
# allocations are replaced by those parameters (no copy back).
_BUFFERIZE = (
    "shlo-copy-duplicate-results",
    # Loops (scf.while from stablehlo.while) may yield fresh buffers.
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map}",
    "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true}",
    "canonicalize",
    "buffer-deallocation-pipeline",
)

_TO_LLVM = (
    "convert-scf-to-cf",
    "expand-strided-metadata",
    "lower-affine",
    "finalize-memref-to-llvm",
    "arith-emulate-unsupported-floats{source-types="
    + ",".join(EMULATED_FLOATS)
    + " target-type=f32}",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-complex-to-standard",
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
    "shlo-lower-scatter",
    "shlo-lower-sort",
    "shlo-lower-select-and-scatter",
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
                    "stablehlo-legalize-to-linalg",
                    "stablehlo-convert-to-signless",
                    "canonicalize",
                ],
            ),
            ("tensor-codegen", list(self.strategy.tensor_passes)),
            ("bufferize", list(_BUFFERIZE)),
            ("loop-codegen", list(self.strategy.loop_passes)),
            ("to-llvm", list(_TO_LLVM)),
        ]

    def elements(self) -> list[str]:
        return [element for _, stage in self.stages() for element in stage]
