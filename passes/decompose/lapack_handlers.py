"""Handlers for jax's CPU LAPACK custom calls (``lapack_*_ffi``), built from StableHLO ops.

Each handler computes what the LAPACK routine computes, on the logical
arrays (the custom call's layouts only say how LAPACK sees the buffers),
for every batch at once, with the bindings' builders. Loops over columns
or rotations are ``stablehlo.while`` ops; rows and columns are selected
with iota masks, so no op needs a runtime copy. Registered in
``shlo.custom_calls.BUILTIN``; ``shlo-lower-custom-calls`` calls them.
"""

from __future__ import annotations

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import create_constant, create_value, slice_ranges, string_value
from shlo.pass_framework import PassError
from shlo.passes.decompose import stablehlo_builders as hlo
from shlo.passes.decompose.lower_custom_calls import lower_with

_TRANSPOSE = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}


def _config(op: ir.Operation) -> dict[str, str]:
    """LAPACK's character options (``uplo = 76 : ui8`` is 'L') from the backend config."""
    if "mhlo.backend_config" not in op.attributes:
        return {}
    config = ir.DictAttr(op.attributes["mhlo.backend_config"])
    return {config[i].name: chr(ir.IntegerAttr(config[i].attr).value) for i in range(len(config))}


def _reduce_or(values: ir.Value, dimensions: list[int], location: ir.Location) -> ir.Value:
    """``values`` (i1) or-ed over ``dimensions``."""
    false = create_constant(
        np.zeros((), bool), ir.RankedTensorType(hlo.i1_type([])), location
    ).result
    return _reduce(
        [values],
        [false],
        dimensions,
        lambda a, b: [create_value("stablehlo.or", [a[0], b[0]], a[0].type)],
    )[0]


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
        results=[hlo.tensor_type(kept, e) for e in elements],
        operands=[*operands, *inits],
        attributes={"dimensions": ir.DenseI64ArrayAttr.get(dimensions)},
        regions=1,
    )
    scalars = [hlo.tensor_type([], e) for e in elements]
    block = reduce.regions[0].blocks.append(*scalars, *scalars)
    with ir.InsertionPoint(block):
        count = len(operands)
        arguments = list(block.arguments)
        ir.Operation.create("stablehlo.return", operands=body(arguments[:count], arguments[count:]))
    return list(reduce.results)


def _eps(real: ir.Type) -> float:
    """The machine epsilon of f32, or of f64."""
    return float(np.finfo(np.float64 if isinstance(real, ir.F64Type) else np.float32).eps)


def _sum(value: ir.Value, dimensions: list[int], location: ir.Location) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    zero = hlo.zero(element, location)
    return _reduce(
        [value],
        [zero],
        dimensions,
        lambda a, b: [create_value("stablehlo.add", [a[0], b[0]], a[0].type)],
    )[0]


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
        rows, columns = hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1)
        in_triangle = hlo.compare("GE" if lower else "LE", rows, columns)
        result = create_value("stablehlo.select", [in_triangle, factor, matrix], matrix.type)
        real = factor
        if isinstance(element, ir.ComplexType):
            real_type = ir.RankedTensorType.get(shape, element.element_type)
            real = create_value("stablehlo.real", [factor], real_type)
            element = element.element_type
        real_type = ir.RankedTensorType(real.type)
        zero = create_constant(np.zeros(shape), real_type, op.location).result
        not_finite = create_value(
            "stablehlo.not",
            [create_value("stablehlo.is_finite", [real], hlo.i1_type(shape))],
            hlo.i1_type(shape),
        )
        not_positive = create_value(
            "stablehlo.not", [hlo.compare("GT", real, zero)], hlo.i1_type(shape)
        )
        on_diagonal = hlo.compare("EQ", rows, columns)
        bad_pivot = create_value("stablehlo.and", [on_diagonal, not_positive], hlo.i1_type(shape))
        bad = create_value("stablehlo.or", [not_finite, bad_pivot], hlo.i1_type(shape))
        failed = _reduce_or(bad, [rank - 2, rank - 1], op.location)
        info = create_value("stablehlo.convert", [failed], op.results[1].type)
    lower_with(op, [result, info])


def _pivot_magnitude(values: ir.Value) -> ir.Value:
    """What LAPACK's i?amax compares: |x|, or |re(x)| + |im(x)| for complex x."""
    value_type = ir.RankedTensorType(values.type)
    if not isinstance(value_type.element_type, ir.ComplexType):
        return create_value("stablehlo.abs", [values], values.type)
    real_type = hlo.tensor_type(list(value_type.shape), value_type.element_type.element_type)
    parts = [
        create_value("stablehlo.abs", [hlo.part(kind, values)], real_type)
        for kind in ("real", "imag")
    ]
    return create_value("stablehlo.add", parts, real_type)


