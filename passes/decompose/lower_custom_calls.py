"""shlo-lower-custom-calls: replace custom calls by the ops their registered handlers build.

Ours because upstream has no registry: jax's CPU exports call LAPACK
through ``stablehlo.custom_call @lapack_*_ffi`` (``jnp.linalg.cholesky``,
``jax.scipy.linalg.solve_triangular``, ...), and users have their own
targets. ``shlo.custom_calls`` maps a target to its handler; this pass calls
it for every custom call that has one and leaves the others, which
``shlo-check-lowered`` then names with their location. The built-in LAPACK
handlers here compute the LAPACK routine's results from StableHLO ops that
the later decompositions lower (``stablehlo.cholesky``,
``stablehlo.triangular_solve``); they follow LAPACK, not jax's use of it, so
jax's own checks of ``info`` still apply. The custom call's layouts only say
how LAPACK sees the buffers: the handlers compute on the logical arrays.

  %l, %info = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, ...} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
  ==>
  %c = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
  %l = stablehlo.select %lower_triangle, %c, %a : tensor<3x3xi1>, tensor<3x3xf32>
  %info = stablehlo.convert (reduce or (not is_finite %c) or (diagonal and not %c > 0)) : tensor<i32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.custom_calls import handler_for
from shlo.ir_utils import create_constant, create_value, ops_named, string_value
from shlo.pass_framework import Pass, PassError

_TRANSPOSE = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}


def _config(op: ir.Operation) -> dict[str, str]:
    """LAPACK's character options (``uplo = 76 : ui8`` is 'L') from the backend config."""
    if "mhlo.backend_config" not in op.attributes:
        return {}
    config = ir.DictAttr(op.attributes["mhlo.backend_config"])
    return {config[i].name: chr(ir.IntegerAttr(config[i].attr).value) for i in range(len(config))}


def _i1(shape: list[int]) -> ir.Type:
    return ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1))


