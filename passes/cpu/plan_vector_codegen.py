"""shlo-plan-vector-codegen: tile, thread and vectorize elementwise ops and reductions.

Ours because upstream is missing: MLIR has the transforms (tiling into
``scf.forall`` and ``scf.for``, loop peeling, ``tile_reduction_using_for``,
vectorization) but no pass that picks them per op; IREE and XLA choose tile
sizes per op from its shapes. This pass plans each static ``linalg.generic``
and ``linalg.fill`` on tensors whose element types the vector lowering
handles, tags it with ``shlo.codegen_op = N``, and writes a transform sequence
that ``transform-interpreter`` applies next (``shlo-erase-codegen-recipes``
removes the sequence and the tags):

- the outermost parallel loop is split over ``threads`` in an ``scf.forall``
  when the op is large enough to pay for a thread;
- the loop that walks the innermost (contiguous) dimension of the op's
  operands is the vector loop: tiled by one vector of 16 lanes x ``unroll``
  registers, peeled so that full tiles are static, and vectorized; every
  other loop is tiled by 1;
- a reduction along the vector loop first becomes partial sums of one tile
  each (``tile_reduction_using_for``), combined once at the end, so the inner
  loop has no horizontal reduction.

Ops the vectorizer rejects keep their tiles and become scalar loops. A
generic that is not planned for vectors (its body gathers through
``tensor.extract``, picks with ``scf.if``, or computes in types the vector
lowering lacks) still has its outer parallel loop split over the threads
when its maps are plain dimensions: ``jnp.take_along_axis`` of [1024, 1024]
by [1024, 64] went from 1.04x to 0.49x XLA's time.

  %0 = linalg.generic {iterator_types = ["parallel"]} ins(%a : tensor<1000xf32>) ...
  ==>
  %0 = linalg.generic {...} ins(%a : tensor<1000xf32>) ... {shlo.codegen_op = 0}
  transform.named_sequence @__transform_main(...) {
    transform.sequence %root : !transform.any_op failures(suppress) {
      %op = transform.structured.match attributes {shlo.codegen_op = 0} ...
      %tiled, %loop = transform.structured.tile_using_for %op tile_sizes [64] ...
      ...
    }
    ...
  }
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.backends.cpu.codegen_recipes import (
    canonicalize_functions,
    main_sequence,
    sizes_text,
    suppressed_sequence,
)
from shlo.ir_utils import linalg_generic_parts, ops_named, static_shape
from shlo.pass_framework import Pass
from shlo.passes.cpu.insert_codegen_recipes import append_transform_sequence

TAG = "shlo.codegen_op"
VECTORIZE = "shlo.vectorize"
# On the functions whose vectors end in unit dims, which only they need dropped.
DROP_UNIT_DIMS = "shlo.drop_unit_dims"
# Below this many elements of work a thread costs more than it saves.
MIN_ELEMENTS_PER_THREAD = 1 << 15
# f16 and the small floats are emulated in f32 by scalar code. bf16 vectors
# are computed in f32 vectors (arith-emulate-unsupported-floats) and rounded
# by integer code (shlo-expand-f64-truncation): GPT-2 in bf16 ran 2.8x faster.
_VECTOR_ELEMENTS = ("f32", "f64", "bf16", "i1", "i8", "i16", "i32", "i64", "index")
# LLVM's x86 backend aborts ("Do not know how to soft promote this operator's
# operand") on bf16 vectors of some lengths (3, 7, 15, 62, 65 lanes seen),
# so a bf16 op's vector loop must be a multiple of 16: every tile and
# remainder is then one.
BF16_LANES_MULTIPLE = 16


def _vectorizable_type(type_: ir.Type) -> bool:
    if isinstance(type_, ir.ShapedType):
        type_ = type_.element_type
    return str(type_) in _VECTOR_ELEMENTS


def _vectorizable_memory(type_: ir.Type) -> bool:
    """Element types whose vectors are laid out in memory as their arrays are.

    A vector of i1 is stored as packed bits, but an array of i1 (numpy's bool)
    holds one byte per element.
    """
    return _vectorizable_type(type_) and str(ir.ShapedType(type_).element_type) != "i1"


# Lowered imprecisely on vectors but for f32 (shlo-approximate-math):
# convert-math-to-llvm turns them into exp(x) - 1 and log(1 + x), and
# shlo-precise-libm-calls fixes scalars only.
_IMPRECISE_ON_VECTORS = ("math.expm1", "math.log1p")


def _reads_its_init_and_an_index(op: ir.Operation) -> bool:
    """An elementwise op whose body reads its init and the index of a dimension.

    Upstream's vectorizer takes the op that combines the init for a
    reduction's combiner, and once the plan's tiling has left a unit
    dimension it builds a ``vector.multi_reduction`` of mismatched ranks,
    which the canonicalization after it folded into a wrong result: the
    init was dropped (``a @ b + jnp.eye(n)`` came out as the identity when
    shlo-write-over-dead-inputs made the sum read the product as its init).
    Such ops stay scalar loops.
    """
    parts = linalg_generic_parts(op)
    if not parts.all_parallel or not any(list(arg.uses) for arg in parts.output_args):
        return False
    return bool(ops_named(op, "linalg.index"))


def _body_is_vectorizable(op: ir.Operation) -> bool:
    """Element types the vector lowering handles, and no region inside the body."""
    if op.name == "linalg.generic" and _reads_its_init_and_an_index(op):
        return False
    for block in op.regions[0].blocks:
        for inner in block.operations:
            inner = inner.operation
            if inner.name in _IMPRECISE_ON_VECTORS and str(inner.results[0].type) != "f32":
                return False
            if len(inner.regions) or not all(_vectorizable_type(r.type) for r in inner.results):
                return False
            if not all(_vectorizable_type(o.type) for o in inner.operands):
                return False
    return True


# A transpose whose result fits in this much of the L2 cache (a matmul's
# block of a transposed weight, packed for its register tiles) walks its
# input's rows in the inner loop: the writes stay in cache, and the reads
# follow 16 rows of the input instead of jumping to 16 new rows at every
# square tile. GPT-2's [128, 768] x [3072, 768]^T with weights not in cache:
# 2.70 -> 2.43 ms; GPT-2, 12 layers, 113 -> 98 ms. Larger transposes keep
# the other order, whose writes follow the output's rows.
CACHED_TRANSPOSE_BYTES = 256 << 10


@dataclass(frozen=True)
class _Loops:
    """The loop nest of one op: sizes, which loops reduce, and the vector loop.

    Ops with equal loop nests share one plan.
    """

    sizes: tuple[int, ...]
    reductions: tuple[bool, ...]
    vector: int
    element_bits: int
    # A transpose: the operands' contiguous loops differ. Square tiles of
    # both loops are read and written whole, transposed in registers.
    transposed: int | None = None
    threaded: bool = False  # inside a loop that already runs on threads
    # Whether the op swaps its vector and transposed loops first
    # (transform.structured.interchange), so that the tile's minor dimension
    # is the one most operands hold contiguous.
    swapped: bool = False

    @property
    def trailing_unit_dims(self) -> bool:
        """Whether the vector shape ends in unit dims: loops after the vector loop
        (and the transposed one) go one iteration at a time."""
        last = max(self.vector, -1 if self.transposed is None else self.transposed)
        return last < len(self.sizes) - 1


def _element_bits(type_: ir.Type) -> int:
    element = ir.ShapedType(type_).element_type
    return 64 if str(element) == "index" else max(getattr(element, "width", 32), 8)


def _generic_loops(op: ir.Operation) -> _Loops | None:
    parts = linalg_generic_parts(op)
    operands = [*parts.inputs, *parts.outputs]
    maps = [*parts.input_maps, *parts.output_maps]
    kinds = [str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    sizes: list[int | None] = [None] * len(kinds)
    contiguous_loop: int | None = None
    largest = -1
    # Outputs first: on a tie the vector loop walks the output (a matmul's columns).
    for operand, map_ in zip(operands[::-1], maps[::-1]):
        if not isinstance(operand.type, ir.ShapedType):
            if not _vectorizable_type(operand.type):
                return None
            continue  # a scalar, broadcast to every lane
        shape = static_shape(operand)
        if shape is None or not _vectorizable_memory(operand.type):
            return None
        for position, expr in enumerate(map_.results):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[expr.position] = shape[position]
            elif not _is_zero(expr):
                return None  # reverse, pad, windows: tiling them needs more care
        # The vector loop walks the innermost dimension of the largest operand.
        elements = math.prod(shape)
        if shape and elements > largest and isinstance(map_.results[-1], ir.AffineDimExpr):
            largest, contiguous_loop = elements, ir.AffineDimExpr(map_.results[-1]).position
    if None in sizes or contiguous_loop is None or 0 in sizes:
        return None
    bits = max(_element_bits(o.type) for o in operands if isinstance(o.type, ir.ShapedType))
    reductions = tuple("reduction" in k for k in kinds)
    # A vector along a strided dimension is one scalar access per lane:
    # transposes are vectorized in square tiles, their partial tiles scalar.
    transposed = None
    for map_ in maps:
        loops_read = [
            ir.AffineDimExpr(e).position for e in map_.results if isinstance(e, ir.AffineDimExpr)
        ]
        if contiguous_loop in loops_read and loops_read[-1] != contiguous_loop:
            other = loops_read[-1]
            if any(reductions) or transposed not in (None, other):
                return None
            transposed = other
    if _has_bf16(operands) and sizes[contiguous_loop] % BF16_LANES_MULTIPLE:
        return None
    loops = _Loops(tuple(sizes), reductions, contiguous_loop, bits, transposed)  # type: ignore[arg-type]
    return _fewest_transposed(loops, maps) if transposed is not None else loops


def _fewest_transposed(loops: _Loops, maps: list[ir.AffineMap]) -> _Loops:
    """``loops`` with its two tiled loops swapped where that transposes fewer operands.

    A square tile is vectorized in the op's loop order: the later of the two
    loops is the vector's minor dimension, and each operand whose contiguous
    loop is the other one is read or written through a transpose in registers
    (16 shuffles of 16 lanes). A rotary embedding fused with the transpose of
    its keys reads four operands along one loop and writes one along the
    other: four transposes per tile instead of one (RoFormer's keys: 2,600
    LLVM ops and 0.5 s of code generation on the Zen 3, with the partial
    tiles below; 900 ops and 0.09 s with both changes).
    """
    assert loops.transposed is not None
    innermost = [
        ir.AffineDimExpr(m.results[-1]).position
        for m in maps
        if m.results and isinstance(m.results[-1], ir.AffineDimExpr)
    ]
    minor = max(loops.vector, loops.transposed)
    other = min(loops.vector, loops.transposed)
    if innermost.count(other) <= innermost.count(minor):
        return loops
    sizes = list(loops.sizes)
    sizes[minor], sizes[other] = sizes[other], sizes[minor]
    return dataclasses.replace(
        loops,
        sizes=tuple(sizes),
        vector=loops.transposed,
        transposed=loops.vector,
        swapped=True,
    )


def _threaded_loop(op: ir.Operation) -> tuple[tuple[int, ...], int] | None:
    """(loop sizes, the loop to split over threads) of a generic the vectorizer cannot take.

    Its outermost loop of more than one iteration must be parallel, and every
    operand's map plain dimensions or zeros: its tiles are then plain slices,
    whatever the body does (``scf.if``, ``tensor.extract`` from other
    tensors, element types the vector lowering lacks). Upstream's tiling
    slices a reversed or windowed operand wrongly even along a loop it does
    not tile (``-d1 + 2047`` untiled became a slice of one column), so those
    stay on one thread.
    """
    parts = linalg_generic_parts(op)
    kinds = [str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    sizes: list[int | None] = [None] * len(kinds)
    maps = [*parts.input_maps, *parts.output_maps]
    operands = [*parts.inputs, *parts.outputs]
    for operand, map_ in zip(operands, maps):
        if not isinstance(operand.type, ir.ShapedType):
            continue
        shape = static_shape(operand)
        if shape is None:
            return None
        for position, expr in enumerate(map_.results):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[expr.position] = shape[position]
    outer = next((i for i, size in enumerate(sizes) if size != 1), None)
    if outer is None or sizes[outer] is None or "parallel" not in kinds[outer]:
        return None
    for map_ in maps:
        if any(not isinstance(e, ir.AffineDimExpr) and not _is_zero(e) for e in map_.results):
            return None
    return tuple(size or 1 for size in sizes), outer


def _enclosing_function(op: ir.Operation) -> ir.Operation:
    parent = op.parent
    while parent.name != "func.func":
        parent = parent.parent
    return parent


def _in_forall(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.forall":
            return True
        parent = parent.parent
    return False


def _has_bf16(values: list[ir.Value]) -> bool:
    return any(
        isinstance(v.type, ir.ShapedType) and str(ir.ShapedType(v.type).element_type) == "bf16"
        for v in values
    )


def _fill_loops(op: ir.Operation) -> _Loops | None:
    shape = static_shape(op.results[0])
    if not shape or 0 in shape or not _vectorizable_memory(op.results[0].type):
        return None
    if _has_bf16(list(op.results)) and shape[-1] % BF16_LANES_MULTIPLE:
        return None
    bits = _element_bits(op.results[0].type)
    return _Loops(tuple(shape), (False,) * len(shape), len(shape) - 1, bits)


def _is_zero(expr: ir.AffineExpr) -> bool:
    return isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0


def _results(count: int) -> str:
    return "(!transform.any_op" + ", !transform.any_op" * count + ")"


@dataclass(frozen=True)
class PlanVectorCodegenPass(Pass):
    """Tag static elementwise ops and reductions and write their tiling and vectorization."""

    argument: ClassVar[str] = "shlo-plan-vector-codegen"
    threads: int = 1
    # Vector registers of 512 bits (AVX-512) per vector tile. Also for the long
    # chains of exp and tanh: 8 (as before 2026-12-06) ran the bench's chain at
    # best 4% faster on the 2-core EPYC (1.373 against 1.437 ms, medians 1.573
    # and 1.583) for 25% more LLVM time (its kernel 40 -> 30 ms with 4).
    unroll: int = 4
    vector_bits: int = 512

    def run(self, module: ir.Operation) -> None:
        plans: list[str] = []
        # Ops with the same loops share one plan: one transform for all of them.
        plan_index: dict[_Loops | tuple[str, int, int, int], int] = {}
        for op in ops_named(module, "linalg.generic", "linalg.fill"):
            loops = (
                _fill_loops(op)
                if op.name == "linalg.fill"
                else _generic_loops(op)
                if _body_is_vectorizable(op)
                else None
            )
            if loops is None:
                self._thread_only(op, plans, plan_index)
                continue
            if math.prod(loops.sizes) < 2:
                continue
            if _in_forall(op):
                # Inside shlo-fuse-rows' loop over blocks of rows: already threaded.
                loops = dataclasses.replace(loops, threaded=True)
            index = plan_index.setdefault(loops, len(plan_index))
            if index == len(plans):
                plans.append(self._plan(index, loops))
            op.attributes[TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index)
            if loops.trailing_unit_dims:
                _enclosing_function(op).attributes[DROP_UNIT_DIMS] = ir.UnitAttr.get()
        # transform-interpreter needs a sequence, even an empty one.
        body = "".join(plans) + (_AFTER_TILING if plans else "")
        append_transform_sequence(module, main_sequence(body))

    def _thread_only(
        self,
        op: ir.Operation,
        plans: list[str],
        plan_index: dict[_Loops | tuple[str, int, int, int], int],
    ) -> None:
        """Split a large generic that is not vectorized over the threads, by its outer loop."""
        if op.name != "linalg.generic" or self.threads < 2 or _in_forall(op):
            return
        found = _threaded_loop(op)
        if found is None:
            return
        sizes, outer = found
        if math.prod(sizes) < 2 * MIN_ELEMENTS_PER_THREAD or sizes[outer] < self.threads:
            return
        chunk = -(-sizes[outer] // self.threads)
        index = plan_index.setdefault(("threads", len(sizes), outer, chunk), len(plan_index))
        if index == len(plans):
            plans.append(
                suppressed_sequence(
                    [_match(index), _split_over_threads("%op", len(sizes), outer, chunk)]
                )
            )
        op.attributes[TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index)

    def _plan(self, index: int, loops: _Loops) -> str:
        rank = len(loops.sizes)
        lanes = max(self.vector_bits // loops.element_bits, 1)
        tile = lanes * self.unroll
        v = loops.vector
        lines = [_match(index)]
        handle = "%op"
        if loops.swapped:
            assert loops.transposed is not None
            order = list(range(rank))
            order[v], order[loops.transposed] = loops.transposed, v
            lines.append(
                f"%swapped = transform.structured.interchange {handle}"
                f" iterator_interchange = {sizes_text(order)}"
                " : (!transform.any_op) -> !transform.any_op"
            )
            handle = "%swapped"
        # Threads split the outermost parallel loop that has enough iterations.
        total = math.prod(loops.sizes)
        if self.threads > 1 and not loops.threaded and total >= 2 * MIN_ELEMENTS_PER_THREAD:
            outer = next(
                (i for i in range(rank) if not loops.reductions[i] and loops.sizes[i] > 1), None
            )
            if outer is not None:
                chunk = -(-loops.sizes[outer] // self.threads)
                if outer == v:
                    chunk = -(-chunk // tile) * tile
                elif outer == loops.transposed:
                    chunk = -(-chunk // lanes) * lanes
                lines.append(_split_over_threads(handle, rank, outer, chunk))
                handle = "%threaded"
        vector_reduces = loops.reductions[v]
        # Every loop but the vector loop goes one iteration at a time.
        sizes = [0 if size == 1 else 1 for size in loops.sizes]
        if loops.transposed is not None:
            sizes[v] = sizes[loops.transposed] = lanes
        elif vector_reduces:
            sizes[v] = 0
        else:
            sizes[v] = tile if loops.sizes[v] > tile else 0
        order = list(range(rank))
        result_bytes = math.prod(loops.sizes) * loops.element_bits // 8
        if loops.transposed is not None and result_bytes <= CACHED_TRANSPOSE_BYTES:
            order = [d for d in order if d != loops.transposed] + [loops.transposed]
        tiled_loops = [i for i in order if sizes[i]]
        if tiled_loops:
            interchange = "" if order == sorted(order) else f" interchange = {sizes_text(order)}"
            lines.append(
                f"%tiled, %loops:{len(tiled_loops)} = transform.structured.tile_using_for {handle}"
                f" tile_sizes {sizes_text(sizes)}{interchange}"
                f" : (!transform.any_op) -> {_results(len(tiled_loops))}"
            )
            handle = "%tiled"
        if vector_reduces and loops.sizes[v] > tile:
            reduction_sizes = [0] * rank
            reduction_sizes[v] = tile
            lines.append(
                f"%fill, %partial, %combine, %rloop = "
                f"transform.structured.tile_reduction_using_for {handle}"
                f" by tile_sizes = {sizes_text(reduction_sizes)}"
                " : (!transform.any_op) -> (!transform.any_op, !transform.any_op,"
                " !transform.any_op, !transform.any_op)"
            )
            lines += [
                f'transform.annotate {name} "{VECTORIZE}" : !transform.any_op'
                for name in ("%fill", "%partial", "%combine")
            ]
            if loops.sizes[v] % tile:
                lines.append(_peel("%rloop"))
        elif loops.transposed is None:
            lines.append(f'transform.annotate {handle} "{VECTORIZE}" : !transform.any_op')
            if sizes[v] and loops.sizes[v] % tile:
                lines.append(_peel(f"%loops#{tiled_loops.index(v)}"))
        else:
            lines += _full_square_tiles(handle, loops, tiled_loops, lanes)
        return suppressed_sequence(lines)


def _full_square_tiles(handle: str, loops: _Loops, tiled_loops: list[int], lanes: int) -> list[str]:
    """Mark a transpose's square tiles to vectorize, and peel its partial tiles off as
    scalar loops.

    A static partial tile (8 of 24 rows: 16 + 8) would be vectorized too, its
    transposes lowered one element at a time (an extract and an insert each):
    the softmax of transformers' Flax encoders (XLM-R, RoFormer: probabilities
    times the head mask, written transposed for the next product, 24 tokens)
    was 2,100 LLVM ops that way, 650 with its partial tiles scalar. Each
    peeled tile's ops get the mark's name with another value (0), which the
    vectorization's match (the unit value) skips. The inner loop is peeled first, since peeling the outer one copies
    it; each partial loop is marked before the next peel invalidates its handle.
    """
    assert loops.transposed is not None
    lines = [f'transform.annotate {handle} "{VECTORIZE}" : !transform.any_op']
    for loop in sorted((loops.vector, loops.transposed), key=tiled_loops.index, reverse=True):
        if loops.sizes[loop] % lanes:
            suffix = f"_{loop}"
            lines += [
                _peel(f"%loops#{tiled_loops.index(loop)}", suffix),
                # One partial loop per op that shares the plan.
                f"transform.foreach %partial_tile{suffix} : !transform.any_op {{\n"
                "      ^bb0(%partial: !transform.any_op):\n"
                '        %scalar = transform.structured.match ops{["linalg.generic"]} in %partial'
                " : (!transform.any_op) -> !transform.any_op\n"
                "        %no = transform.param.constant 0 : i64 -> !transform.param<i64>\n"
                f'        transform.annotate %scalar "{VECTORIZE}" = %no'
                " : !transform.any_op, !transform.param<i64>\n"
                "      }",
            ]
    return lines


# After every op is tiled: vectorize the full tiles, drop unit dimensions, and
# keep accumulators in registers across the loops that update them. Unit
# dimensions go at both ends: a reduction over leading loops (ResNet's
# pooling over height and width, the channels the vector) vectorizes to
# vector<64x1x1xf32>, whose arith ops LLVM got as 64 one-lane ops each.
# Those patterns run only on the functions of such ops (DROP_UNIT_DIMS): on
# every function they cost the training step's interpreter 35 ms (50 -> 85). The
# vectorized functions are verified before the patterns run: invalid IR from
# the vectorizer (an upstream bug) fails the compile instead of being folded
# into wrong code, as a @ b + jnp.eye(n) once was (_reads_its_init_and_an_index).
#
# Canonicalization runs as the registered pass (canonicalize_functions),
# which sets its patterns up once, not once per function. That is also why
# it runs after the vector patterns rather than among them: the LLVM IR of
# the bench models and of bench/ops.py's 18 programs is the same either way,
# and the training step's interpreter run took 87 instead of 112 ms (101
# functions). No canonicalization follows the hoisting: the pipeline's
# canonicalize pass, next, does the same.
_AFTER_TILING = (
    """\
    %tiled_funcs = transform.structured.match ops{["func.func"]} in %root
      : (!transform.any_op) -> !transform.any_op