def _getrf_step(
    panel: ir.Value, pivots: ir.Value, k: ir.Value, column: ir.Value, location: ir.Location
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """One column of unblocked LU with partial pivoting (LAPACK's getf2), for every batch.

    ``panel`` holds all the rows and some of the columns: ``k`` is the row of
    the diagonal element and ``column`` its column in the panel. Returns the
    next panel and pivots, and the pivot row ([...], 0-based). The pivot
    search and the multipliers work on that column alone; the swap and the
    rank-1 update are one elementwise pass over the panel.
    """
    panel_type = ir.RankedTensorType(panel.type)
    shape = list(panel_type.shape)
    rank, batch = len(shape), shape[:-2]
    m, width = shape[-2:]
    batch_dims = list(range(len(batch)))
    element = panel_type.element_type
    real = element.element_type if isinstance(element, ir.ComplexType) else element
    i64 = ir.IntegerType.get_signless(64)
    zero_index = hlo.scalar_constant(0, i64, location)
    batch_zeros = [zero_index] * len(batch)
    column_shape = [*batch, m]
    values = create_value(
        "stablehlo.reshape",
        [hlo.dynamic_slice(panel, [*batch_zeros, zero_index, column], [*batch, m, 1])],
        hlo.tensor_type(column_shape, element),
    )
    positions = hlo.iota(column_shape, len(batch))
    k_column = hlo.broadcast(k, column_shape, [])
    magnitude = hlo.select(
        hlo.compare("GE", positions, k_column),
        _pivot_magnitude(values),
        hlo.broadcast(hlo.scalar_constant(-1.0, real, location), column_shape, []),
    )

    def first_largest(lhs: list[ir.Value], rhs: list[ir.Value]) -> list[ir.Value]:
        # isamax: the largest magnitude, the first row among equals.
        larger = hlo.compare("GT", rhs[0], lhs[0])
        tie = create_value(
            "stablehlo.and",
            [hlo.compare("EQ", rhs[0], lhs[0]), hlo.compare("LT", rhs[1], lhs[1])],
            hlo.i1_type([]),
        )
        take = create_value("stablehlo.or", [larger, tie], hlo.i1_type([]))
        return [hlo.select(take, rhs[0], lhs[0]), hlo.select(take, rhs[1], lhs[1])]

    _, pivot_row = _reduce(
        [magnitude, positions],
        [hlo.scalar_constant(-2.0, real, location), k],
        [len(batch)],
        first_largest,
    )
    row_type = hlo.tensor_type([*batch, width], element)
    pivot_rows = create_value("stablehlo.reshape", [pivot_row], hlo.tensor_type([*batch, 1], i64))
    row_p = create_value("stablehlo.reshape", [_rows_in_order(panel, pivot_rows)], row_type)
    row_k = create_value(
        "stablehlo.reshape",
        [hlo.dynamic_slice(panel, [*batch_zeros, k, zero_index], [*batch, 1, width])],
        row_type,
    )
    pivot = create_value(
        "stablehlo.reshape",
        [hlo.dynamic_slice(row_p, [*batch_zeros, column], [*batch, 1])],
        hlo.tensor_type(batch, element),
    )
    # The pivot column after the swap, divided by the pivot below the
    # diagonal; a zero pivot (a singular matrix) leaves it unscaled, as getf2.
    at_k = hlo.compare("EQ", positions, k_column)
    at_p = hlo.compare("EQ", positions, hlo.broadcast(pivot_row, column_shape, batch_dims))
    value_k = hlo.broadcast(
        hlo.dynamic_slice(values, [*batch_zeros, k], [*batch, 1]),
        column_shape,
        [*batch_dims, len(batch)],
    )
    pivots_column = hlo.broadcast(pivot, column_shape, batch_dims)
    swapped_column = hlo.select(at_k, pivots_column, hlo.select(at_p, value_k, values))
    zero_column = hlo.zeros(column_shape, element, location)
    multipliers = hlo.select(
        hlo.compare("EQ", pivots_column, zero_column),
        swapped_column,
        create_value("stablehlo.divide", [swapped_column, pivots_column], swapped_column.type),
    )
    # Row and column masks from vectors: iotas of the whole panel would be
    # computed into memory at every step.
    row_dims, column_dims = [*batch_dims, rank - 1], [*batch_dims, rank - 2]

    def rows_where(mask: ir.Value) -> ir.Value:
        return hlo.broadcast(mask, shape, column_dims)

    panel_columns = hlo.iota([width], 0)
    column_at = hlo.broadcast(column, [width], [])

    def columns_where(direction: str) -> ir.Value:
        return hlo.broadcast(hlo.compare(direction, panel_columns, column_at), shape, [rank - 1])

    swapped = hlo.select(
        rows_where(at_k),
        hlo.broadcast(row_p, shape, row_dims),
        hlo.select(rows_where(at_p), hlo.broadcast(row_k, shape, row_dims), panel),
    )
    spread = hlo.broadcast(multipliers, shape, column_dims)
    product = create_value(
        "stablehlo.multiply", [spread, hlo.broadcast(row_p, shape, row_dims)], panel.type
    )
    updated = create_value("stablehlo.subtract", [swapped, product], panel.type)
    below = rows_where(hlo.compare("GT", positions, k_column))
    trailing = create_value("stablehlo.and", [below, columns_where("GT")], hlo.i1_type(shape))
    below_in_column = create_value(
        "stablehlo.and", [below, columns_where("EQ")], hlo.i1_type(shape)
    )
    next_panel = hlo.select(trailing, updated, hlo.select(below_in_column, spread, swapped))
    # ipiv[k] = pivot row + 1 (LAPACK's 1-based rows).
    pivots_type = ir.RankedTensorType(pivots.type)
    pivot_shape = list(pivots_type.shape)
    one = hlo.broadcast(hlo.scalar_constant(1, i64, location), batch, [])
    row_number = create_value(
        "stablehlo.convert",
        [create_value("stablehlo.add", [pivot_row, one], pivot_row.type)],
        hlo.tensor_type(batch, pivots_type.element_type),
    )
    at_index = hlo.compare(
        "EQ", hlo.iota(pivot_shape, len(batch)), hlo.broadcast(k, pivot_shape, [])
    )
    next_pivots = hlo.select(at_index, hlo.broadcast(row_number, pivot_shape, batch_dims), pivots)
    return next_panel, next_pivots, pivot_row


# Columns factored unblocked at a time before the rest of the matrix is
# updated with one product (LAPACK's blocked getrf).
LU_BLOCK = 32


def _rows_in_order(matrix: ir.Value, order: ir.Value) -> ir.Value:
    """Row ``order[..., i]`` of ``matrix`` ([..., m, n]) as row i, for every batch (a gather).

    ``order`` is [..., r] (i64): the result is [..., r, n].
    """
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    rank = len(shape)
    batch = list(range(rank - 2))
    rows = ir.RankedTensorType(order.type).shape[-1]
    numbers = ir.Attribute.parse(
        "#stablehlo.gather<"
        f"offset_dims = [{rank - 1}], collapsed_slice_dims = [{rank - 2}], "
        f"operand_batching_dims = {batch}, start_indices_batching_dims = {batch}, "
        f"start_index_map = [{rank - 2}], index_vector_dim = {rank - 1}>"
    )
    return create_value(
        "stablehlo.gather",
        [matrix, order],
        hlo.tensor_type([*shape[:-2], rows, shape[-1]], matrix_type.element_type),
        dimension_numbers=numbers,
        slice_sizes=ir.DenseI64ArrayAttr.get([*[1] * (rank - 1), shape[-1]]),
        indices_are_sorted=ir.BoolAttr.get(False),
    )


def _swap_entries(
    order: ir.Value, first: ir.Value, second: ir.Value, location: ir.Location
) -> ir.Value:
    """``order`` ([..., m]) with entries ``first`` (a scalar) and ``second`` ([...]) swapped."""
    shape = list(ir.RankedTensorType(order.type).shape)
    last = len(shape) - 1
    batch = list(range(last))
    positions = hlo.iota(shape, last)
    at_first = hlo.compare("EQ", positions, hlo.broadcast(first, shape, []))
    at_second = hlo.compare("EQ", positions, hlo.broadcast(second, shape, batch))
    none = hlo.zeros(shape, ir.RankedTensorType(order.type).element_type, location)

    def entry(at: ir.Value) -> ir.Value:
        return hlo.broadcast(_sum(hlo.select(at, order, none), [last], location), shape, batch)

    return hlo.select(at_first, entry(at_second), hlo.select(at_second, entry(at_first), order))


def _getrf_block(
    op: ir.Operation,
    matrix: ir.Value,
    pivots: ir.Value,
    start: ir.Value,
    width: int,
    location: ir.Location,
) -> tuple[ir.Value, ir.Value]:
    """Columns ``start`` .. ``start + width - 1`` of a right-looking blocked LU.

    The panel (those columns, all rows) is factored by getf2 steps; its row
    swaps are applied to the other columns; the block row to the right is
    solved with the panel's unit lower triangle (U12), and the trailing rows
    and columns lose the panel's L21 times U12 in one product.
    """
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    rank, batch = len(shape), shape[:-2]
    m, n = shape[-2:]
    element = matrix_type.element_type
    i64 = ir.IntegerType.get_signless(64)
    zero_index = hlo.scalar_constant(0, i64, location)
    batch_zeros = [zero_index] * len(batch)

    def index(value: int) -> ir.Value:
        return hlo.scalar_constant(value, i64, location)

    def plus(value: ir.Value, offset: ir.Value) -> ir.Value:
        return create_value("stablehlo.add", [value, offset], value.type)

    panel = hlo.dynamic_slice(matrix, [*batch_zeros, zero_index, start], [*batch, m, width])
    # The panel's swaps, in order, as a permutation of all rows.
    order = hlo.iota([*batch, m], len(batch))

    def column_step(c: ir.Value, p: ir.Value, v: ir.Value, o: ir.Value) -> list[ir.Value]:
        k = plus(start, c)
        next_panel, next_pivots, pivot_row = _getrf_step(p, v, k, c, location)
        return [next_panel, next_pivots, _swap_entries(o, k, pivot_row, location)]

    panel, pivots, order = hlo.counted_loop(op.location, [panel, pivots, order], width, column_step)
    matrix = _rows_in_order(matrix, order)
    matrix = hlo.dynamic_update_slice(matrix, panel, [*batch_zeros, zero_index, start])

    # U12: the block row right of the panel, solved with L11 (unit lower).
    end = plus(start, index(width))
    l11 = hlo.dynamic_slice(panel, [*batch_zeros, start, zero_index], [*batch, width, width])
    block_row = hlo.dynamic_slice(matrix, [*batch_zeros, start, zero_index], [*batch, width, n])
    solved = hlo.triangular_solve(l11, block_row, True, True, True, "NO_TRANSPOSE")
    row_shape = [*batch, width, n]
    right = hlo.compare("GE", hlo.iota(row_shape, rank - 1), hlo.broadcast(end, row_shape, []))
    u12 = hlo.select(right, solved, hlo.zeros(row_shape, element, location))
    matrix = hlo.dynamic_update_slice(
        matrix, hlo.select(right, solved, block_row), [*batch_zeros, start, zero_index]
    )

    # A22 -= L21 @ U12, written only below and right of the block.
    panel_shape = [*batch, m, width]
    lower = hlo.compare("GE", hlo.iota(panel_shape, rank - 2), hlo.broadcast(end, panel_shape, []))
    l21 = hlo.select(lower, panel, hlo.zeros(panel_shape, element, location))
    product = hlo.batched_dot(l21, u12, rank - 1, rank - 2, matrix.type)
    trailing = create_value(
        "stablehlo.and",
        [
            hlo.compare("GE", hlo.iota(shape, rank - 2), hlo.broadcast(end, shape, [])),
            hlo.compare("GE", hlo.iota(shape, rank - 1), hlo.broadcast(end, shape, [])),
        ],
        hlo.i1_type(shape),
    )
    updated = create_value("stablehlo.subtract", [matrix, product], matrix.type)
    return hlo.select(trailing, updated, matrix), pivots


def lower_getrf(op: ir.Operation) -> None:
    """``?getrf``: LU with partial pivoting, 1-based pivots, and info.

    Right-looking and blocked, as LAPACK's getrf: the columns are taken
    LU_BLOCK at a time (a stablehlo.while over the blocks, then one narrower
    block for the rest), each block by ``_getrf_block``. Within a block,
    each column is getf2's: the first row of largest magnitude at or below
    the diagonal is swapped up, the column below is divided by the pivot
    (left alone when it is zero) and the block's columns to the right
    updated. ``info`` is 0: jax only requires it to be >= 0; a zero pivot
    (LAPACK's info > 0) is not reported.
    """
    (matrix,) = op.operands
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    steps = min(shape[-2:])
    location = op.location
    i64 = ir.IntegerType.get_signless(64)
    with location, ir.InsertionPoint(op):
        pivots_type = ir.RankedTensorType(op.results[1].type)
        no_pivots = create_constant(np.zeros(pivots_type.shape), pivots_type, location).result
        lu, pivots = matrix, no_pivots
        blocks, rest = divmod(steps, LU_BLOCK)
        if blocks:

            def block(b: ir.Value, a: ir.Value, p: ir.Value) -> list[ir.Value]:
                size = hlo.scalar_constant(LU_BLOCK, i64, location)
                start = create_value("stablehlo.multiply", [b, size], b.type)
                return list(_getrf_block(op, a, p, start, LU_BLOCK, location))

            lu, pivots = hlo.counted_loop(op.location, [lu, pivots], blocks, block)
        if rest:
            start = hlo.scalar_constant(blocks * LU_BLOCK, i64, location)
            lu, pivots = _getrf_block(op, lu, pivots, start, rest, location)
        info_type = ir.RankedTensorType(op.results[2].type)
        info = create_constant(np.zeros(info_type.shape), info_type, location).result
    lower_with(op, [lu, pivots, info])


def _as_element(value: ir.Value, element: ir.Type) -> ir.Value:
    """A real tensor as a tensor of ``element`` (a complex one gets a zero imaginary part)."""
    if not isinstance(element, ir.ComplexType):
        return value
    zero = hlo.broadcast(
        hlo.zero(ir.RankedTensorType(value.type).element_type, value.owner.location),
        list(ir.RankedTensorType(value.type).shape),
        [],
    )
    shape = list(ir.RankedTensorType(value.type).shape)
    return create_value("stablehlo.complex", [value, zero], hlo.tensor_type(shape, element))


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
    rows, columns = hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1)
    jj = hlo.broadcast(j, shape, [])
    zero = hlo.zeros(shape, element, location)
    real_zero = hlo.zeros(shape, real, location)
    in_column, at_row = hlo.compare("EQ", columns, jj), hlo.compare("EQ", rows, jj)
    below = hlo.compare("GT", rows, jj)
    column = _sum(hlo.select(in_column, matrix, zero), [rank - 1], location)  # [..., m]
    column_b = hlo.broadcast(column, shape, [*batch_dims, rank - 2])
    alpha = _sum(
        hlo.select(
            create_value("stablehlo.and", [in_column, at_row], hlo.i1_type(shape)), matrix, zero
        ),
        [rank - 2, rank - 1],
        location,
    )
    magnitude = create_value("stablehlo.abs", [column_b], hlo.tensor_type(shape, real))
    squares = hlo.select(
        create_value("stablehlo.and", [in_column, below], hlo.i1_type(shape)),
        _mul(magnitude, magnitude),
        real_zero,
    )
    below_norm2 = _sum(squares, [rank - 2, rank - 1], location)  # [...]
    alpha_abs = create_value("stablehlo.abs", [alpha], hlo.tensor_type(batch, real))
    norm = create_value(
        "stablehlo.sqrt",
        [
            create_value(
                "stablehlo.add", [_mul(alpha_abs, alpha_abs), below_norm2], below_norm2.type
            )
        ],
        below_norm2.type,
    )
    alpha_real = hlo.part("real", alpha) if is_complex else alpha
    batch_zero = hlo.zeros(batch, real, location)
    negative_norm = create_value("stablehlo.negate", [norm], norm.type)
    beta = hlo.select(hlo.compare("GE", alpha_real, batch_zero), negative_norm, norm)
    trivial = hlo.compare("EQ", below_norm2, batch_zero)
    if is_complex:
        trivial = create_value(
            "stablehlo.and",
            [trivial, hlo.compare("EQ", hlo.part("imag", alpha), batch_zero)],
            hlo.i1_type(batch),
        )
    beta_e = _as_element(beta, element)
    tau = create_value(
        "stablehlo.divide",
        [create_value("stablehlo.subtract", [beta_e, alpha], alpha.type), beta_e],
        alpha.type,
    )
    tau = hlo.select(trivial, hlo.zeros(batch, element, location), tau)
    scale = create_value(
        "stablehlo.divide",
        [
            hlo.broadcast(_one(element, location), batch, []),
            create_value("stablehlo.subtract", [alpha, beta_e], alpha.type),
        ],
        alpha.type,
    )
    trivial_b = hlo.broadcast(trivial, shape, batch_dims)
    scaled = hlo.select(
        trivial_b, column_b, _mul(column_b, hlo.broadcast(scale, shape, batch_dims))
    )
    new_diagonal = hlo.select(trivial, alpha, beta_e)
    # The reflector v: 1 at row j, the scaled column below, 0 above.
    one = hlo.broadcast(_one(element, location), shape, [])
    v = hlo.select(at_row, one, hlo.select(below, scaled, zero))  # constant along columns
    # Apply H^H = I - conj(tau) v v^H to the columns after j.
    w = _sum(_mul(hlo.conj(v), matrix), [rank - 2], location)  # [..., n]
    tau_h = hlo.broadcast(hlo.conj(tau), shape, batch_dims)
    update = _mul(_mul(tau_h, v), hlo.broadcast(w, shape, [*batch_dims, rank - 1]))
    after = hlo.compare("GT", columns, jj)
    updated = create_value("stablehlo.subtract", [matrix, update], matrix.type)
    next_column = hlo.select(
        at_row, hlo.broadcast(new_diagonal, shape, batch_dims), hlo.select(below, scaled, matrix)
    )
    next_matrix = hlo.select(after, updated, hlo.select(in_column, next_column, matrix))
    taus_type = ir.RankedTensorType(taus.type)
    tau_shape = list(taus_type.shape)
    at_index = hlo.compare("EQ", hlo.iota(tau_shape, nb), hlo.broadcast(j, tau_shape, []))
    next_taus = hlo.select(at_index, hlo.broadcast(tau, tau_shape, batch_dims), taus)
    return next_matrix, next_taus


