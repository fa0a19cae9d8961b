"""Long elementwise chains cut in two stages, for shlo-fuse-rows to run block by block.

A fused elementwise op whose body holds two or more math functions (the
bench's chain: tanh, then exp, a division and a square root) is bound by the
latency of its body, not by the CPU's arithmetic: each vector goes through
about 60 dependent operations, and the out-of-order core cannot hold enough
of them to overlap one tile's work with the next one's. On the Zen 4 the
generated chain took 40 cycles per 16 values where its FMA pipes needed 28.
Cut in two ops, each run over a block of values that stays in the L1 cache
(shlo-fuse-rows tiles both in one loop over blocks), each loop's body is half
as long and the core overlaps its iterations: in C, the same vector code
went from 48 to 36 cycles per 16 values (bench/README.md, "Long chains in
two stages"). The values are the same bits: no operation changes, and the
value passed between the stages is stored as the f32 it is.

Upstream has nothing that splits a linalg.generic's body.
"""

from __future__ import annotations

import math

from shlo._mlir_compat import ir
from shlo.ir_utils import attribute_dict, linalg_generic_parts, static_shape

# What a body op costs in dependent vector operations once lowered: a math
# function becomes about 20 (shlo-approximate-math, or a call), a division
# or a square root waits about as long as 6 FMAs, anything else is one op.
FUNCTION_WEIGHT = 20
LONG_LATENCY_WEIGHT = 6
_FUNCTIONS = frozenset(
    "math." + name
    for name in (
        "exp exp2 expm1 log log1p log2 log10 tanh sinh cosh sin cos tan asin acos atan "
        "atan2 asinh acosh atanh erf erfc powf fpowi cbrt"
    ).split()
)
_LONG_LATENCY = frozenset(("arith.divf", "math.sqrt", "math.rsqrt"))
# Lighter bodies stay whole: one math function and a few ops (GPT-2's
# gelu, SiLU) have half the chain to wait for, and the elementwise kernel
# takes the MLP's gelu beside its matmul only as one op.
MIN_WEIGHT = 2 * FUNCTION_WEIGHT
# Each stage carries at least this much: a function, or not worth a pass over the block.
MIN_STAGE_WEIGHT = FUNCTION_WEIGHT
# Below this many values there are too few blocks to pay for the loop over them.
MIN_ELEMENTS = 8192


def op_weight(op: ir.Operation) -> int:
    name = op.name
    if name in _FUNCTIONS:
        return FUNCTION_WEIGHT
    if name in _LONG_LATENCY:
        return LONG_LATENCY_WEIGHT
    return 0 if name == "arith.constant" else 1


def heavy_enough(op: ir.Operation) -> bool:
    """Whether the body of ``op`` (a linalg.generic) weighs at least ``MIN_WEIGHT``: the
    first, cheap test of a long chain."""
    total = 0
    for inner in op.regions[0].blocks[0].operations:
        total += op_weight(inner.operation)
        if total >= MIN_WEIGHT:
            return True
    return False


def _defined_in(value: ir.Value, ops: set[ir.Operation]) -> bool:
    owner = value.owner
    return not isinstance(owner, ir.Block) and owner.operation in ops


def _in_use_order(body: list[ir.Operation], yielded: ir.Value) -> list[ir.Operation] | None:
    """``body`` in the order a walk from the yielded value first needs each op: an op
    computed early but read late (``1 + b`` of a division at the end) moves next to
    its reader, so that it does not cross every cut. None when an op is never read."""
    inside = set(body)
    order: list[ir.Operation] = []
    done: set[ir.Operation] = set()
    if not _defined_in(yielded, inside):
        return None
    # Depth first, operands in order, each op after its operands.
    stack: list[tuple[ir.Operation, int]] = [(yielded.owner.operation, 0)]
    while stack:
        op, next_operand = stack.pop()
        operands = op.operands
        while next_operand < len(operands):
            operand = operands[next_operand]
            next_operand += 1
            if _defined_in(operand, inside) and operand.owner.operation not in done:
                stack.append((op, next_operand))
                stack.append((operand.owner.operation, 0))
                break
        else:
            if op not in done:
                done.add(op)
                order.append(op)
    return order if len(order) == len(body) else None


