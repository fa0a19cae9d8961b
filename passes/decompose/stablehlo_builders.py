"""StableHLO ops built with the bindings, for the passes that decompose ops into others.

Shapes are lists of ints; values are ``ir.Value``s of ranked tensors. Each
function creates its ops at the current insertion point and location.
"""

from __future__ import annotations

import numpy as np
from shlo._mlir_compat import GatherDimensionNumbers, ir
from shlo.ir_utils import create_constant, create_value


def tensor_type(shape: list[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, element)


def i1_type(shape: list[int]) -> ir.Type:
    return ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1))


def compare(direction: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    shape = list(ir.RankedTensorType(lhs.type).shape)
    attribute = ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>")
    return create_value(
        "stablehlo.compare", [lhs, rhs], i1_type(shape), comparison_direction=attribute
    )


def iota(shape: list[int], dimension: int) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    return create_value(
        "stablehlo.iota",
        [],
        ir.RankedTensorType.get(shape, i64),
        iota_dimension=ir.IntegerAttr.get(i64, dimension),
    )


def broadcast(value: ir.Value, shape: list[int], dimensions: list[int]) -> ir.Value:
    """``value`` broadcast to ``shape``, its dimensions becoming ``dimensions``."""
    element = ir.RankedTensorType(value.type).element_type
    return create_value(
        "stablehlo.broadcast_in_dim",
        [value],
        tensor_type(shape, element),
        broadcast_dimensions=ir.DenseI64ArrayAttr.get(dimensions),
    )


def is_narrow_float(element: ir.Type) -> bool:
    """bf16, f16 and the f8/f6/f4 types: floats that sums and products lose precision in."""
    return isinstance(element, ir.FloatType) and element.width < 32


def with_element(value: ir.Value, element: ir.Type) -> ir.RankedTensorType:
    """``value``'s tensor type with element type ``element``."""
    return tensor_type(list(ir.RankedTensorType(value.type).shape), element)


def convert(value: ir.Value, element: ir.Type) -> ir.Value:
    """``value`` converted to element type ``element``; itself when it has it."""
    if ir.RankedTensorType(value.type).element_type == element:
        return value
    return create_value("stablehlo.convert", [value], with_element(value, element))


def compute_in_f32(op: ir.Operation) -> None:
    """``op`` computed in f32 in place: its operands converted up, its body and results
    retyped, and its results converted back for their users."""
    f32 = ir.F32Type.get()
    with op.location, ir.InsertionPoint(op):
        for index, operand in enumerate(list(op.operands)):
            op.operands[index] = convert(operand, f32)
    for region in op.regions:
        for block in region.blocks:
            for argument in block.arguments:
                argument.set_type(with_element(argument, f32))
            for inner in block.operations:
                for result in inner.results:
                    result.set_type(with_element(result, f32))
    for result in op.results:
        narrow = ir.RankedTensorType(result.type).element_type
        result.set_type(with_element(result, f32))
        with op.location, ir.InsertionPoint.after(op):
            back = convert(result, narrow)
        result.replace_all_uses_with(back)
        back.owner.operands[0] = result  # the convert itself read the result too


def select(condition: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
    return create_value("stablehlo.select", [condition, on_true, on_false], on_true.type)


def scalar_constant(value: float, element: ir.Type, location: ir.Location) -> ir.Value:
    return create_constant(np.array(value), tensor_type([], element), location).result


def zero(element: ir.Type, location: ir.Location) -> ir.Value:
    """A scalar zero of ``element``; complex ones from two real zeros (no numpy constant)."""
    if isinstance(element, ir.ComplexType):
        part = zero(element.element_type, location)
        return create_value("stablehlo.complex", [part, part], tensor_type([], element))
    return create_constant(np.zeros(()), tensor_type([], element), location).result


def zeros(shape: list[int], element: ir.Type, location: ir.Location) -> ir.Value:
    return broadcast(zero(element, location), shape, [])


def dynamic_slice(value: ir.Value, starts: list[ir.Value], sizes: list[int]) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    return create_value(
        "stablehlo.dynamic_slice",
        [value, *starts],
        tensor_type(sizes, element),
        slice_sizes=ir.DenseI64ArrayAttr.get(sizes),
    )


def dynamic_update_slice(value: ir.Value, update: ir.Value, starts: list[ir.Value]) -> ir.Value:
    return create_value("stablehlo.dynamic_update_slice", [value, update, *starts], value.type)


def batched_dot(
    lhs: ir.Value, rhs: ir.Value, lhs_contract: int, rhs_contract: int, result: ir.Type
) -> ir.Value:
    """A batched product over the leading (batch) dimensions of ``lhs`` and ``rhs``."""
    batch_dims = list(range(len(ir.RankedTensorType(lhs.type).shape) - 2))
    numbers = ir.Attribute.parse(
        "#stablehlo.dot<"
        f"lhs_batching_dimensions = {batch_dims}, rhs_batching_dimensions = {batch_dims}, "
        f"lhs_contracting_dimensions = [{lhs_contract}], "
        f"rhs_contracting_dimensions = [{rhs_contract}]>"
    )
    return create_value("stablehlo.dot_general", [lhs, rhs], result, dot_dimension_numbers=numbers)


def part(kind: str, value: ir.Value) -> ir.Value:
    """The real or imaginary part of a complex tensor."""
    value_type = ir.RankedTensorType(value.type)
    part_type = tensor_type(list(value_type.shape), value_type.element_type.element_type)
    return create_value(f"stablehlo.{kind}", [value], part_type)


def conj(value: ir.Value) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    if not isinstance(element, ir.ComplexType):
        return value
    imaginary = create_value("stablehlo.negate", [part("imag", value)], part("imag", value).type)
    return create_value("stablehlo.complex", [part("real", value), imaginary], value.type)


def transpose(value: ir.Value, permutation: list[int]) -> ir.Value:
    """``value`` with its dimensions in the order ``permutation``; ``value`` if unchanged."""
    if permutation == sorted(permutation):
        return value
    value_type = ir.RankedTensorType(value.type)
    return create_value(
        "stablehlo.transpose",
        [value],
        tensor_type([value_type.shape[d] for d in permutation], value_type.element_type),
        permutation=ir.DenseI64ArrayAttr.get(permutation),
    )


def reshape(value: ir.Value, shape: list[int]) -> ir.Value:
    """``value`` reshaped to ``shape``; ``value`` if it has that shape."""
    value_type = ir.RankedTensorType(value.type)
    if list(value_type.shape) == shape:
        return value
    return create_value("stablehlo.reshape", [value], tensor_type(shape, value_type.element_type))


def pad(
    value: ir.Value, low: list[int], high: list[int], padding: ir.Value | None = None
) -> ir.Value:
    """``value`` with ``low`` and ``high`` zeros (or scalars ``padding``) before and after
    each dimension (negative amounts crop); ``value`` if both are all zeros."""
    if not any(low) and not any(high):
        return value
    value_type = ir.RankedTensorType(value.type)
    shape = [n + lo + hi for n, lo, hi in zip(value_type.shape, low, high)]
    if padding is None:
        padding = zero(value_type.element_type, ir.Location.current)
    return create_value(
        "stablehlo.pad",
        [value, padding],
        tensor_type(shape, value_type.element_type),
        edge_padding_low=ir.DenseI64ArrayAttr.get(low),
        edge_padding_high=ir.DenseI64ArrayAttr.get(high),
        interior_padding=ir.DenseI64ArrayAttr.get([0] * len(shape)),
    )


def take(value: ir.Value, indices: ir.Value, axis: int) -> ir.Value:
    """``value`` with entry j along ``axis`` taken from entry ``indices[j]`` (a 1-D integer
    tensor), for every index of the other dimensions (``jnp.take``)."""
    value_type = ir.RankedTensorType(value.type)
    shape = list(value_type.shape)
    count = ir.RankedTensorType(indices.type).shape[0]
    column = reshape(indices, [count, 1])
    sizes = list(shape)
    sizes[axis] = 1
    result = list(shape)
    result[axis] = count
    return create_value(
        "stablehlo.gather",
        [value, column],
        tensor_type(result, value_type.element_type),
        dimension_numbers=GatherDimensionNumbers.get(
            offset_dims=[d for d in range(len(shape)) if d != axis],
            collapsed_slice_dims=[axis],
            operand_batching_dims=[],
            start_indices_batching_dims=[],
            start_index_map=[axis],
            index_vector_dim=1,
        ),
        slice_sizes=ir.DenseI64ArrayAttr.get(sizes),
        indices_are_sorted=ir.BoolAttr.get(False),
    )


def transpose_last(value: ir.Value) -> ir.Value:
    rank = ir.RankedTensorType(value.type).rank
    return transpose(value, [*range(rank - 2), rank - 1, rank - 2])


def adjoint(value: ir.Value) -> ir.Value:
    return conj(transpose_last(value))


def triangular_solve(
    a: ir.Value, b: ir.Value, left_side: bool, lower: bool, unit_diagonal: bool, transpose: str
) -> ir.Value:
    """``stablehlo.triangular_solve``; ``transpose`` is NO_TRANSPOSE, TRANSPOSE or ADJOINT."""
    return create_value(
        "stablehlo.triangular_solve",
        [a, b],
        b.type,
        left_side=ir.BoolAttr.get(left_side),
        lower=ir.BoolAttr.get(lower),
        unit_diagonal=ir.BoolAttr.get(unit_diagonal),
        transpose_a=ir.Attribute.parse(f"#stablehlo<transpose {transpose}>"),
    )


def counted_loop(
    location: ir.Location,
    carried: list[ir.Value],
    steps: int,
    step,  # (k, *carried) -> list of next carried values
    reverse: bool = False,
) -> list[ir.Value]:
    """``carried`` after ``step`` ran for k = 0 .. steps-1 (or down from steps-1), in a stablehlo.while.

    k is a tensor<i64>; counting up, shlo-lower-control-flow makes the loop an scf.for.
    """
    i64 = ir.IntegerType.get_signless(64)
    scalar = tensor_type([], i64)
    types = [v.type for v in carried]
    start = scalar_constant(steps - 1 if reverse else 0, i64, location)
    loop = ir.Operation.create(
        "stablehlo.while", results=[scalar, *types], operands=[start, *carried], regions=2
    )
    condition = loop.regions[0].blocks.append(scalar, *types)
    with ir.InsertionPoint(condition):
        bound = scalar_constant(-1 if reverse else steps, i64, location)
        direction = "GT" if reverse else "LT"
        ir.Operation.create(
            "stablehlo.return", operands=[compare(direction, condition.arguments[0], bound)]
        )
    body = loop.regions[1].blocks.append(scalar, *types)
    with ir.InsertionPoint(body):
        k, *values = body.arguments
        next_values = step(k, *values)
        delta = scalar_constant(-1 if reverse else 1, i64, location)
        next_k = create_value("stablehlo.add", [k, delta], scalar)
        ir.Operation.create("stablehlo.return", operands=[next_k, *next_values])
    return list(loop.results)[1:]