def _one(element: ir.Type, location: ir.Location) -> ir.Value:
    if isinstance(element, ir.ComplexType):
        return create_value(
            "stablehlo.complex",
            [
                hlo.scalar_constant(1.0, element.element_type, location),
                hlo.zero(element.element_type, location),
            ],
            hlo.tensor_type([], element),
        )
    return hlo.scalar_constant(1.0, element, location)


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
        no_taus = hlo.zeros(list(taus_type.shape), element, location)
        result, taus = hlo.counted_loop(
            op.location,
            [matrix, no_taus],
            min(shape[-2:]),
            lambda j, a, t: list(_geqrf_step(a, t, j, location)),
        )
    lower_with(op, [result, taus])


def _orgqr(op: ir.Operation, reflectors: ir.Value, taus: ir.Value) -> ir.Value:
    """Q = H(0) H(1) ... H(k-1), shaped as ``reflectors``, accumulated backwards as org2r."""
    shape = list(ir.RankedTensorType(reflectors.type).shape)
    rank, batch = len(shape), shape[:-2]
    nb = len(batch)
    batch_dims = list(range(nb))
    element = ir.RankedTensorType(reflectors.type).element_type
    steps = ir.RankedTensorType(taus.type).shape[-1]
    location = op.location
    rows, columns = hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1)
    zero = hlo.zeros(shape, element, location)
    one = hlo.broadcast(_one(element, location), shape, [])
    identity = _identity(shape, element, location)
    tau_shape = list(ir.RankedTensorType(taus.type).shape)

    def apply(i: ir.Value, q: ir.Value) -> list[ir.Value]:
        ii = hlo.broadcast(i, shape, [])
        in_column = hlo.compare("EQ", columns, ii)
        column = _sum(hlo.select(in_column, reflectors, zero), [rank - 1], location)
        column_b = hlo.broadcast(column, shape, [*batch_dims, rank - 2])
        v = hlo.select(
            hlo.compare("EQ", rows, ii),
            one,
            hlo.select(hlo.compare("GT", rows, ii), column_b, zero),
        )
        at_index = hlo.compare("EQ", hlo.iota(tau_shape, nb), hlo.broadcast(i, tau_shape, []))
        tau = _sum(
            hlo.select(at_index, taus, hlo.zeros(tau_shape, element, location)),
            [nb],
            location,
        )
        w = _sum(_mul(hlo.conj(v), q), [rank - 2], location)
        update = _mul(
            _mul(hlo.broadcast(tau, shape, batch_dims), v),
            hlo.broadcast(w, shape, [*batch_dims, rank - 1]),
        )
        return [create_value("stablehlo.subtract", [q, update], q.type)]

    (q,) = hlo.counted_loop(op.location, [identity], steps, apply, reverse=True)
    return q


