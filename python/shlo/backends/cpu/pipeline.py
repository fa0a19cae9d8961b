"""The CPU pipeline: static StableHLO -> linalg -> loops -> LLVM dialect, in named stages.

The first stage is the shared ``shlo.to_linalg`` stage; the rest is the CPU's own.

Each stage is a plain list of pipeline elements. Code generation for linalg
ops is a separate, swappable ``CodegenStrategy``: per-op-kind recipes in the
transform dialect (``shlo.backends.cpu.codegen_recipes``: tiling, packing, vectorization of
contractions, convolutions, ...) plus the passes around them, so a strategy
changes without touching the legalization, bufferization or LLVM stages.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field

from shlo._mlir_compat import ir
from shlo.linalg_stages import (
    BUFFERIZE,
    CANONICALIZE,
    DEALLOCATION,
    ELEMENTWISE_FUSION,
    FINALIZE_MEMREF_TO_LLVM,
    HOST_TO_LLVM_START,
    NARROW_FLOAT_EMULATION,
    RESULTS_TO_OUT_PARAMS,
)
from shlo.to_linalg import DECOMPOSITIONS, to_linalg_stage


def default_threads() -> int:
    """SHLO_THREADS when set, else every core this process may run on."""
    from shlo.isolation import positive_setting

    value = positive_setting("SHLO_THREADS", int, "threads")
    if value is not None:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class CodegenStrategy:
    """How linalg-on-tensors becomes loops over buffers.

    ``tensor_passes`` run first, before bufferization (fusion); then
    ``recipes`` (names in ``shlo.backends.cpu.codegen_recipes.RECIPES``) transform the ops
    of their kind, and with ``vectorize`` shlo-plan-vector-codegen tiles,
    threads and vectorizes the elementwise ops and reductions.
    ``loop_passes`` run after bufferization (the loop conversion and
    shlo-approximate-math, on scalars and vectors alike), then with
    ``vectorize`` the lowering of kernels, threads and vectors.
    """

    name: str
    tensor_passes: tuple[str, ...]
    loop_passes: tuple[str, ...]
    recipes: tuple[str, ...] = ()
    vectorize: bool = False
    # With precompiled kernels, the fused elementwise ops left outside blocks of
    # rows call shlo_elementwise_f32 too, instead of being vectorized here: less
    # compile time, more run time (FAST_COMPILE).
    elementwise_kernel: bool = False
    # Else those that compute exp or tanh call it where the precompiled
    # matmuls and convolutions do at least this many flops per value they
    # compute and nothing else is left to generate (0: none do). The program
    # is then glue, which LLVM compiles without its optimizing pipeline (the
    # bench MLP: 40-55 -> 16-20 ms), and beside that much arithmetic the
    # kernel's longer run is a small part of the program's (1.018x).
    math_kernel_beside_contractions: int = 0
    # Long elementwise chains (two or more math functions) in two stages, run
    # a block of values at a time by shlo-fuse-rows (passes/cpu/chain_stages.py):
    # the bench's chain 1.50 -> 1.27 ms, the same bits. Not where the
    # elementwise kernel takes every chain (FAST_COMPILE).
    stage_long_chains: bool = True

    def tensor_stage(self, threads: int = 1, precompiled_kernels: bool = False) -> list[str]:
        stage = list(self.tensor_passes)
        if self.recipes and precompiled_kernels:
            # Before fusion: a transpose only the matmul reads becomes its strides.
            stage.insert(0, "shlo-mark-precompiled-kernels")
            # After fusion: a softmax's four ops are fused into four, and a
            # transpose fused with other ops stays generated.
            stage += ["shlo-mark-precompiled-row-kernels", "shlo-mark-precompiled-transposes"]
        if self.recipes:
            stage += [
                # The recipes transform each distinct contraction once, in its
                # own small function; inline puts the result back.
                f"shlo-outline-contractions{{threads={threads}}}",
                "shlo-insert-codegen-recipes"
                f"{{recipes={','.join(self.recipes)} threads={threads}}}",
                "transform-interpreter",
                "shlo-erase-codegen-recipes",
                "inline{default-pipeline=}",
                "symbol-dce",
            ]
        if self.vectorize:
            every_chain_to_kernel = self.recipes and precompiled_kernels and self.elementwise_kernel
            staged = self.stage_long_chains and not every_chain_to_kernel
            stage += [
                # Reductions and the ops reusing their rows, one block of rows at a time.
                f"shlo-fuse-rows{{threads={threads}"
                + ("" if staged else " stage-long-chains=false")
                + "}",
                "transform-interpreter",
                "shlo-erase-codegen-recipes",
            ]
            if every_chain_to_kernel:
                # The elementwise ops left outside blocks of rows.
                stage.append("shlo-mark-precompiled-elementwise")
            elif self.recipes and precompiled_kernels and self.math_kernel_beside_contractions:
                stage.append(
                    "shlo-mark-precompiled-elementwise"
                    f"{{beside-contractions={self.math_kernel_beside_contractions}}}"
                )
            stage += [
                # After fusion: an elementwise op's result takes the buffer of
                # an input that dies there.
                "shlo-write-over-dead-inputs",
                # Masks read by several kernels: bytes that both vectorize.
                "shlo-store-booleans-as-bytes",
                # Each distinct kernel is planned, transformed, bufferized and
                # lowered to loops once, in its own small function.
                "shlo-outline-tensor-kernels",
                # Arrays inserted into slices (a concatenation's operands): copies
                # the plan threads, not strided copies after bufferization.
                "shlo-copy-into-slices",
                # Contractions no recipe took become generics that the plan
                # vectorizes (after fusion, which must not fuse into them).
                "func.func(linalg-generalize-named-ops)",
                # A transpose's loops that move together, one loop: square
                # tiles of its two contiguous loops, transposed in registers.
                "shlo-collapse-transposed-loops",
                f"shlo-plan-vector-codegen{{threads={threads}}}",
                "transform-interpreter",
                "shlo-erase-codegen-recipes",
                # A vector written by one kernel and read by the next in the
                # same function is forwarded, and its tensor needs no buffer.
                CANONICALIZE,
            ]
        return stage

    def loop_stage(self, threads: int = 1) -> list[str]:
        if not self.vectorize:
            return list(self.loop_passes)
        return [
            *self.loop_passes,
            # A block of rows' temporary (a softmax's exp) in the output
            # block that its last pass overwrites.
            "shlo-temporaries-in-output-blocks",
            # A row divided by its sum or norm: one reciprocal and multiplies,
            # as XLA does, within one float of the division.
            "shlo-reciprocal-division",
            # Weights read by a matmul's register tiles arrive before the FMAs need them.
            "shlo-prefetch-matmul-rows",
            # Loops that compute much per vector (an exp chain, a softmax's
            # exp pass) prefetch the data they read next.
            "shlo-prefetch-ahead",
            # One function per distinct loop nest: LLVM compiles a repeated
            # layer once.
            "shlo-outline-kernels",
            # Tiles split over threads: scf.forall -> scf.parallel -> OpenMP,
            # but for loops with too little work for the threads.
            *([f"shlo-sequential-small-foralls{{threads={threads}}}"] if threads > 1 else []),
            "scf-forall-to-parallel",
            *([f"convert-scf-to-openmp{{num-threads={threads}}}"] if threads > 1 else []),
            # A tile's partial results (a softmax's row maxima) on the stack
            # of each step of the OpenMP loop, not allocated per step.
            "shlo-small-buffers-on-stack",
            # Before scf-to-cf splits the memref.alloca_scope that OpenMP regions hold.
            CANONICALIZE,
            # n-D vector transfers become loops of 1-D vectors, as LLVM wants them.
            "func.func(lower-vector-multi-reduction{lowering-strategy=inner-reduction})",
            "convert-vector-to-scf{full-unroll=true}",
            # What that leaves and the LLVM conversion cannot take: 0-d
            # transfers on strided views.
            "shlo-lower-scalar-transfers",
            "func.func(lower-vector-mask)",
            CANONICALIZE,
            # LLVM unrolls innermost loops only: copies of whole loop nests
            # cost it more time than they save at run time.
            "shlo-keep-loops-rolled",
        ]


# Fuse elementwise producers into consumers, then emit scalar loops.
SCALAR_LOOPS = CodegenStrategy(
    name="scalar-loops",
    tensor_passes=ELEMENTWISE_FUSION,
    loop_passes=(
        "func.func(convert-linalg-to-loops)",
        # Loops of one iteration (a one-element slice of a scan's output) fold
        # into their block: their buffers are forwarded below, and no kernel
        # call is made of them in a loop (lax.scan: 2.6 -> 1.3 ms).
        CANONICALIZE,
        # Region bodies on 0-d tensors left a malloc and free per element.
        "shlo-forward-scalar-buffers",
        # Polynomials instead of a libm call per element, within 2.5 ULP (tanh;
        # the others 1.1; docs/cpu.md); branch-free, so LLVM vectorizes the loops around them.
        "shlo-approximate-math",
        # max(x, 0) (ReLU) and clamps: one vmaxps instead of three instructions.
        "shlo-min-max-as-select",
    ),
)

# The same fusion, then tiles for the caches, vector registers and threads.
VECTORIZED = CodegenStrategy(
    name="vectorized",
    tensor_passes=SCALAR_LOOPS.tensor_passes,
    loop_passes=SCALAR_LOOPS.loop_passes,
    # f32 and i32 matmuls and convolutions: register tiles of FMAs on zmm.
    recipes=("vectorize-matmul", "vectorize-conv"),
    vectorize=True,
    math_kernel_beside_contractions=1024,
)


def _replaced(stage: tuple[str, ...], replacements: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """``stage`` with each element that ``replacements`` names replaced by its elements."""
    return tuple(new for element in stage for new in replacements.get(element, (element,)))


_BUFFERIZE = _replaced(
    BUFFERIZE,
    {
        # A while loop's scalar state stays out of memory: no allocation and
        # copy per iteration.
        "shlo-copy-duplicate-results": ("shlo-scalar-loop-state", "shlo-copy-duplicate-results"),
        # Each buffer is freed after its last use, so a later allocation of
        # its size reuses it within the call; upstream's pipeline frees at the
        # end of the block and took 0.39 s of GPT-2's compile. (A GPU's host
        # code may not free a buffer that a kernel still running reads.) No
        # canonicalize after it: the LLVM IR of the bench models and of the
        # zoo's GPT-2 decoding loop, BART and CNN training step is the same
        # without one, and it took 40 ms of GPT-2's compile.
        DEALLOCATION: ("shlo-free-after-last-use", "cse"),
        # A kernel function (shlo-outline-tensor-kernels) writes into the
        # destination its caller passes and returns it: the caller uses its
        # own buffer instead of an out-parameter and a copy.
        RESULTS_TO_OUT_PARAMS: ("drop-equivalent-buffer-results", RESULTS_TO_OUT_PARAMS),
    },
)

_TO_LLVM = (
    *_replaced(
        HOST_TO_LLVM_START,
        {
            # The CPU runtime aligns each allocation itself (_ALLOCATION_GUARD),
            # so no generated code pads and aligns a malloc'd block: GPT-2's
            # glue had five ops for each of its 396 allocations.
            FINALIZE_MEMREF_TO_LLVM: (
                "finalize-memref-to-llvm{use-generic-functions=true use-aligned-alloc=true}",
            ),
        },
    ),
    "shlo-precise-libm-calls",
    # Right after the emulation: its f8/f4 extf/truncf become integer code.
    "shlo-expand-small-float-conversions",
    # Before any dialect conversion: they fold extf(truncf(x)) to x when the
    # emulation above marked the pair contract, which skips a bf16 rounding.
    "shlo-expand-f64-truncation",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    # After every pass that may emit arith.truncf: f64 -> f16/bf16 and
    # f32 -> bf16 become code that needs no runtime function.
    "shlo-expand-f64-truncation",
    # Split reductions already reassociate: their last horizontal step may too.
    # x86: exp's vscalefps (shlo-approximate-math on AVX-512 hosts).
    "convert-vector-to-llvm{reassociate-fp-reductions=true enable-x86=true}",
    "convert-arith-to-llvm",
    "convert-complex-to-llvm",
    # Not earlier: it converts arith ops too, before shlo-expand-f64-truncation
    # could expand their bf16 truncations (which would flush subnormals).
    "convert-openmp-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "convert-index-to-llvm",
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
    # Calls to bare-pointer kernels read one field of most memref descriptors:
    # fold the rest away, since LLVM compiles the glue without optimizing it.
    CANONICALIZE,
)


# Passes for floats of 16 bits and fewer, which LLVM cannot compute with:
# a program without such types skips them (GPT-2: 0.13 s of walking).
NARROW_FLOAT_PASSES = frozenset(
    (*NARROW_FLOAT_EMULATION, "shlo-expand-small-float-conversions", "shlo-expand-f64-truncation")
)
# Anywhere in the text ("4xbf16" has no word boundary): a false match only
# keeps the passes.
_NARROW_FLOAT = re.compile(r"f16|f8E|f6E|f4E")


def uses_narrow_floats(module: ir.Module) -> bool:
    """Whether ``module`` mentions a float type of 16 bits or fewer (or may: it reads text)."""
    # Printing (large constants elided) and a search: 8 ms on GPT-2.
    text = module.operation.get_asm(large_elements_limit=16, assume_verified=True)
    return _NARROW_FLOAT.search(text) is not None


# VECTORIZED, but the elementwise ops a kernel can compute call it: their code is
# not generated, so LLVM has less to compile. The bench's elementwise chain and
# MLP compile in 16 and 18 ms instead of 57 and 48 (XLA: 28-42), but the chain
# runs 1.5x as long (bench/README.md, "A precompiled elementwise kernel").
FAST_COMPILE = dataclasses.replace(VECTORIZED, name="fast-compile", elementwise_kernel=True)

STRATEGIES = {strategy.name: strategy for strategy in (SCALAR_LOOPS, VECTORIZED, FAST_COMPILE)}


def default_strategy() -> CodegenStrategy:
    """SHLO_CODEGEN_STRATEGY names the strategy: vectorized (the default), fast-compile or
    scalar-loops."""
    name = os.environ.get("SHLO_CODEGEN_STRATEGY", "vectorized")
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"SHLO_CODEGEN_STRATEGY={name!r} is not a codegen strategy; "
            f"expected one of {', '.join(STRATEGIES)}"
        ) from None


@dataclass(frozen=True)
class CpuPipeline:
    """The stages from static StableHLO to the LLVM dialect, in order."""

    strategy: CodegenStrategy = field(default_factory=lambda: default_strategy())
    # A concatenation no elementwise op fuses becomes copies into slices, a
    # large reverse a generic reading by index, and a reduction over every
    # dimension two reductions, the first with a parallel loop: the vector
    # code generation threads them (upstream's forms ran on one thread).
    pre_linalg: tuple[str, ...] = (
        # Each distinct layer of a model goes through the passes below once.
        "shlo-outline-repeated-layers",
        *DECOMPOSITIONS,
        "shlo-lower-concatenate",
        "shlo-lower-reverse",
        "shlo-split-full-reductions",
        # int8 matmuls into i32: the i32 matmul recipe, not scalar loops.
        "shlo-widen-integer-dots",
    )
    # Threads the generated code runs on; None: every core of the machine.
    threads: int | None = None
    # Subnormal floats computed as zero, as XLA's CPU code computes them
    # (shlo-flush-denormals); False: IEEE arithmetic, as StableHLO specifies.
    flush_denormals: bool = False
    # f32 matmuls and 2-D convolutions call kernels built once per machine
    # (shlo-call-precompiled-kernels) instead of code generated for each; None: where
    # there is a C compiler to build them, unless SHLO_PRECOMPILED_KERNELS=0.
    precompiled_kernels: bool | None = None

    @property
    def calls_precompiled_kernels(self) -> bool:
        """``precompiled_kernels``, or the default."""
        from shlo.backends.cpu import precompiled

        if self.precompiled_kernels is not None:
            return self.precompiled_kernels
        return os.environ.get("SHLO_PRECOMPILED_KERNELS", "1") != "0" and precompiled.enabled()

    @property
    def thread_count(self) -> int:
        """``threads``, or the default; 1 without an OpenMP runtime to run more."""
        from shlo.backends.cpu.runtime import openmp_library

        if openmp_library() is None:
            return 1
        return self.threads if self.threads is not None else default_threads()

    def stages(self) -> list[tuple[str, list[str]]]:
        return [
            ("legalize-to-linalg", to_linalg_stage("cpu", self.pre_linalg)),
            (
                "tensor-codegen",
                self.strategy.tensor_stage(self.thread_count, self.calls_precompiled_kernels),
            ),
            ("bufferize", self._bufferize()),
            ("loop-codegen", self.strategy.loop_stage(self.thread_count)),
            ("to-llvm", self._to_llvm()),
        ]

    def _bufferize(self) -> list[str]:
        stage = list(_BUFFERIZE)
        if self.strategy.recipes and self.calls_precompiled_kernels:
            # Right before bufferization, which must see where each call reads its
            # operands (shlo.passes.cpu.call_precompiled_kernels).
            at = next(i for i, e in enumerate(stage) if e.startswith("one-shot-bufferize"))
            stage.insert(at, f"shlo-call-precompiled-kernels{{threads={self.thread_count}}}")
        return stage

    def _to_llvm(self) -> list[str]:
        if not self.flush_denormals:
            return list(_TO_LLVM)
        # Once @main takes its one pointer, while it is still a func.func.
        at = _TO_LLVM.index("shlo-pack-entry-arguments") + 1
        return [*_TO_LLVM[:at], "shlo-flush-denormals", *_TO_LLVM[at:]]

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