def _compare(direction: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    shape = list(ir.RankedTensorType(lhs.type).shape)
    attribute = ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>")
    return create_value("stablehlo.compare", [lhs, rhs], _i1(shape), comparison_direction=attribute)


def _iota(shape: list[int], dimension: int) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    return create_value(
        "stablehlo.iota",
        [],
        ir.RankedTensorType.get(shape, i64),
        iota_dimension=ir.IntegerAttr.get(i64, dimension),
    )


def _reduce_or(values: ir.Value, dimensions: list[int], location: ir.Location) -> ir.Value:
    """``values`` (i1) or-ed over ``dimensions``."""
    shape = list(ir.RankedTensorType(values.type).shape)
    kept = [size for d, size in enumerate(shape) if d not in dimensions]
    false = create_constant(np.zeros((), bool), ir.RankedTensorType(_i1([])), location).result
    reduce = ir.Operation.create(
        "stablehlo.reduce",
        results=[_i1(kept)],
        operands=[values, false],
        attributes={"dimensions": ir.DenseI64ArrayAttr.get(dimensions)},
        regions=1,
    )
    scalar = _i1([])
    block = reduce.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        either = create_value("stablehlo.or", list(block.arguments), scalar)
        ir.Operation.create("stablehlo.return", operands=[either])
    return reduce.result


def _tensor(shape: list[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, element)


def _broadcast(value: ir.Value, shape: list[int], dimensions: list[int]) -> ir.Value:
    """``value`` broadcast to ``shape``, its dimensions becoming ``dimensions``."""
    element = ir.RankedTensorType(value.type).element_type
    return create_value(
        "stablehlo.broadcast_in_dim",
        [value],
        _tensor(shape, element),
        broadcast_dimensions=ir.DenseI64ArrayAttr.get(dimensions),
    )


def _select(condition: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
    return create_value("stablehlo.select", [condition, on_true, on_false], on_true.type)


def _scalar_constant(value: float, element: ir.Type, location: ir.Location) -> ir.Value:
    return create_constant(np.array(value), _tensor([], element), location).result


def _reduce(
    operands: list[ir.Value],
    inits: list[ir.Value],
    dimensions: list[int],
    body,  # (list of lhs scalars, list of rhs scalars) -> list of scalars
) -> list[ir.Value]:
    """A (variadic) stablehlo.reduce over ``dimensions``, its body built by ``body``."""
    shape = list(ir.RankedTensorType(operands[0].type).shape)
    kept = [size for d, size in enumerate(shape) if d not in dimensions]
    elements = [ir.RankedTensorType(v.type).element_type for v in operands]
    reduce = ir.Operation.create(
        "stablehlo.reduce",
        results=[_tensor(kept, e) for e in elements],
        operands=[*operands, *inits],
        attributes={"dimensions": ir.DenseI64ArrayAttr.get(dimensions)},
        regions=1,
    )
    scalars = [_tensor([], e) for e in elements]
    block = reduce.regions[0].blocks.append(*scalars, *scalars)
    with ir.InsertionPoint(block):
        count = len(operands)
        arguments = list(block.arguments)
        ir.Operation.create("stablehlo.return", operands=body(arguments[:count], arguments[count:]))
    return list(reduce.results)


def _zero(element: ir.Type, location: ir.Location) -> ir.Value:
    """A scalar zero of ``element``; complex ones from two real zeros (no numpy constant)."""
    if isinstance(element, ir.ComplexType):
        part = _zero(element.element_type, location)
        return create_value("stablehlo.complex", [part, part], _tensor([], element))
    return create_constant(np.zeros(()), _tensor([], element), location).result


def _sum(value: ir.Value, dimensions: list[int], location: ir.Location) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    zero = _zero(element, location)
    return _reduce(
        [value],
        [zero],
        dimensions,
        lambda a, b: [create_value("stablehlo.add", [a[0], b[0]], a[0].type)],
    )[0]


def lower_with(op: ir.Operation, values: list[ir.Value]) -> None:
    """Replace ``op``'s results by ``values`` and erase it."""
    for result, value in zip(op.results, values):
        result.replace_all_uses_with(value)
    op.erase()


def lower_potrf(op: ir.Operation) -> None:
    """``?potrf``: the Cholesky factor in the ``uplo`` triangle, the input elsewhere, and info.

    ``info`` is 0 when the factor's diagonal is finite and positive (the
    matrix is positive definite), else 1; LAPACK gives the failing minor's
    order, and jax only tests it against 0.
    """
    (matrix,) = op.operands
    lower = _config(op).get("uplo", "L") == "L"
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    rank = len(shape)
    element = matrix_type.element_type
    with op.location, ir.InsertionPoint(op):
        factor = create_value(
            "stablehlo.cholesky", [matrix], matrix.type, lower=ir.BoolAttr.get(lower)
        )
        rows, columns = _iota(shape, rank - 2), _iota(shape, rank - 1)
        in_triangle = _compare("GE" if lower else "LE", rows, columns)
        result = create_value("stablehlo.select", [in_triangle, factor, matrix], matrix.type)
        real = factor
        if isinstance(element, ir.ComplexType):
            real_type = ir.RankedTensorType.get(shape, element.element_type)
            real = create_value("stablehlo.real", [factor], real_type)
            element = element.element_type
        real_type = ir.RankedTensorType(real.type)
        zero = create_constant(np.zeros(shape), real_type, op.location).result
        not_finite = create_value(
            "stablehlo.not", [create_value("stablehlo.is_finite", [real], _i1(shape))], _i1(shape)
        )
        not_positive = create_value("stablehlo.not", [_compare("GT", real, zero)], _i1(shape))
        on_diagonal = _compare("EQ", rows, columns)
        bad_pivot = create_value("stablehlo.and", [on_diagonal, not_positive], _i1(shape))
        bad = create_value("stablehlo.or", [not_finite, bad_pivot], _i1(shape))
        failed = _reduce_or(bad, [rank - 2, rank - 1], op.location)
        info = create_value("stablehlo.convert", [failed], op.results[1].type)
    lower_with(op, [result, info])


def _getrf_step(
    matrix: ir.Value, pivots: ir.Value, k: ir.Value, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """One column of unblocked LU with partial pivoting (LAPACK's getf2), for every batch."""
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    rank, batch = len(shape), shape[:-2]
    nb = len(batch)
    element = matrix_type.element_type
    real = element.element_type if isinstance(element, ir.ComplexType) else element
    i64 = ir.IntegerType.get_signless(64)
    rows, columns = _iota(shape, rank - 2), _iota(shape, rank - 1)
    kk = _broadcast(k, shape, [])
    in_column = _compare("EQ", columns, kk)
    candidate = create_value("stablehlo.and", [in_column, _compare("GE", rows, kk)], _i1(shape))
    magnitude = create_value("stablehlo.abs", [matrix], _tensor(shape, real))
    minus_one = _broadcast(_scalar_constant(-1.0, real, location), shape, [])
    magnitude = _select(candidate, magnitude, minus_one)

    def first_largest(lhs: list[ir.Value], rhs: list[ir.Value]) -> list[ir.Value]:
        # isamax: the largest magnitude, the first row among equals.
        larger = _compare("GT", rhs[0], lhs[0])
        tie = create_value(
            "stablehlo.and",
            [_compare("EQ", rhs[0], lhs[0]), _compare("LT", rhs[1], lhs[1])],
            _i1([]),
        )
        take = create_value("stablehlo.or", [larger, tie], _i1([]))
        return [_select(take, rhs[0], lhs[0]), _select(take, rhs[1], lhs[1])]

    _, pivot_row = _reduce(
        [magnitude, rows],
        [_scalar_constant(-2.0, real, location), k],
        [rank - 2, rank - 1],
        first_largest,
    )
    batch_dims = list(range(nb))
    pp = _broadcast(pivot_row, shape, batch_dims)
    zero = _broadcast(_zero(element, location), shape, [])
    at_k, at_p = _compare("EQ", rows, kk), _compare("EQ", rows, pp)
    row_k = _sum(_select(at_k, matrix, zero), [rank - 2], location)
    row_p = _sum(_select(at_p, matrix, zero), [rank - 2], location)
    row_dims = [*batch_dims, rank - 1]
    swapped = _select(
        at_k,
        _broadcast(row_p, shape, row_dims),
        _select(at_p, _broadcast(row_k, shape, row_dims), matrix),
    )
    diagonal = create_value("stablehlo.and", [at_k, in_column], _i1(shape))
    pivot = _broadcast(
        _sum(_select(diagonal, swapped, zero), [rank - 2, rank - 1], location), shape, batch_dims
    )
    # A zero pivot (a singular matrix) leaves the column unscaled, as getf2 does.
    scaled = _select(
        _compare("EQ", pivot, zero),
        swapped,
        create_value("stablehlo.divide", [swapped, pivot], matrix.type),
    )
    below = _compare("GT", rows, kk)
    multipliers = _sum(_select(in_column, scaled, zero), [rank - 1], location)
    product = create_value(
        "stablehlo.multiply",
        [
            _broadcast(multipliers, shape, [*batch_dims, rank - 2]),
            _broadcast(row_p, shape, row_dims),
        ],
        matrix.type,
    )
    updated = create_value("stablehlo.subtract", [swapped, product], matrix.type)
    trailing = create_value("stablehlo.and", [below, _compare("GT", columns, kk)], _i1(shape))
    below_in_column = create_value("stablehlo.and", [below, in_column], _i1(shape))
    next_matrix = _select(trailing, updated, _select(below_in_column, scaled, swapped))
    # ipiv[k] = pivot row + 1 (LAPACK's 1-based rows).
    pivots_type = ir.RankedTensorType(pivots.type)
    i32 = pivots_type.element_type
    pivot_shape = list(pivots_type.shape)
    one = _broadcast(_scalar_constant(1, i64, location), batch, [])
    row_number = create_value(
        "stablehlo.convert",
        [create_value("stablehlo.add", [pivot_row, one], pivot_row.type)],
        _tensor(batch, i32),
    )
    at_index = _compare("EQ", _iota(pivot_shape, nb), _broadcast(k, pivot_shape, []))
    next_pivots = _select(at_index, _broadcast(row_number, pivot_shape, batch_dims), pivots)
    return next_matrix, next_pivots


def lower_getrf(op: ir.Operation) -> None:
    """``?getrf``: LU with partial pivoting, 1-based pivots, and info.

    Right-looking and unblocked (LAPACK's getf2): for each column, the first
    row of largest magnitude at or below the diagonal is swapped up, the
    column below is divided by the pivot (left alone when it is zero) and
    the trailing block updated, in a stablehlo.while over the columns.
    ``info`` is 0: jax only requires it to be >= 0; a zero pivot (LAPACK's
    info > 0) is not reported.
    """
    (matrix,) = op.operands
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    steps = min(shape[-2:])
    i64 = ir.IntegerType.get_signless(64)
    location = op.location
    with location, ir.InsertionPoint(op):
        scalar = _tensor([], i64)
        start = _scalar_constant(0, i64, location)
        pivots_type = ir.RankedTensorType(op.results[1].type)
        no_pivots = create_constant(np.zeros(pivots_type.shape), pivots_type, location).result
        loop = ir.Operation.create(
            "stablehlo.while",
            results=[scalar, matrix.type, pivots_type],
            operands=[start, matrix, no_pivots],
            regions=2,
        )
        condition = loop.regions[0].blocks.append(scalar, matrix.type, pivots_type)
        with ir.InsertionPoint(condition):
            end = _scalar_constant(steps, i64, location)
            ir.Operation.create(
                "stablehlo.return", operands=[_compare("LT", condition.arguments[0], end)]
            )
        body = loop.regions[1].blocks.append(scalar, matrix.type, pivots_type)
        with ir.InsertionPoint(body):
            k, current, pivots = body.arguments
            next_matrix, next_pivots = _getrf_step(current, pivots, k, location)
            next_k = create_value("stablehlo.add", [k, _scalar_constant(1, i64, location)], scalar)
            ir.Operation.create("stablehlo.return", operands=[next_k, next_matrix, next_pivots])
        info_type = ir.RankedTensorType(op.results[2].type)
        info = create_constant(np.zeros(info_type.shape), info_type, location).result
    lower_with(op, [loop.results[1], loop.results[2], info])


def lower_trsm(op: ir.Operation) -> None:
    """``?trsm`` with alpha = 1: ``op(a) x = b`` (side L) or ``x op(a) = b`` (side R)."""
    a, b = op.operands
    config = _config(op)
    transpose = _TRANSPOSE.get(config.get("trans_x", "N"))
    if transpose is None:
        raise PassError(op.location, f"{_target(op)}: unknown trans_x {config['trans_x']!r}")
    with op.location, ir.InsertionPoint(op):
        solution = create_value(
            "stablehlo.triangular_solve",
            [a, b],
            op.results[0].type,
            left_side=ir.BoolAttr.get(config.get("side", "L") == "L"),
            lower=ir.BoolAttr.get(config.get("uplo", "L") == "L"),
            unit_diagonal=ir.BoolAttr.get(config.get("diag", "N") == "U"),
            transpose_a=ir.Attribute.parse(f"#stablehlo<transpose {transpose}>"),
        )
    lower_with(op, [solution])


def _target(op: ir.Operation) -> str:
    return string_value(op.attributes["call_target_name"])


@dataclass(frozen=True)
class LowerCustomCallsPass(Pass):
    """Replace custom calls by the ops their registered handlers build."""

    argument: ClassVar[str] = "shlo-lower-custom-calls"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.custom_call"):
            handler = handler_for(_target(op))
            if handler is not None:
                handler(op)