def lower_orgqr(op: ir.Operation) -> None:
    """``?orgqr``/``?ungqr``: Q = H(0) H(1) ... H(k-1), its first n columns.

    Accumulated backwards from the identity, as LAPACK's org2r; each H(i) =
    I - tau_i v_i v_i^H only touches rows >= i.
    """
    reflectors, taus = op.operands
    with op.location, ir.InsertionPoint(op):
        q = _orgqr(op, reflectors, taus)
    lower_with(op, [q])


def _hermitian_from(matrix: ir.Value, lower: bool, location: ir.Location) -> ir.Value:
    """The Hermitian matrix that ``matrix``'s ``lower`` (or upper) triangle and real diagonal give."""
    shape = list(ir.RankedTensorType(matrix.type).shape)
    rank = len(shape)
    rows, columns = hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1)
    mirrored = hlo.conj(hlo.transpose_last(matrix))
    diagonal = matrix
    element = ir.RankedTensorType(matrix.type).element_type
    if isinstance(element, ir.ComplexType):
        diagonal = _as_element(hlo.part("real", matrix), element)
    kept = hlo.compare("GT" if lower else "LT", rows, columns)
    return hlo.select(
        kept, matrix, hlo.select(hlo.compare("EQ", rows, columns), diagonal, mirrored)
    )


