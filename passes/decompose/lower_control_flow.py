"""shlo-lower-control-flow: lower stablehlo.while, if and case to scf; drop optimization barriers.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.while``, ``stablehlo.if``, ``stablehlo.case`` and
``stablehlo.optimization_barrier`` alone. The region bodies are moved, not
copied, into the scf ops, so their StableHLO ops are legalized afterwards.
scf values carry signless element types: the linalg type converter does not
rewrite scf block arguments, so unsigned values cross the boundary through
``stablehlo.bitcast_convert`` (a no-op once legalized). ``case`` becomes
``scf.index_switch`` whose default is the last branch, which is what the spec
asks for an out-of-range index.

A counted while (the condition only ``i < N`` for constants ``i0`` and
``N``, the body returning ``i + 1``), which is how jax exports ``fori_loop``
and ``scan``, becomes an ``scf.for`` over ``N - i0`` iterations: one-shot
bufferization copies every carried buffer of an ``scf.while`` once per
iteration unless the body updates it in place, and an ``scf.for`` needs no
copy. The count is given to the body as a ``tensor.from_elements`` and its
final value is the constant ``max(i0, N)``.

  %r = stablehlo.while(%i = %c0) : tensor<i64>
  cond {
    %lt = stablehlo.compare LT, %i, %c10 : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %c1 : tensor<i64>
    stablehlo.return %next : tensor<i64>
  }
  ==>
  %r = scf.while (%i = %c0) : (tensor<i64>) -> tensor<i64> {
    %lt = stablehlo.compare LT, %i, %c10 : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %p = tensor.extract %lt[] : tensor<i1>
    scf.condition(%p) %i : tensor<i64>
  } do {
  ^bb0(%i: tensor<i64>):
    %next = stablehlo.add %i, %c1 : tensor<i64>
    scf.yield %next : tensor<i64>
  }
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import arith, ir, scf, tensor
from shlo.ir_utils import constant_array, create_constant, defining_op, index_constant, ops_named
from shlo.pass_framework import Pass


def signless(type_: ir.Type) -> ir.Type:
    """``type_`` with an unsigned integer element type made signless; other types as they are."""
    if not isinstance(type_, ir.RankedTensorType):
        return type_
    element = type_.element_type
    if not isinstance(element, ir.IntegerType) or not element.is_unsigned:
        return type_
    return ir.RankedTensorType.get(
        type_.shape, ir.IntegerType.get_signless(element.width), type_.encoding
    )


def bitcast(value: ir.Value, type_: ir.Type, ip: ir.InsertionPoint) -> ir.Value:
    """``value`` as ``type_`` (same bits), or ``value`` itself when the types match."""
    if value.type == type_:
        return value
    op = ir.Operation.create("stablehlo.bitcast_convert", results=[type_], operands=[value], ip=ip)
    return op.results[0]


def move_body(old: ir.Block, new: ir.Block, arguments: Sequence[ir.Value]) -> ir.Operation:
    """Move ``old``'s ops to the end of ``new``, with ``arguments`` for ``old``'s arguments.

    Returns the moved terminator, which the caller replaces.
    """
    for old_argument, value in zip(old.arguments, arguments):
        old_argument.replace_all_uses_with(value)
    end = ir.InsertionPoint(new)
    for op in list(old.operations):
        end.insert(op.detach_from_parent())
    return list(new.operations)[-1].operation


def block_arguments(block: ir.Block, types: Sequence[ir.Type]) -> list[ir.Value]:
    """``block``'s (signless) arguments, bitcast back to ``types`` at the start of the block."""
    return block_arguments_at(block, list(block.arguments), types)


def block_arguments_at(
    block: ir.Block, arguments: Sequence[ir.Value], types: Sequence[ir.Type]
) -> list[ir.Value]:
    """``arguments`` of ``block`` (signless), bitcast back to ``types`` at the block's end."""
    ip = ir.InsertionPoint(block)
    return [bitcast(argument, type_, ip) for argument, type_ in zip(arguments, types)]


def yield_signless(terminator: ir.Operation, name: str, prefix: Sequence[ir.Value] = ()) -> None:
    """Replace a stablehlo.return by ``name`` yielding ``prefix`` and its signless operands."""
    ip = ir.InsertionPoint(terminator)
    values = [bitcast(v, signless(v.type), ip) for v in terminator.operands]
    ir.Operation.create(name, operands=[*prefix, *values], loc=terminator.location, ip=ip)
    terminator.erase()