def _cut(body: list[ir.Operation], yielded: ir.Value) -> tuple[int, ir.Value] | None:
    """Where to cut ``body`` (ops before the index are the first stage) and the one
    f32 value that crosses: the cut with the closest stage weights, or None."""
    weights = [op_weight(op) for op in body]
    total = sum(weights)
    if total < MIN_WEIGHT:
        return None
    inside = set(body)
    # The last position that reads each value a body op defines (len(body): the yield).
    last_read: dict[ir.Value, int] = {}
    for index, op in enumerate(body):
        for operand in op.operands:
            if _defined_in(operand, inside):
                last_read[operand] = index
    if _defined_in(yielded, inside):
        last_read[yielded] = len(body)
    # Values live across each cut: defined before it and read at or after it.
    closing: dict[int, list[ir.Value]] = {}
    for value, last in last_read.items():
        closing.setdefault(last, []).append(value)
    f32 = ir.F32Type.get()
    live: set[ir.Value] = set()
    best: tuple[int, int, ir.Value] | None = None
    first = 0
    for index in range(1, len(body)):
        op = body[index - 1]
        first += weights[index - 1]
        live.update(result for result in op.results if result in last_read)
        live.difference_update(closing.get(index - 1, ()))
        if len(live) != 1 or first < MIN_STAGE_WEIGHT or total - first < MIN_STAGE_WEIGHT:
            continue
        (value,) = live
        imbalance = abs(total - 2 * first)
        if value.type == f32 and (best is None or imbalance < best[0]):
            best = (imbalance, index, value)
    return None if best is None else (best[1], best[2])


def _move_into(
    ops: list[ir.Operation], block: ir.Block, replaced: dict[ir.Value, ir.Value]
) -> None:
    """Move ``ops`` to the end of ``block``, their operands in ``replaced`` replaced."""
    for op in ops:
        for index, operand in enumerate(op.operands):
            if operand in replaced:
                op.operands[index] = replaced[operand]
        op.detach_from_parent()
        block.append(op)


def _generic(
    like: ir.Operation,
    inputs: list[ir.Value],
    input_maps: list[ir.Attribute],
    output: ir.Value,
    output_map: ir.Attribute,
) -> ir.Operation:
    attributes = attribute_dict(like)
    attributes["indexing_maps"] = ir.ArrayAttr.get([*input_maps, output_map])
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(inputs), 1])
    return ir.Operation.create(
        "linalg.generic",
        results=[output.type],
        operands=[*inputs, output],
        attributes=attributes,
        regions=1,
    )


def split_long_chain(op: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """Replace an elementwise ``linalg.generic`` whose body is a long chain by two:
    the first stage's result, an f32 tensor of the op's shape, is the second's first
    input. None, and ``op`` unchanged, when it is not such a chain or has no cut
    that one f32 value crosses."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    parts = linalg_generic_parts(op)
    shape = static_shape(op.results[0])
    if not parts.all_parallel or len(parts.outputs) != 1 or shape is None:
        return None
    if math.prod(shape) < MIN_ELEMENTS or list(parts.output_args[0].uses):
        return None
    output_map = parts.output_map_attrs[0]
    rank = len(shape)
    if parts.output_maps[0] != ir.AffineMap.get_identity(rank):
        return None
    *body, terminator = [o.operation for o in op.regions[0].blocks[0].operations]
    if any(len(o.regions) for o in body):
        return None
    body = _in_use_order(body, terminator.operands[0])  # type: ignore[assignment]
    if body is None:
        return None
    found = _cut(body, terminator.operands[0])
    if found is None:
        return None
    index, crossing = found
    first_ops, second_ops = body[:index], [*body[index:], terminator]
    first_set, second_set = set(first_ops), set(second_ops)

    def inputs_read_by(ops: set[ir.Operation]) -> list[int]:
        return [
            i
            for i, argument in enumerate(parts.input_args)
            if any(use.owner.operation in ops for use in argument.uses)
        ]

    first_inputs, second_inputs = inputs_read_by(first_set), inputs_read_by(second_set)
    f32 = ir.F32Type.get()
    with op.location, ir.InsertionPoint(op):
        empty = ir.Operation.create(
            "tensor.empty", results=[ir.RankedTensorType.get(shape, f32)]
        ).result
        first = _generic(
            op,
            [parts.inputs[i] for i in first_inputs],
            [parts.input_map_attrs[i] for i in first_inputs],
            empty,
            output_map,
        )
        block = first.regions[0].blocks.append(
            *(parts.input_args[i].type for i in first_inputs), f32
        )
        _move_into(
            first_ops,
            block,
            {parts.input_args[i]: block.arguments[j] for j, i in enumerate(first_inputs)},
        )
        with ir.InsertionPoint(block):
            ir.Operation.create("linalg.yield", operands=[crossing])
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        second = _generic(
            op,
            [first.results[0], *(parts.inputs[i] for i in second_inputs)],
            [identity, *(parts.input_map_attrs[i] for i in second_inputs)],
            parts.outputs[0],
            output_map,
        )
        block = second.regions[0].blocks.append(
            f32,
            *(parts.input_args[i].type for i in second_inputs),
            parts.output_args[0].type,
        )
        replaced = {crossing: block.arguments[0]}
        replaced.update(
            (parts.input_args[i], block.arguments[j + 1]) for j, i in enumerate(second_inputs)
        )
        _move_into(second_ops, block, replaced)
    op.results[0].replace_all_uses_with(second.results[0])
    op.erase()
    return first, second