def _rotation(
    app: ir.Value, aqq: ir.Value, apq: ir.Value, element: ir.Type, location: ir.Location
) -> tuple[ir.Value, ir.Value, ir.Value | None]:
    """(c, s, phase) of the Jacobi rotation that zeroes [[app, apq], [conj(apq), aqq]]'s corner.

    ``app`` and ``aqq`` are real, ``apq`` of ``element``, all of the batch
    shape. For a complex ``apq`` the phase g = conj(apq) / |apq| first makes
    it real; J = [[c, s], [-s g, c g]] on columns (p, q).
    """
    batch = list(ir.RankedTensorType(apq.type).shape)
    is_complex = isinstance(element, ir.ComplexType)
    real = element.element_type if is_complex else element
    batch_zero = hlo.zeros(batch, real, location)
    batch_one = hlo.broadcast(hlo.scalar_constant(1.0, real, location), batch, [])
    if is_complex:
        off = create_value("stablehlo.abs", [apq], hlo.tensor_type(batch, real))
        safe = hlo.select(hlo.compare("EQ", off, batch_zero), batch_one, off)
        phase = create_value(
            "stablehlo.divide", [hlo.conj(apq), _as_element(safe, element)], apq.type
        )
        phase = hlo.select(
            hlo.compare("EQ", off, batch_zero),
            hlo.broadcast(_one(element, location), batch, []),
            phase,
        )
    else:
        off, phase = apq, None
    two_off = create_value("stablehlo.add", [off, off], off.type)
    nonzero = create_value(
        "stablehlo.not", [hlo.compare("EQ", off, batch_zero)], hlo.i1_type(batch)
    )
    theta = create_value(
        "stablehlo.divide",
        [
            create_value("stablehlo.subtract", [aqq, app], aqq.type),
            hlo.select(nonzero, two_off, batch_one),
        ],
        aqq.type,
    )
    magnitude = create_value("stablehlo.abs", [theta], theta.type)
    root = create_value(
        "stablehlo.sqrt",
        [create_value("stablehlo.add", [_mul(theta, theta), batch_one], theta.type)],
        theta.type,
    )
    t = create_value(
        "stablehlo.divide",
        [batch_one, create_value("stablehlo.add", [magnitude, root], theta.type)],
        theta.type,
    )
    t = hlo.select(
        hlo.compare("LT", theta, batch_zero), create_value("stablehlo.negate", [t], t.type), t
    )
    t = hlo.select(nonzero, t, batch_zero)
    c = create_value(
        "stablehlo.divide",
        [
            batch_one,
            create_value(
                "stablehlo.sqrt",
                [create_value("stablehlo.add", [_mul(t, t), batch_one], t.type)],
                t.type,
            ),
        ],
        t.type,
    )
    return c, _mul(t, c), phase


def _pairs(partner: ir.Value, shape: list[int]) -> tuple[ir.Value, ir.Value]:
    """Per index i of the last dimension: whether i is its pair's p (i < partner[i]), and
    whether it sits this round out (partner[i] == i); broadcast to ``shape``'s batch."""
    n = shape[-1]
    index = hlo.iota([n], 0)
    is_p = hlo.broadcast(hlo.compare("LT", index, partner), shape, [len(shape) - 1])
    alone = hlo.broadcast(hlo.compare("EQ", index, partner), shape, [len(shape) - 1])
    return is_p, alone