def replace_results(op: ir.Operation, new: ir.Operation) -> None:
    """Replace ``op``'s results by ``new``'s (signless) ones, bitcast back, and erase ``op``."""
    ip = ir.InsertionPoint(op)
    for old_result, new_result in zip(op.results, new.results):
        old_result.replace_all_uses_with(bitcast(new_result, old_result.type, ip))
    op.erase()


def extract_scalar(tensor: ir.Value, ip: ir.InsertionPoint) -> ir.Value:
    element = ir.RankedTensorType(tensor.type).element_type
    op = ir.Operation.create("tensor.extract", results=[element], operands=[tensor], ip=ip)
    return op.results[0]


@dataclass(frozen=True)
class Counter:
    """A while's carried counter that runs from ``start`` up to ``limit`` by 1."""

    position: int  # among the carried values
    start: int
    limit: int


def _integer_constant(value: ir.Value) -> int | None:
    array = constant_array(value)
    if array is None or array.shape != () or array.dtype.kind not in "iu":
        return None
    return int(array)


def find_counter(op: ir.Operation) -> Counter | None:
    """The counter of a ``stablehlo.while`` that is a counted loop, else None.

    Counted: the condition is only ``counter < limit`` (signed, a constant
    limit), the counter starts at a constant and the body returns
    ``counter + 1``, as jax's ``fori_loop`` and ``scan`` export.
    """
    condition = op.regions[0].blocks[0]
    operations = list(condition.operations)
    compare = defining_op(operations[-1].operands[0]) if operations[-1].operands else None
    if compare is None or compare.name != "stablehlo.compare":
        return None
    if any(o.name not in ("stablehlo.constant", "stablehlo.compare") for o in operations[:-1]):
        return None
    direction = str(compare.attributes["comparison_direction"])
    kind = compare.attributes["compare_type"] if "compare_type" in compare.attributes else None
    if "LT" not in direction or (kind is not None and "<comparison_type SIGNED>" not in str(kind)):
        return None
    counter, bound = compare.operands
    element = ir.RankedTensorType(counter.type).element_type
    if not isinstance(counter, ir.BlockArgument) or counter.owner != condition:
        return None
    if not isinstance(element, ir.IntegerType) or not element.is_signless:
        return None
    position = counter.arg_number
    limit = _integer_constant(bound)
    start = _integer_constant(op.operands[position])
    body = op.regions[1].blocks[0]
    step = defining_op(list(body.operations)[-1].operands[position])
    if limit is None or start is None or step is None or step.name != "stablehlo.add":
        return None
    counted = body.arguments[position]
    lhs, rhs = step.operands
    one = rhs if lhs == counted else lhs if rhs == counted else None
    if one is None or _integer_constant(one) != 1:
        return None
    return Counter(position, start, limit)


def lower_counted_while(op: ir.Operation, counter: Counter) -> None:
    """A counted ``stablehlo.while`` as an ``scf.for``, which bufferizes without copies.

    An ``scf.while`` whose body makes new values (not in-place updates)
    copies every carried buffer once per iteration; an ``scf.for`` does not.
    The counter's final value is a constant.
    """
    types = [value.type for value in op.operands]
    others = [i for i in range(len(types)) if i != counter.position]
    ip = ir.InsertionPoint(op)
    inits = [bitcast(op.operands[i], signless(types[i]), ip) for i in others]
    with ip:
        trips = max(0, counter.limit - counter.start)
        loop = scf.ForOp(index_constant(0), index_constant(trips), index_constant(1), inits)
    body = loop.body
    counter_type = ir.RankedTensorType(types[counter.position])
    with ir.InsertionPoint(body):
        element = counter_type.element_type
        iteration = arith.IndexCastOp(element, loop.induction_variable).result
        start = arith.ConstantOp(element, counter.start).result
        value = arith.AddIOp(iteration, start).result
        index = tensor.FromElementsOp(counter_type, [value]).result
    arguments = block_arguments_at(body, list(body.arguments)[1:], [types[i] for i in others])
    values = list(arguments)
    values.insert(counter.position, index)
    terminator = move_body(op.regions[1].blocks[0], body, values)
    kept = [terminator.operands[i] for i in others]
    ip_end = ir.InsertionPoint(terminator)
    ir.Operation.create(
        "scf.yield",
        operands=[bitcast(v, signless(v.type), ip_end) for v in kept],
        loc=terminator.location,
        ip=ip_end,
    )
    terminator.erase()
    with ip:
        final = create_constant(
            np.array(max(counter.start, counter.limit)), counter_type, op.location
        )
    results = list(loop.results)
    for position, result in enumerate(op.results):
        if position == counter.position:
            result.replace_all_uses_with(final.result)
        else:
            new = results[others.index(position)]
            result.replace_all_uses_with(bitcast(new, result.type, ip))
    op.erase()


