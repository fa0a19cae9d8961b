"""shlo-parallel-reductions: a reduction over a contiguous row becomes a block of threads per row.

Ours: upstream's ``convert-linalg-to-parallel-loops`` keeps every reduction
dimension as a serial loop inside one thread per output element, so
softmax's 4096-element rows are summed by one thread each while the rest of
the GPU idles. Each reduction this pass takes becomes a ``gpu.launch``
with one block per output element: the block's threads stride over the
reduction (consecutive threads on consecutive addresses), each folding its
elements into a partial result that starts at the combiner's identity; then
``gpu.all_reduce`` combines the partials (upstream lowers it to warp
shuffles and shared memory), and thread 0 combines the total into the
output, which holds the reduction's initial value.

It takes a ``linalg.generic`` on buffers with one output whose body ends
in ``combine(out, f(inputs))`` for a combiner with an identity (add, mul,
max, min, and, or, xor), on f32, f64, i32 or i64, where:
- every input is read at every parallel index (elementwise producers fused
  in, or values broadcast along the reduction): a contraction, whose
  inputs miss a parallel dimension, reuses its inputs and is left alone;
- the innermost loop dimension is a reduction, or the outputs are few; a
  reduction over an outer dimension keeps a thread per output, whose
  neighbours then read neighbouring addresses;
- the reduction has at least MIN_REDUCTION elements.

A ``linalg.fill`` of the output right before the reduction (how the
reduction's initial value is set) is folded in: thread 0 combines the total
with the fill's scalar, one kernel fewer.

Float sums are reassociated, as XLA's GPU reductions are.

  linalg.generic {iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x4096xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  ==>
  gpu.launch blocks(%row, ...) in (%c8, ...) threads(%t, ...) in (%nt = %c256, ...) {
    %partial = scf.for %i = %t to %c4096 step %nt iter_args(%acc = %minus_zero) -> (f32) {
      %in = memref.load %x[%row, %i] : memref<8x4096xf32>
      %0 = arith.addf %acc, %in : f32
      scf.yield %0 : f32
    }
    %total = gpu.all_reduce add %partial uniform {} : (f32) -> f32
    scf.if (%t == 0) { %sum[%row] = %total + %sum[%row] }
  }
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import affine, arith, gpu, ir, memref, scf
from shlo.ir_utils import index_constant, ops_named, remap_operands
from shlo.pass_framework import Pass

THREADS_PER_BLOCK = 256
# Below this many elements per output, one thread per output does as well.
MIN_REDUCTION = 64
# With fewer outputs than this, a reduction over an outer dimension also gets a
# block per output: a thread per output would leave most of the GPU idle.
FEW_OUTPUTS = 1024

# arith combiner -> (gpu.all_reduce operation, identity as a function of the type).
_FLOAT_COMBINERS = {
    "arith.addf": ("add", lambda t: -0.0),
    "arith.mulf": ("mul", lambda t: 1.0),
    "arith.maximumf": ("maximumf", lambda t: -math.inf),
    "arith.minimumf": ("minimumf", lambda t: math.inf),
    "arith.maxnumf": ("maxnumf", lambda t: math.nan),
    "arith.minnumf": ("minnumf", lambda t: math.nan),
}
_INTEGER_COMBINERS = {
    "arith.addi": ("add", lambda width: 0),
    "arith.muli": ("mul", lambda width: 1),
    "arith.andi": ("and", lambda width: -1),
    "arith.ori": ("or", lambda width: 0),
    "arith.xori": ("xor", lambda width: 0),
    "arith.maxsi": ("maxsi", lambda width: -(1 << (width - 1))),
    "arith.minsi": ("minsi", lambda width: (1 << (width - 1)) - 1),
    "arith.maxui": ("maxui", lambda width: 0),
    "arith.minui": ("minui", lambda width: -1),
}


@dataclass
class _Reduction:
    op: ir.Operation
    combiner: ir.Operation
    partial: ir.Value  # the body's f(inputs), combined into the accumulator
    all_reduce_kind: str
    identity: ir.Attribute
    parallel_dims: list[int]
    reduction_dims: list[int]
    sizes: list[int]


def _match(op: ir.Operation) -> _Reduction | None:
    """The reduction ``op`` is, when this pass can take it (see the module doc)."""
    if op.name != "linalg.generic" or len(op.results) != 0:
        return None
    segments = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    inputs, outputs = segments[0], segments[1]
    if outputs != 1:
        return None
    operand_types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.MemRefType) and t.has_static_shape for t in operand_types):
        return None
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    kinds = ["reduction" in it for it in iterators]
    reduction_dims = [d for d, is_reduction in enumerate(kinds) if is_reduction]
    parallel_dims = [d for d, is_reduction in enumerate(kinds) if not is_reduction]
    if not reduction_dims:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    sizes = _loop_sizes(maps, operand_types)
    if sizes is None:
        return None
    reduction_size = math.prod(sizes[d] for d in reduction_dims)
    outputs_count = math.prod(sizes[d] for d in parallel_dims)
    if reduction_size < MIN_REDUCTION or outputs_count < 1:
        return None
    if not kinds[-1] and outputs_count >= FEW_OUTPUTS:
        return None
    # Every input read at every parallel index: no reuse across outputs.
    for input_map in maps[:inputs]:
        if not set(parallel_dims) <= _dims_used(input_map):
            return None
    output_map = maps[inputs]
    if not output_map.is_projected_permutation:
        return None
    body = op.regions[0].blocks[0]
    out_argument = body.arguments[inputs]
    element = out_argument.type
    yield_op = body.operations[len(body.operations) - 1]
    if len(yield_op.operands) != 1:
        return None
    combiner = yield_op.operands[0].owner
    if not isinstance(combiner, ir.OpView | ir.Operation) or len(combiner.operands) != 2:
        return None
    combiner = combiner.operation
    uses = list(out_argument.uses)
    if len(uses) != 1 or uses[0].owner.operation != combiner:
        return None
    partial = combiner.operands[1 - uses[0].operand_number]
    kind_identity = _combiner(combiner.name, element)
    if kind_identity is None:
        return None
    kind, identity = kind_identity
    return _Reduction(op, combiner, partial, kind, identity, parallel_dims, reduction_dims, sizes)


def _dim_position(expr: ir.AffineExpr) -> int | None:
    """The dimension ``expr`` is, None when it is not a plain dimension."""
    try:
        return ir.AffineDimExpr(expr).position
    except ValueError:
        return None


def _dims_used(indexing_map: ir.AffineMap) -> set[int]:
    """The dimensions the results of ``indexing_map`` depend on."""
    results = str(indexing_map).split("->", 1)[1]
    return {int(d) for d in re.findall(r"\bd(\d+)\b", results)}


def _combiner(name: str, element: ir.Type) -> tuple[str, ir.Attribute] | None:
    if isinstance(element, ir.F32Type | ir.F64Type) and name in _FLOAT_COMBINERS:
        kind, identity = _FLOAT_COMBINERS[name]
        return kind, ir.FloatAttr.get(element, identity(element))
    if isinstance(element, ir.IntegerType) and element.width in (32, 64):
        if name in _INTEGER_COMBINERS:
            kind, identity = _INTEGER_COMBINERS[name]
            return kind, ir.IntegerAttr.get(element, identity(element.width))
    return None


def _loop_sizes(maps: list[ir.AffineMap], types: list[ir.MemRefType]) -> list[int] | None:
    """Each loop dimension's size, from an operand dimension indexed by it alone."""
    count = maps[0].n_dims
    sizes: list[int | None] = [None] * count
    for indexing_map, memref_type in zip(maps, types):
        for result, size in zip(indexing_map.results, memref_type.shape):
            position = _dim_position(result)
            if position is not None:
                sizes[position] = size
    return None if None in sizes else sizes  # type: ignore[return-value]