def _round_coefficients(
    entries: ir.Value, across: ir.Value, partner: ir.Value, element: ir.Type, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """The rotation of every pair of a round as coefficients per index i ([..., n]) of
    column i of ``M J``: of column i itself and of its partner's column.

    ``entries`` holds each index's diagonal entry (A[i, i], or |column i|^2),
    ``across`` its entry with its partner (A[i, partner(i)], or <column i,
    column partner(i)>). J = [[c, s], [-s g, c g]] on (p, q): (M J)[:, p] =
    c M_p - s g M_q, (M J)[:, q] = s M_p + c g M_q; none (c = 1, s = 0) for
    an index that sits the round out.
    """
    shape = list(ir.RankedTensorType(across.type).shape)
    is_p, alone = _pairs(partner, shape)
    partner_entries = hlo.take(entries, partner, len(shape) - 1)
    app = hlo.select(is_p, entries, partner_entries)
    aqq = hlo.select(is_p, partner_entries, entries)
    if isinstance(ir.RankedTensorType(app.type).element_type, ir.ComplexType):
        app, aqq = hlo.part("real", app), hlo.part("real", aqq)
    # A[p, q] for both: across is A[q, p] = conj(A[p, q]) at q.
    apq = hlo.select(is_p, across, hlo.conj(across))
    zero = hlo.zeros(shape, element, location)
    c, s, phase = _rotation(app, aqq, hlo.select(alone, zero, apq), element, location)
    c, s = _as_element(c, element), _as_element(s, element)
    g = phase if phase is not None else hlo.broadcast(_one(element, location), shape, [])
    own = hlo.select(is_p, c, _mul(c, g))
    other = hlo.select(is_p, create_value("stablehlo.negate", [_mul(s, g)], s.type), s)
    return own, other


def _apply_round(
    m: ir.Value, partner: ir.Value, own: ir.Value, other: ir.Value, columns: bool = True
) -> ir.Value:
    """``M J`` (columns) or ``J^H M`` (rows, with ``own`` and ``other`` conjugated by the
    caller): each column (row) i becomes own[i] times itself plus other[i] times its
    partner's."""
    m_type = ir.RankedTensorType(m.type)
    shape = list(m_type.shape)
    rank = len(shape)
    axis = rank - 1 if columns else rank - 2
    keep = [*range(rank - 2), axis]
    swapped = hlo.take(m, partner, axis)
    return create_value(
        "stablehlo.add",
        [
            _mul(m, hlo.broadcast(own, shape, keep)),
            _mul(swapped, hlo.broadcast(other, shape, keep)),
        ],
        m.type,
    )


def _jacobi_round(
    a: ir.Value, v: ir.Value, partner: ir.Value, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """One round of disjoint rotations J: A <- J^H A J zeroes A[p, q] of every pair,
    V <- V J."""
    a_type = ir.RankedTensorType(a.type)
    shape = list(a_type.shape)
    rank = len(shape)
    element = a_type.element_type
    n = shape[-1]
    # Entries i * n + j of each matrix flattened: the diagonal is every
    # (n + 1)-th, A[i, partner(i)] a gather of n (not whole-matrix passes).
    flat = hlo.reshape(a, [*shape[:-2], n * n])
    ranges = [(0, size, 1) for size in shape[:-2]]
    diagonal = slice_ranges(flat, [*ranges, (0, n * n, n + 1)])  # [..., n]
    row_starts = create_value(
        "stablehlo.multiply",
        [
            hlo.iota([n], 0),
            hlo.broadcast(
                hlo.scalar_constant(n, ir.RankedTensorType(partner.type).element_type, location),
                [n],
                [],
            ),
        ],
        partner.type,
    )
    across = hlo.take(
        flat, create_value("stablehlo.add", [row_starts, partner], partner.type), rank - 2
    )
    own, other = _round_coefficients(diagonal, across, partner, element, location)
    rotated = _apply_round(a, partner, own, other)
    a = _apply_round(rotated, partner, hlo.conj(own), hlo.conj(other), columns=False)
    return a, _apply_round(v, partner, own, other)


def _off_diagonal_large(a: ir.Value, location: ir.Location) -> ir.Value:
    """Whether any matrix's off-diagonal norm exceeds eps times its norm (an i1 scalar)."""
    a_type = ir.RankedTensorType(a.type)
    shape = list(a_type.shape)
    rank = len(shape)
    element = a_type.element_type
    real = element.element_type if isinstance(element, ir.ComplexType) else element
    eps = _eps(real)
    magnitude = create_value("stablehlo.abs", [a], hlo.tensor_type(shape, real))
    squares = _mul(magnitude, magnitude)
    rows, columns = hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1)
    real_zero = hlo.zeros(shape, real, location)
    off = _sum(
        hlo.select(hlo.compare("NE", rows, columns), squares, real_zero),
        [rank - 2, rank - 1],
        location,
    )
    total = _sum(squares, [rank - 2, rank - 1], location)
    batch = list(ir.RankedTensorType(off.type).shape)
    limit = _mul(total, hlo.broadcast(hlo.scalar_constant(eps * eps, real, location), batch, []))
    return _reduce_or(hlo.compare("GT", off, limit), list(range(len(batch))), location)


def _sort_with_columns(
    values: ir.Value, matrix: ir.Value, direction: str, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """``values`` ([..., n], real) sorted (stably, LT ascending or GT descending), and
    ``matrix``'s columns ([..., m, n]) in the same order."""
    i64 = ir.IntegerType.get_signless(64)
    values_type = ir.RankedTensorType(values.type)
    last = len(values_type.shape) - 1
    order = hlo.iota(list(values_type.shape), last)
    sort = ir.Operation.create(
        "stablehlo.sort",
        results=[values.type, order.type],
        operands=[values, order],
        attributes={"dimension": ir.IntegerAttr.get(i64, last), "is_stable": ir.BoolAttr.get(True)},
        regions=1,
    )
    scalar, scalar_i64 = hlo.tensor_type([], values_type.element_type), hlo.tensor_type([], i64)
    comparator = sort.regions[0].blocks.append(scalar, scalar, scalar_i64, scalar_i64)
    with ir.InsertionPoint(comparator):
        first = hlo.compare(direction, comparator.arguments[0], comparator.arguments[1])
        ir.Operation.create("stablehlo.return", operands=[first])
    sorted_values, permutation = sort.results
    matrix_type = ir.RankedTensorType(matrix.type)
    shape = list(matrix_type.shape)
    rank = len(shape)
    batch_dims = list(range(rank - 2))
    n = shape[-1]
    # Column j of the result is column permutation[j]: a product with a one-hot n x n matrix.
    one_hot_shape = [*shape[:-2], n, n]
    chosen = hlo.compare(
        "EQ",
        hlo.iota(one_hot_shape, rank - 2),
        hlo.broadcast(permutation, one_hot_shape, [*batch_dims, rank - 1]),
    )
    element = matrix_type.element_type
    one_hot = hlo.select(
        chosen,
        hlo.broadcast(_one(element, location), one_hot_shape, []),
        hlo.zeros(one_hot_shape, element, location),
    )
    ordered = hlo.batched_dot(matrix, one_hot, rank - 1, rank - 2, matrix.type)
    return sorted_values, ordered


# Jacobi sweeps stop after this many, converged or not (they converge
# quadratically: a few sweeps for the sizes jax programs factor on a CPU).
# Rounds of disjoint rotations instead of one rotation per step (which cost
# whole-matrix ops each): eigh of 128 x 128 f32 9.7 s -> 0.27 s, svd of
# 128 x 96 0.59 -> 0.13 s (XLA's LAPACK: 0.8 and 0.7 ms).
MAX_SWEEPS = 50


def _round_robin(n: int) -> np.ndarray:
    """Partners [rounds, n]: every round pairs each index with another (or with itself,
    for n odd, sitting out), and every pair meets once in n (or n - 1) rounds."""
    players = n + n % 2
    table = []
    for r in range(players - 1):
        turn = [*range(1 + r, players), *range(1, 1 + r)]
        order = [0, *turn]
        partner = list(range(players))
        for k in range(players // 2):
            first, second = order[k], order[players - 1 - k]
            partner[first], partner[second] = second, first
        table.append([q if q < n else i for i, q in enumerate(partner[:n])])
    return np.array(table, np.int64)


def _jacobi_sweeps(op, values: list[ir.Value], n: int, rotate, unconverged) -> list[ir.Value]:
    """``values`` after sweeps of ``rotate(*values, partner, location)`` over the rounds of
    a round-robin: each round rotates n / 2 disjoint pairs at once, in whole-matrix ops.

    Sweeps run while ``unconverged(*values)`` (an i1 scalar) holds, at most
    MAX_SWEEPS; the rounds' partners come from a constant table, a row per
    iteration.
    """
    if n < 2:
        return values
    location = op.location
    i64 = ir.IntegerType.get_signless(64)
    rounds = _round_robin(n)
    table = create_constant(
        rounds, ir.RankedTensorType.get(list(rounds.shape), i64), location
    ).result

    def one_round(r: ir.Value, *current: ir.Value) -> list[ir.Value]:
        row = create_value(
            "stablehlo.dynamic_slice",
            [table, r, hlo.scalar_constant(0, i64, location)],
            hlo.tensor_type([1, n], i64),
            slice_sizes=ir.DenseI64ArrayAttr.get([1, n]),
        )
        partner = create_value("stablehlo.reshape", [row], hlo.tensor_type([n], i64))
        return list(rotate(*current, partner, location))

    scalar = hlo.tensor_type([], i64)
    types = [v.type for v in values]
    loop = ir.Operation.create(
        "stablehlo.while",
        results=[scalar, *types],
        operands=[hlo.scalar_constant(0, i64, location), *values],
        regions=2,
    )
    condition = loop.regions[0].blocks.append(scalar, *types)
    with ir.InsertionPoint(condition):
        sweep, *current = condition.arguments
        more = hlo.compare("LT", sweep, hlo.scalar_constant(MAX_SWEEPS, i64, location))
        go = create_value("stablehlo.and", [more, unconverged(*current)], hlo.i1_type([]))
        ir.Operation.create("stablehlo.return", operands=[go])
    body = loop.regions[1].blocks.append(scalar, *types)
    with ir.InsertionPoint(body):
        sweep, *current = body.arguments
        rotated = hlo.counted_loop(op.location, list(current), len(rounds), one_round)
        next_sweep = create_value(
            "stablehlo.add", [sweep, hlo.scalar_constant(1, i64, location)], scalar
        )
        ir.Operation.create("stablehlo.return", operands=[next_sweep, *rotated])
    return list(loop.results)[1:]


def lower_syevd(op: ir.Operation) -> None:
    """``?syevd``/``?heevd``: eigenvectors (columns) and ascending eigenvalues of a Hermitian matrix.

    Parallel Jacobi: sweeps of rounds of a round-robin, each round rotating
    n / 2 disjoint pairs (p, q) at once to zero their A[p, q] (a gather of
    the partners' columns and rows and elementwise ops: O(n^2) per round),
    until every matrix's off-diagonal norm is below eps times its norm (at
    most 50 sweeps); then the eigenvalues are sorted, and the
    vectors with them. Only the ``uplo`` triangle is read, as LAPACK.
    Eigenvectors are unique up to a phase, which may differ from LAPACK's.
    ``info`` is 0.
    """
    (matrix,) = op.operands
    a_type = ir.RankedTensorType(matrix.type)
    shape = list(a_type.shape)
    rank, n = len(shape), shape[-1]
    element = a_type.element_type
    lower = _config(op).get("uplo", "L") == "L"
    location = op.location
    with location, ir.InsertionPoint(op):
        a = _hermitian_from(matrix, lower, location)
        rows, columns = hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1)
        zero = hlo.zeros(shape, element, location)
        identity = _identity(shape, element, location)
        a, vectors = _jacobi_sweeps(
            op, [a, identity], n, _jacobi_round, lambda a, v: _off_diagonal_large(a, location)
        )
        diagonal_values = _sum(
            hlo.select(hlo.compare("EQ", rows, columns), a, zero), [rank - 2], location
        )  # [..., n]
        values = (
            hlo.part("real", diagonal_values)
            if isinstance(element, ir.ComplexType)
            else diagonal_values
        )
        sorted_values, ordered = _sort_with_columns(values, vectors, "LT", location)
        info_type = ir.RankedTensorType(op.results[2].type)
        info = create_constant(np.zeros(info_type.shape), info_type, location).result
    lower_with(op, [ordered, sorted_values, info])


def _one_sided_round(
    w: ir.Value, v: ir.Value, partner: ir.Value, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """The rotations of every pair of columns (p, q) of a round that make them orthogonal
    (Hestenes), applied to W and V."""
    w_type = ir.RankedTensorType(w.type)
    shape = list(w_type.shape)
    rank = len(shape)
    element = w_type.element_type
    real = element.element_type if isinstance(element, ir.ComplexType) else element
    magnitude = create_value("stablehlo.abs", [w], hlo.tensor_type(shape, real))
    norms = _sum(_mul(magnitude, magnitude), [rank - 2], location)  # [..., n]
    # <column i, its partner's column>: gamma for p, conj(gamma) for q.
    across = _sum(_mul(hlo.conj(w), hlo.take(w, partner, rank - 1)), [rank - 2], location)
    own, other = _round_coefficients(norms, across, partner, element, location)
    return _apply_round(w, partner, own, other), _apply_round(v, partner, own, other)


def _identity(shape: list[int], element: ir.Type, location: ir.Location) -> ir.Value:
    rank = len(shape)
    diagonal = hlo.compare("EQ", hlo.iota(shape, rank - 2), hlo.iota(shape, rank - 1))
    one = hlo.broadcast(_one(element, location), shape, [])
    return hlo.select(diagonal, one, hlo.zeros(shape, element, location))


def _slice_columns(value: ir.Value, count: int) -> ir.Value:
    """The first ``count`` columns of ``value``."""
    value_type = ir.RankedTensorType(value.type)
    shape = list(value_type.shape)
    limit = [*shape[:-1], count]
    return create_value(
        "stablehlo.slice",
        [value],
        hlo.tensor_type(limit, value_type.element_type),
        start_indices=ir.DenseI64ArrayAttr.get([0] * len(shape)),
        limit_indices=ir.DenseI64ArrayAttr.get(limit),
        strides=ir.DenseI64ArrayAttr.get([1] * len(shape)),
    )


def _svd_tall(op: ir.Operation, a: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(singular values descending, U m x m, V n x n) of ``a`` ([..., m, n], m >= n)."""
    location = op.location
    a_type = ir.RankedTensorType(a.type)
    shape = list(a_type.shape)
    rank, batch = len(shape), shape[:-2]
    batch_dims = list(range(rank - 2))
    m, n = shape[-2], shape[-1]
    element = a_type.element_type
    real = element.element_type if isinstance(element, ir.ComplexType) else element
    gram_type = hlo.tensor_type([*batch, n, n], element)

    def unconverged(w: ir.Value, v: ir.Value) -> ir.Value:
        return _off_diagonal_large(
            hlo.batched_dot(hlo.conj(w), w, rank - 2, rank - 2, gram_type), location
        )

    w, v = _jacobi_sweeps(
        op, [a, _identity([*batch, n, n], element, location)], n, _one_sided_round, unconverged
    )
    magnitude = create_value("stablehlo.abs", [w], hlo.tensor_type(shape, real))
    sigma = create_value(
        "stablehlo.sqrt",
        [_sum(_mul(magnitude, magnitude), [rank - 2], location)],
        hlo.tensor_type([*batch, n], real),
    )
    # Both sorted by the unsorted values: the same permutation.
    _, w = _sort_with_columns(sigma, w, "GT", location)
    sigma, v = _sort_with_columns(sigma, v, "GT", location)
    # U's first columns: W's columns normalized. A singular value at rounding
    # level (below eps max(m, n) times the largest) leaves its column to the
    # completion below: normalizing noise would not give an orthogonal column.
    largest = _reduce(
        [sigma],
        [hlo.zero(real, location)],
        [rank - 2],
        lambda x, y: [create_value("stablehlo.maximum", [x[0], y[0]], x[0].type)],
    )[0]
    eps = _eps(real)
    floor = _mul(
        largest, hlo.broadcast(hlo.scalar_constant(eps * max(m, n), real, location), batch, [])
    )
    significant = hlo.compare("GT", sigma, hlo.broadcast(floor, [*batch, n], batch_dims))
    sigma_b = hlo.broadcast(sigma, shape, [*batch_dims, rank - 1])
    positive = hlo.broadcast(significant, shape, [*batch_dims, rank - 1])
    safe = hlo.select(
        positive, sigma_b, hlo.broadcast(hlo.scalar_constant(1.0, real, location), shape, [])
    )
    u_thin = hlo.select(
        positive,
        create_value("stablehlo.divide", [w, _as_element(safe, element)], w.type),
        hlo.zeros(shape, element, location),
    )
    # Complete U to m x m: Q of [U_thin, I] keeps U_thin's span in its first n
    # columns and is orthonormal; columns with sigma > 0 keep U_thin itself.
    stacked_shape = [*batch, m, n + m]
    stacked = create_value(
        "stablehlo.concatenate",
        [u_thin, _identity([*batch, m, m], element, location)],
        hlo.tensor_type(stacked_shape, element),
        dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank - 1),
    )
    taus_shape = [*batch, m]
    no_taus = hlo.zeros(taus_shape, element, location)
    reflectors, taus = hlo.counted_loop(
        op.location, [stacked, no_taus], m, lambda j, x, t: list(_geqrf_step(x, t, j, location))
    )
    q = _orgqr(op, _slice_columns(reflectors, m), taus)
    square = [*batch, m, m]
    significance = hlo.select(
        significant,
        hlo.broadcast(hlo.scalar_constant(1.0, real, location), [*batch, n], []),
        hlo.zeros([*batch, n], real, location),
    )
    if m > n:
        pad = hlo.zeros([*batch, m, m - n], element, location)
        u_padded = create_value(
            "stablehlo.concatenate",
            [u_thin, pad],
            hlo.tensor_type(square, element),
            dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank - 1),
        )
        sigma_padded = create_value(
            "stablehlo.concatenate",
            [significance, hlo.zeros([*batch, m - n], real, location)],
            hlo.tensor_type([*batch, m], real),
            dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank - 2),
        )
    else:
        u_padded, sigma_padded = u_thin, significance
    keep = hlo.compare(
        "GT",
        hlo.broadcast(sigma_padded, square, [*batch_dims, rank - 1]),
        hlo.zeros(square, real, location),
    )
    return sigma, hlo.select(keep, u_padded, q), v


def lower_gesdd(op: ir.Operation) -> None:
    """``?gesdd``: singular values (descending) and, by ``mode``, U and V^H.

    One-sided Jacobi (Hestenes) on the columns of A, or of A^H when A is
    wide, in the rounds of a round-robin as ``lower_syevd``: rotations of
    disjoint pairs make the columns orthogonal, their norms are the
    singular values and, normalized, U's first columns; V accumulates the
    rotations. U is completed to a square orthonormal matrix by a
    Householder QR of [U, I]. Mode 'A' gives the square U and V^H, 'S' their
    first min(m, n) columns and rows, 'N' zeros for both. Singular vectors
    are unique up to a phase, which may differ from LAPACK's. The input is
    returned unchanged as the first result (LAPACK overwrites it); ``info`` is 0.
    """
    (matrix,) = op.operands
    a_type = ir.RankedTensorType(matrix.type)
    shape = list(a_type.shape)
    m, n = shape[-2], shape[-1]
    mode = _config(op).get("mode", "A")
    location = op.location
    u_type, vt_type = op.results[2].type, op.results[3].type
    with location, ir.InsertionPoint(op):
        if m >= n:
            sigma, u, v = _svd_tall(op, matrix)  # A = U S V^H
        else:
            sigma, v, u = _svd_tall(op, hlo.adjoint(matrix))  # A^H = V S U^H
        k = min(m, n)
        if mode == "S":
            u, vt = (_slice_columns(u, k), hlo.adjoint(_slice_columns(v, k)))
        else:
            vt = hlo.adjoint(v)
        if mode == "N":
            u = hlo.broadcast(
                hlo.zero(a_type.element_type, location), list(ir.RankedTensorType(u_type).shape), []
            )
            vt = hlo.broadcast(
                hlo.zero(a_type.element_type, location),
                list(ir.RankedTensorType(vt_type).shape),
                [],
            )
        info_type = ir.RankedTensorType(op.results[4].type)
        info = create_constant(np.zeros(info_type.shape), info_type, location).result
    lower_with(op, [matrix, sigma, u, vt, info])


def lower_trsm(op: ir.Operation) -> None:
    """``?trsm`` with alpha = 1: ``op(a) x = b`` (side L) or ``x op(a) = b`` (side R)."""
    a, b = op.operands
    config = _config(op)
    transpose = _TRANSPOSE.get(config.get("trans_x", "N"))
    if transpose is None:
        raise PassError(
            op.location,
            f"{string_value(op.attributes['call_target_name'])}: unknown trans_x {config['trans_x']!r}",
        )
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