"""
    + canonicalize_functions("%tiled_funcs", "%funcs")
    + """\
    %vector_ops = transform.structured.match attributes {shlo.vectorize} in %root
      : (!transform.any_op) -> !transform.any_op
    transform.foreach %vector_ops : !transform.any_op {
    ^bb0(%one: !transform.any_op):
      transform.sequence %one : !transform.any_op failures(suppress) {
      ^bb1(%it: !transform.any_op):
        transform.structured.vectorize %it : !transform.any_op
      }
    }
    transform.verify %funcs : !transform.any_op
    %unit_dim_funcs = transform.structured.match ops{["func.func"]}
      attributes {shlo.drop_unit_dims} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %unit_dim_funcs {
      transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
    } : !transform.any_op
"""
    + canonicalize_functions("%funcs", "%canonical")
    + """\
    %for_loops = transform.structured.match ops{["scf.for"]} in %root
      : (!transform.any_op) -> !transform.any_op
    transform.foreach %for_loops : !transform.any_op {
    ^bb0(%loop: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
    }
"""
)


def _match(index: int) -> str:
    """``%op``: the ops that carry plan ``index``."""
    return (
        f"%op = transform.structured.match attributes {{{TAG} = {index} : i64}} in %r"
        " : (!transform.any_op) -> !transform.any_op"
    )


def _split_over_threads(handle: str, rank: int, loop: int, chunk: int) -> str:
    """``%threaded``: ``handle`` with its ``loop`` tiled by ``chunk`` in an scf.forall."""
    sizes = [0] * rank
    sizes[loop] = chunk
    return (
        f"%threaded, %forall = transform.structured.tile_using_forall {handle}"
        f" tile_sizes {sizes_text(sizes)}"
        " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)"
    )


def _peel(loop: str, suffix: str = "") -> str:
    """Split off the partial last tile, so the full tiles have static shapes."""
    return (
        f'%cast{suffix} = transform.cast {loop} : !transform.any_op to !transform.op<"scf.for">\n'
        f"      %full{suffix}, %partial_tile{suffix} = transform.loop.peel %cast{suffix}"
        ' : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)'
    )