def _delinearize(linear: ir.Value, dims: list[int], sizes: list[int]) -> dict[int, ir.Value]:
    """Row-major indices of ``dims`` (sizes[d] each) from one linear index."""
    indices: dict[int, ir.Value] = {}
    for position, dim in enumerate(dims):
        inner = math.prod(sizes[d] for d in dims[position + 1 :])
        value = arith.DivUIOp(linear, index_constant(inner)).result if inner > 1 else linear
        if position > 0:
            value = arith.RemUIOp(value, index_constant(sizes[dim])).result
        indices[dim] = value
    return indices


def _access(indexing_map: ir.AffineMap, ivs: list[ir.Value]) -> list[ir.Value]:
    """The operand indices ``indexing_map`` gives at loop indices ``ivs``."""
    indices = []
    for result in indexing_map.results:
        position = _dim_position(result)
        if position is not None:
            indices.append(ivs[position])
        else:
            single = ir.AffineMap.get(indexing_map.n_dims, 0, [result])
            indices.append(affine.AffineApplyOp(single, ivs).result)
    return indices


def _rewrite(reduction: _Reduction, fills: dict[ir.Operation, ir.Operation]) -> None:
    op = reduction.op
    segments = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    inputs = segments[0]
    operands = list(op.operands)
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    sizes = reduction.sizes
    body = op.regions[0].blocks[0]
    element = body.arguments[inputs].type
    outputs_count = math.prod(sizes[d] for d in reduction.parallel_dims)
    reduction_size = math.prod(sizes[d] for d in reduction.reduction_dims)
    fill = _initializing_fill(op, operands[inputs], fills)
    fill_value = fill.operands[0] if fill is not None else None
    with op.location, ir.InsertionPoint(op):
        launch = gpu.LaunchOp((outputs_count, 1, 1), (THREADS_PER_BLOCK, 1, 1))
        block = launch.regions[0].blocks[0]
        block_x, thread_x, block_dim_x = block.arguments[0], block.arguments[3], block.arguments[9]
        with ir.InsertionPoint(block):
            parallel = _delinearize(block_x, reduction.parallel_dims, sizes)
            identity = arith.ConstantOp(element, reduction.identity).result
            loop = scf.ForOp(thread_x, index_constant(reduction_size), block_dim_x, [identity])
            with ir.InsertionPoint(loop.body):
                indices = {**parallel}
                indices.update(
                    _delinearize(loop.induction_variable, reduction.reduction_dims, sizes)
                )
                ivs = [indices[d] for d in range(len(sizes))]
                mapping: dict[ir.Value, ir.Value] = {}
                for position in range(inputs):
                    loaded = memref.LoadOp(operands[position], _access(maps[position], ivs))
                    mapping[body.arguments[position]] = loaded.result
                accumulator = loop.inner_iter_args[0]
                mapping[body.arguments[inputs]] = accumulator
                _clone_body(body, reduction.combiner, mapping, ivs)
                combined = _clone_op(reduction.combiner, mapping)
                scf.YieldOp([combined])
            kind = ir.Attribute.parse(f"#gpu<all_reduce_op {reduction.all_reduce_kind}>")
            total = gpu.AllReduceOp(loop.results[0], op=kind, uniform=True).result
            first = arith.CmpIOp(arith.CmpIPredicate.eq, thread_x, index_constant(0)).result
            store = scf.IfOp(first)
            with ir.InsertionPoint(store.then_block):
                output = operands[inputs]
                where = _access(maps[inputs], ivs_for_output(parallel, len(sizes)))
                initial = (
                    fill_value if fill_value is not None else memref.LoadOp(output, where).result
                )
                mapping = {body.arguments[inputs]: initial, reduction.partial: total}
                memref.StoreOp(_clone_op(reduction.combiner, mapping), output, where)
                scf.YieldOp([])
            gpu.TerminatorOp()
    op.erase()
    if fill is not None:
        fill.erase()  # thread 0 combines with the fill's value instead: one kernel fewer


