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


def _part(kind: str, value: ir.Value) -> ir.Value:
    """The real or imaginary part of a complex tensor."""
    value_type = ir.RankedTensorType(value.type)
    part_type = _tensor(list(value_type.shape), value_type.element_type.element_type)
    return create_value(f"stablehlo.{kind}", [value], part_type)


def _as_element(value: ir.Value, element: ir.Type) -> ir.Value:
    """A real tensor as a tensor of ``element`` (a complex one gets a zero imaginary part)."""
    if not isinstance(element, ir.ComplexType):
        return value
    zero = _broadcast(
        _zero(ir.RankedTensorType(value.type).element_type, value.owner.location),
        list(ir.RankedTensorType(value.type).shape),
        [],
    )
    shape = list(ir.RankedTensorType(value.type).shape)
    return create_value("stablehlo.complex", [value, zero], _tensor(shape, element))


def _conj(value: ir.Value) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    if not isinstance(element, ir.ComplexType):
        return value
    imaginary = create_value("stablehlo.negate", [_part("imag", value)], _part("imag", value).type)
    return create_value("stablehlo.complex", [_part("real", value), imaginary], value.type)


def _mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return create_value("stablehlo.multiply", [a, b], a.type)


def _geqrf_step(
    matrix: ir.Value, taus: ir.Value, j: ir.Value, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """Column j of Householder QR (LAPACK's geqr2 with larfg's reflector), every batch."""
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    rank, batch = len(shape), shape[:-2]
    nb = len(batch)
    batch_dims = list(range(nb))
    element = matrix_type.element_type
    is_complex = isinstance(element, ir.ComplexType)
    real = element.element_type if is_complex else element
    rows, columns = _iota(shape, rank - 2), _iota(shape, rank - 1)
    jj = _broadcast(j, shape, [])
    zero = _broadcast(_zero(element, location), shape, [])
    real_zero = _broadcast(_zero(real, location), shape, [])
    in_column, at_row = _compare("EQ", columns, jj), _compare("EQ", rows, jj)
    below = _compare("GT", rows, jj)
    column = _sum(_select(in_column, matrix, zero), [rank - 1], location)  # [..., m]
    column_b = _broadcast(column, shape, [*batch_dims, rank - 2])
    alpha = _sum(
        _select(create_value("stablehlo.and", [in_column, at_row], _i1(shape)), matrix, zero),
        [rank - 2, rank - 1],
        location,
    )
    magnitude = create_value("stablehlo.abs", [column_b], _tensor(shape, real))
    squares = _select(
        create_value("stablehlo.and", [in_column, below], _i1(shape)),
        _mul(magnitude, magnitude),
        real_zero,
    )
    below_norm2 = _sum(squares, [rank - 2, rank - 1], location)  # [...]
    alpha_abs = create_value("stablehlo.abs", [alpha], _tensor(batch, real))
    norm = create_value(
        "stablehlo.sqrt",
        [
            create_value(
                "stablehlo.add", [_mul(alpha_abs, alpha_abs), below_norm2], below_norm2.type
            )
        ],
        below_norm2.type,
    )
    alpha_real = _part("real", alpha) if is_complex else alpha
    batch_zero = _broadcast(_zero(real, location), batch, [])
    negative_norm = create_value("stablehlo.negate", [norm], norm.type)
    beta = _select(_compare("GE", alpha_real, batch_zero), negative_norm, norm)
    trivial = _compare("EQ", below_norm2, batch_zero)
    if is_complex:
        trivial = create_value(
            "stablehlo.and", [trivial, _compare("EQ", _part("imag", alpha), batch_zero)], _i1(batch)
        )
    beta_e = _as_element(beta, element)
    tau = create_value(
        "stablehlo.divide",
        [create_value("stablehlo.subtract", [beta_e, alpha], alpha.type), beta_e],
        alpha.type,
    )
    tau = _select(trivial, _broadcast(_zero(element, location), batch, []), tau)
    scale = create_value(
        "stablehlo.divide",
        [
            _broadcast(_one(element, location), batch, []),
            create_value("stablehlo.subtract", [alpha, beta_e], alpha.type),
        ],
        alpha.type,
    )
    trivial_b = _broadcast(trivial, shape, batch_dims)
    scaled = _select(trivial_b, column_b, _mul(column_b, _broadcast(scale, shape, batch_dims)))
    new_diagonal = _select(trivial, alpha, beta_e)
    # The reflector v: 1 at row j, the scaled column below, 0 above.
    one = _broadcast(_one(element, location), shape, [])
    v = _select(at_row, one, _select(below, scaled, zero))  # constant along columns
    # Apply H^H = I - conj(tau) v v^H to the columns after j.
    w = _sum(_mul(_conj(v), matrix), [rank - 2], location)  # [..., n]
    tau_h = _broadcast(_conj(tau), shape, batch_dims)
    update = _mul(_mul(tau_h, v), _broadcast(w, shape, [*batch_dims, rank - 1]))
    after = _compare("GT", columns, jj)
    updated = create_value("stablehlo.subtract", [matrix, update], matrix.type)
    next_column = _select(
        at_row, _broadcast(new_diagonal, shape, batch_dims), _select(below, scaled, matrix)
    )
    next_matrix = _select(after, updated, _select(in_column, next_column, matrix))
    taus_type = ir.RankedTensorType(taus.type)
    tau_shape = list(taus_type.shape)
    at_index = _compare("EQ", _iota(tau_shape, nb), _broadcast(j, tau_shape, []))
    next_taus = _select(at_index, _broadcast(tau, tau_shape, batch_dims), taus)
    return next_matrix, next_taus


def _one(element: ir.Type, location: ir.Location) -> ir.Value:
    if isinstance(element, ir.ComplexType):
        return create_value(
            "stablehlo.complex",
            [
                _scalar_constant(1.0, element.element_type, location),
                _zero(element.element_type, location),
            ],
            _tensor([], element),
        )
    return _scalar_constant(1.0, element, location)


def _column_loop(
    op: ir.Operation,
    carried: list[ir.Value],
    steps: int,
    step,  # (k, *carried) -> list of next carried values
    reverse: bool = False,
) -> list[ir.Value]:
    """``carried`` after ``step`` ran for k = 0 .. steps-1 (or down from steps-1), in a stablehlo.while."""
    i64 = ir.IntegerType.get_signless(64)
    location = op.location
    scalar = _tensor([], i64)
    types = [v.type for v in carried]
    start = _scalar_constant(steps - 1 if reverse else 0, i64, location)
    loop = ir.Operation.create(
        "stablehlo.while", results=[scalar, *types], operands=[start, *carried], regions=2
    )
    condition = loop.regions[0].blocks.append(scalar, *types)
    with ir.InsertionPoint(condition):
        bound = _scalar_constant(-1 if reverse else steps, i64, location)
        direction = "GT" if reverse else "LT"
        ir.Operation.create(
            "stablehlo.return", operands=[_compare(direction, condition.arguments[0], bound)]
        )
    body = loop.regions[1].blocks.append(scalar, *types)
    with ir.InsertionPoint(body):
        k, *values = body.arguments
        next_values = step(k, *values)
        delta = _scalar_constant(-1 if reverse else 1, i64, location)
        next_k = create_value("stablehlo.add", [k, delta], scalar)
        ir.Operation.create("stablehlo.return", operands=[next_k, *next_values])
    return list(loop.results)[1:]


def lower_geqrf(op: ir.Operation) -> None:
    """``?geqrf``: R in the upper triangle, the Householder vectors below it, and tau.

    Unblocked, as LAPACK's geqr2 with larfg's reflectors (beta has the
    opposite sign of alpha's real part; a column already zero below the
    diagonal gets tau = 0), so Q and R match LAPACK's signs.
    """
    (matrix,) = op.operands
    shape = list(ir.RankedTensorType(matrix.type).shape)
    taus_type = ir.RankedTensorType(op.results[1].type)
    location = op.location
    with location, ir.InsertionPoint(op):
        element = taus_type.element_type
        no_taus = _broadcast(_zero(element, location), list(taus_type.shape), [])
        result, taus = _column_loop(
            op,
            [matrix, no_taus],
            min(shape[-2:]),
            lambda j, a, t: list(_geqrf_step(a, t, j, location)),
        )
    lower_with(op, [result, taus])


def lower_orgqr(op: ir.Operation) -> None:
    """``?orgqr``/``?ungqr``: Q = H(0) H(1) ... H(k-1), its first n columns.

    Accumulated backwards from the identity, as LAPACK's org2r; each H(i) =
    I - tau_i v_i v_i^H only touches rows >= i.
    """
    reflectors, taus = op.operands
    shape = list(ir.RankedTensorType(reflectors.type).shape)
    rank, batch = len(shape), shape[:-2]
    nb = len(batch)
    batch_dims = list(range(nb))
    element = ir.RankedTensorType(reflectors.type).element_type
    steps = ir.RankedTensorType(taus.type).shape[-1]
    location = op.location
    with location, ir.InsertionPoint(op):
        rows, columns = _iota(shape, rank - 2), _iota(shape, rank - 1)
        zero = _broadcast(_zero(element, location), shape, [])
        one = _broadcast(_one(element, location), shape, [])
        identity = _select(_compare("EQ", rows, columns), one, zero)
        tau_shape = list(ir.RankedTensorType(taus.type).shape)

        def apply(i: ir.Value, q: ir.Value) -> list[ir.Value]:
            ii = _broadcast(i, shape, [])
            in_column = _compare("EQ", columns, ii)
            column = _sum(_select(in_column, reflectors, zero), [rank - 1], location)
            column_b = _broadcast(column, shape, [*batch_dims, rank - 2])
            v = _select(
                _compare("EQ", rows, ii), one, _select(_compare("GT", rows, ii), column_b, zero)
            )
            at_index = _compare("EQ", _iota(tau_shape, nb), _broadcast(i, tau_shape, []))
            tau = _sum(
                _select(at_index, taus, _broadcast(_zero(element, location), tau_shape, [])),
                [nb],
                location,
            )
            w = _sum(_mul(_conj(v), q), [rank - 2], location)
            update = _mul(
                _mul(_broadcast(tau, shape, batch_dims), v),
                _broadcast(w, shape, [*batch_dims, rank - 1]),
            )
            return [create_value("stablehlo.subtract", [q, update], q.type)]

        (q,) = _column_loop(op, [identity], steps, apply, reverse=True)
    lower_with(op, [q])


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
