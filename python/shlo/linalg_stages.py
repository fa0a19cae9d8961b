"""The stages on linalg that every backend runs: elementwise fusion and bufferization.

Between the shared lowering to linalg (``shlo.to_linalg``) and each
backend's own code generation.
"""

from __future__ import annotations

# Fuse elementwise producers into their consumers, never recomputing one.
ELEMENTWISE_FUSION: tuple[str, ...] = (
    # Linear-time fusion of elementwise trees first; upstream's quadratic
    # fusion then sees few ops.
    "shlo-fuse-elementwise-trees",
    "func.func(linalg-fuse-elementwise-ops)",
    # After upstream fusion, which the fences above keep from recomputing producers.
    "shlo-remove-fusion-fences",
    "canonicalize",
)

# Arguments and results keep identity layouts so numpy arrays pass as they are;
# results become out-parameters that the caller allocates, and static result
# allocations are replaced by those parameters (no copy back).
BUFFERIZE: tuple[str, ...] = (
    "shlo-copy-duplicate-results",
    "shlo-read-only-arguments",
    # Loops (scf.while from stablehlo.while) may yield fresh buffers.
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map}",
    # Loops over tiles yield the buffer they write in place: folded, the
    # result is the allocation itself, which the next pass can hoist.
    "canonicalize",
    "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true}",
    "canonicalize",
    "buffer-deallocation-pipeline",
    # No runtime has memrefCopy: copies of strided views become linalg.copy
    # (loops on the CPU, kernels on a GPU).
    "shlo-lower-strided-copies",
)