def fills_before(block: ir.Block) -> dict[ir.Operation, ir.Operation]:
    """Each op of ``block`` that directly follows a ``linalg.fill`` -> that fill."""
    fills, previous = {}, None
    for op in block.operations:
        op = op.operation
        if previous is not None and previous.name == "linalg.fill":
            fills[op] = previous
        previous = op
    return fills


def _initializing_fill(
    op: ir.Operation, output: ir.Value, fills: dict[ir.Operation, ir.Operation]
) -> ir.Operation | None:
    """The ``linalg.fill`` of ``output`` right before ``op``, if that is what sets its
    initial value (every element the same scalar)."""
    fill = fills.get(op.operation)
    if fill is None or len(fill.results) or len(fill.operands) != 2:
        return None
    return fill if fill.operands[1] == output else None


def ivs_for_output(parallel: dict[int, ir.Value], count: int) -> list[ir.Value]:
    """Loop indices for the output's map, which reads parallel dimensions only."""
    zero = index_constant(0)
    return [parallel.get(d, zero) for d in range(count)]


def _clone_op(op: ir.Operation, mapping: dict[ir.Value, ir.Value]) -> ir.Value:
    clone = op.clone()
    for index, operand in enumerate(op.operands):
        if operand in mapping:
            clone.operands[index] = mapping[operand]
    for old, new in zip(op.results, clone.results):
        mapping[old] = new
    return clone.results[0]


def _clone_body(
    body: ir.Block,
    combiner: ir.Operation,
    mapping: dict[ir.Value, ir.Value],
    ivs: list[ir.Value],
) -> None:
    """Clone the body's ops before the combiner, linalg.index becoming the loop index."""
    for inner in body.operations:
        inner = inner.operation
        if inner == combiner or inner.name == "linalg.yield":
            continue
        if inner.name == "linalg.index":
            dim = ir.IntegerAttr(inner.attributes["dim"]).value
            mapping[inner.results[0]] = ivs[dim]
            continue
        clone = inner.clone()
        remap_operands(clone, mapping)
        for old, new in zip(inner.results, clone.results):
            mapping[old] = new


@dataclass(frozen=True)
class ParallelReductionsPass(Pass):
    """Reductions over contiguous rows -> a gpu.launch of a block per output element."""

    argument: ClassVar[str] = "shlo-parallel-reductions"

    def run(self, module: ir.Operation) -> None:
        # Read once per block: a rewrite erases only the fill its own reduction follows.
        fills_of_block: dict[ir.Block, dict[ir.Operation, ir.Operation]] = {}
        for op in ops_named(module, "linalg.generic"):
            reduction = _match(op)
            if reduction is not None:
                block = op.operation.block
                if block not in fills_of_block:
                    fills_of_block[block] = fills_before(block)
                _rewrite(reduction, fills_of_block[block])