def lower_while(op: ir.Operation) -> None:
    counter = find_counter(op)
    if counter is not None:
        lower_counted_while(op, counter)
        return
    types = [value.type for value in op.operands]
    carried = [signless(t) for t in types]
    ip = ir.InsertionPoint(op)
    inits = [bitcast(value, t, ip) for value, t in zip(op.operands, carried)]
    loop = ir.Operation.create(
        "scf.while", results=carried, operands=inits, regions=2, loc=op.location, ip=ip
    )
    locations = [op.location] * len(carried)
    for is_condition, old_region, new_region in zip((True, False), op.regions, loop.regions):
        new_block = new_region.blocks.append(*carried, arg_locs=locations)
        terminator = move_body(old_region.blocks[0], new_block, block_arguments(new_block, types))
        if is_condition:
            # The condition forwards the signless iteration values unchanged.
            condition = extract_scalar(terminator.operands[0], ir.InsertionPoint(terminator))
            ir.Operation.create(
                "scf.condition",
                operands=[condition, *new_block.arguments],
                loc=terminator.location,
                ip=ir.InsertionPoint(terminator),
            )
            terminator.erase()
        else:
            yield_signless(terminator, "scf.yield")
    replace_results(op, loop)


def lower_branches(op: ir.Operation, new: ir.Operation, regions: Sequence[ir.Region]) -> None:
    """Move ``op``'s branch bodies into ``regions`` of ``new``, then replace ``op`` by ``new``."""
    for old_region, new_region in zip(op.regions, regions):
        new_block = new_region.blocks.append()
        yield_signless(move_body(old_region.blocks[0], new_block, []), "scf.yield")
    replace_results(op, new)


def lower_if(op: ir.Operation) -> None:
    ip = ir.InsertionPoint(op)
    predicate = extract_scalar(op.operands[0], ip)
    results = [signless(result.type) for result in op.results]
    new = ir.Operation.create(
        "scf.if", results=results, operands=[predicate], regions=2, loc=op.location, ip=ip
    )
    lower_branches(op, new, list(new.regions))


def lower_case(op: ir.Operation) -> None:
    ip = ir.InsertionPoint(op)
    index = ir.Operation.create(
        "arith.index_cast",
        results=[ir.IndexType.get()],
        operands=[extract_scalar(op.operands[0], ip)],
        ip=ip,
    ).results[0]
    branches = len(op.regions)
    results = [signless(result.type) for result in op.results]
    # Branches 0..n-2 are cases; the default region (the first one) runs the
    # last branch, so every out-of-range index, negative ones included, picks it.
    new = ir.Operation.create(
        "scf.index_switch",
        results=results,
        operands=[index],
        attributes={"cases": ir.DenseI64ArrayAttr.get(list(range(branches - 1)))},
        regions=branches,
        loc=op.location,
        ip=ip,
    )
    regions = list(new.regions)
    lower_branches(op, new, [*regions[1:], regions[0]])


def remove_optimization_barrier(op: ir.Operation) -> None:
    for result, operand in zip(op.results, op.operands):
        result.replace_all_uses_with(operand)
    op.erase()


LOWERINGS = {
    "stablehlo.while": lower_while,
    "stablehlo.if": lower_if,
    "stablehlo.case": lower_case,
    "stablehlo.optimization_barrier": remove_optimization_barrier,
}


@dataclass(frozen=True)
class LowerControlFlowPass(Pass):
    """Lower stablehlo.while, if and case to scf; drop optimization barriers."""

    argument: ClassVar[str] = "shlo-lower-control-flow"

    def run(self, module: ir.Operation) -> None:
        # Moving a region body keeps its ops (and these handles) alive, so
        # nested ops can be lowered in any order.
        for op in ops_named(module, *LOWERINGS):
            with op.location:
                LOWERINGS[op.name](op)
