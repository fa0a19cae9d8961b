"""The stages every backend runs after the lowering to linalg (``shlo.to_linalg``).

Elementwise fusion and bufferization before each backend's own code
generation, and the first steps of the host code's way to the LLVM dialect
after it.
"""

from __future__ import annotations

from shlo.dtypes import EMULATED_FLOATS

# Canonicalization in one sweep of MLIR's greedy driver. Its worklist already
# revisits the users and operands of every op a pattern changes; the
# default's further sweeps, until one changes nothing, changed no machine
# code of the 12 bench models and 18 bench/ops.py programs and took 4-6% of
# the large models' lowering (GPT-2 477 -> 457 ms, the training step 1183 ->
# 1109; bench/README.md). Bottom-up, a dead chain of ops (the LLVM dialect's
# memref descriptors, built field by field and mostly unread) goes in one
# visit of each op, users first; top-down revisits each producer once per
# user erased: the last canonicalization of Flax BERT's lowering took 51 ms
# instead of 11, with the same result on every bench and zoo model.
CANONICALIZE = "canonicalize{max-iterations=1 top-down=false}"

# Fuse elementwise producers into their consumers, never recomputing one.
ELEMENTWISE_FUSION: tuple[str, ...] = (
    # Linear-time fusion of elementwise trees first; upstream's quadratic
    # fusion then sees few ops.
    "shlo-fuse-elementwise-trees",
    "func.func(linalg-fuse-elementwise-ops)",
    # After upstream fusion, which the fences above keep from recomputing producers.
    "shlo-remove-fusion-fences",
    CANONICALIZE,
)

# Frees every buffer at the end of the block that allocates it.
DEALLOCATION = "buffer-deallocation-pipeline"
RESULTS_TO_OUT_PARAMS = (
    "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true}"
)

# Arguments and results keep identity layouts so numpy arrays pass as they are;
# results become out-parameters that the caller allocates, and static result
# allocations are replaced by those parameters (no copy back).
BUFFERIZE: tuple[str, ...] = (
    "shlo-copy-duplicate-results",
    "shlo-read-only-arguments",
    # An op whose result is inserted into a slice of another tensor writes
    # into that slice, not into a fresh buffer copied there (a scatter's row
    # updates: a buffer and a copy per row).
    "eliminate-empty-tensors",
    # Loops (scf.while from stablehlo.while) may yield fresh buffers.
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map}",
    # Loops over tiles yield the buffer they write in place: folded, the
    # result is the allocation itself, which the next pass can hoist.
    CANONICALIZE,
    RESULTS_TO_OUT_PARAMS,
    CANONICALIZE,
    DEALLOCATION,
    # No runtime has memrefCopy: copies of strided views become linalg.copy
    # (loops on the CPU, kernels on a GPU).
    "shlo-lower-strided-copies",
)

# Arithmetic and math on floats of 16 bits and fewer, computed in f32.
NARROW_FLOAT_EMULATION: tuple[str, ...] = (
    # bf16 too: LLVM's own bf16 arithmetic flushes subnormals on hosts with
    # AVX512-BF16 and calls compiler-rt (absent) on the others.
    "arith-emulate-unsupported-floats{source-types="
    + ",".join(("bf16", *EMULATED_FLOATS))
    + " target-type=f32}",
    "math-extend-to-supported-types{target-type=f32}",
)

# The host code's first steps to the LLVM dialect: the runtime's ABI, memory,
# and the float types LLVM cannot compute in.
FINALIZE_MEMREF_TO_LLVM = "finalize-memref-to-llvm{use-generic-functions=true}"

HOST_TO_LLVM_START: tuple[str, ...] = (
    # @main takes one pointer to its buffers' data pointers (the runtime's ABI).
    "shlo-pack-entry-arguments",
    # Complex math becomes arith and math ops, which later passes lower.
    "convert-complex-to-standard",
    "convert-scf-to-cf",
    "expand-strided-metadata",
    "lower-affine",
    # Allocations call _mlir_memref_to_llvm_alloc & co., which each runtime
    # provides: checked malloc on the CPU, managed memory for CUDA.
    FINALIZE_MEMREF_TO_LLVM,
    *NARROW_FLOAT_EMULATION,
)
