"""shlo-lower-cholesky: lower stablehlo.cholesky to a blocked, then a column-by-column loop.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.cholesky`` alone. An upper factorization (``lower = false``) is
computed as the lower one of the adjoint, then adjointed back. Only the
triangle named by ``lower`` is read; the other triangle of the result is
zero. A matrix that is not positive definite gives NaNs. f16 and bf16 are
factored in f32.

A matrix of up to ``BLOCK`` columns is factored by one ``scf.for`` over the
columns, for all batches at once: column ``j`` of ``L`` from the columns
before it (left-looking, as LAPACK's potf2), ``c = a[:, j] - L @
conj(L[j, :])``, ``L[j, j] = sqrt(re(c[j]))`` and ``L[i, j] = c[i] / L[j, j]``
below the diagonal. A larger one is factored ``BLOCK`` columns at a time,
right-looking as LAPACK's blocked potrf: the diagonal block by a
``stablehlo.cholesky`` (lowered as above), the rows below it by a
``stablehlo.triangular_solve`` with that factor, and the columns to the
right lose the block's product with its adjoint in one ``dot_general``, so
most of the work is a matrix product. Runs before
``shlo-lower-triangular-solve``, which lowers the solves it makes.

  %l = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
  ==>
  %l = scf.for %j = %c0 to %c3 step %c1 iter_args(%acc = %zeros) -> (tensor<3x3xf32>) {
    %row = stablehlo.dynamic_slice %acc, %j, %zero, sizes = [1, 3]
    %dot = stablehlo.dot_general %acc, %row, contracting_dims = [1] x [1] : -> tensor<3x1xf32>
    %c = stablehlo.subtract (dynamic_slice %a, %zero, %j, sizes = [3, 1]), %dot
    %d = stablehlo.sqrt (dynamic_slice %c, %j, %zero, sizes = [1, 1])
    %col = select (iota == j), %d, (select (iota > j), %c / %d, 0)
    %next = stablehlo.select (column iota == j), (broadcast %col), %acc
    scf.yield %next : tensor<3x3xf32>
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_templates import replace_with_template
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass, PassError
from shlo.passes.decompose import stablehlo_builders as hlo
from shlo.template_builder import TemplateBuilder, split_type, tensor_text

# Columns factored by the column loop; larger matrices are blocked.
BLOCK = 32
# Element types factored in a wider type, and that type.
WIDENED = {"f16": "f32", "bf16": "f32"}
SUPPORTED = ("f16", "bf16", "f32", "f64", "complex<f32>", "complex<f64>")


def left_looking_cholesky(b: TemplateBuilder, a: str) -> str:
    """The lower Cholesky factor of ``a`` ([..., N, N]), reading its lower triangle."""
    shape, element = split_type(b.type_of(a))
    batch, n = shape[:-2], shape[-1]
    nb = len(batch)
    is_complex = element.startswith("complex<")
    real = element[len("complex<") : -1] if is_complex else element
    column_shape = [*batch, n, 1]
    keep = list(range(nb + 2))
    zero = b.constant("tensor<i64>", "dense<0>")
    rows = b.iota(column_shape, nb)
    columns = b.iota(shape, nb + 1)
    nothing = b.zeros(column_shape, element)
    batching = ", ".join(str(d) for d in range(nb))
    numbers = (
        f"#stablehlo.dot<lhs_batching_dimensions = [{batching}], "
        f"rhs_batching_dimensions = [{batching}], "
        f"lhs_contracting_dimensions = [{nb + 1}], rhs_contracting_dimensions = [{nb + 1}]>"
    )

    def body(index: str, carried: list[str]) -> list[str]:
        (factor,) = carried
        zeros = [zero] * nb
        # Columns >= j of the factor are still zero, so full-length dots are exact.
        row = b.conj(b.dynamic_slice(factor, [*zeros, index, zero], [*batch, 1, n]))
        dot = b.op(
            "stablehlo.dot_general",
            [factor, row],
            tensor_text(column_shape, element),
            f"dot_dimension_numbers = {numbers}",
        )
        column = b.dynamic_slice(a, [*zeros, zero, index], column_shape)
        rest = b.op("stablehlo.subtract", [column, dot], b.type_of(dot))
        pivot = b.dynamic_slice(rest, [*zeros, index, zero], [*batch, 1, 1])
        if is_complex:
            pivot = b.op("stablehlo.real", [pivot], tensor_text([*batch, 1, 1], real))
        root = b.broadcast(b.op("stablehlo.sqrt", [pivot], b.type_of(pivot)), column_shape, keep)
        if is_complex:
            part = tensor_text(column_shape, real)
            scaled_parts = [
                b.op("stablehlo.divide", [b.op(f"stablehlo.{p}", [rest], part), root], part)
                for p in ("real", "imag")
            ]
            scaled = b.op("stablehlo.complex", scaled_parts, b.type_of(rest))
            root = b.op("stablehlo.complex", [root, b.zeros(column_shape, real)], b.type_of(rest))
        else:
            scaled = b.op("stablehlo.divide", [rest, root], b.type_of(rest))
        j_column = b.broadcast(index, column_shape, [])
        below = b.op(
            "stablehlo.select", [b.compare("GT", rows, j_column), scaled, nothing], b.type_of(rest)
        )
        new_column = b.op(
            "stablehlo.select", [b.compare("EQ", rows, j_column), root, below], b.type_of(rest)
        )
        # An elementwise select writes the column: a strided dynamic_update_slice
        # would need a runtime copy function.
        is_j = b.compare("EQ", columns, b.broadcast(index, shape, []))
        spread = b.broadcast(new_column, shape, keep)
        return [b.op("stablehlo.select", [is_j, spread, factor], b.type_of(factor))]

    return b.for_loop(n, [b.zeros(shape, element)], body)[0]


def cholesky_template(a_type: str, lower: bool) -> str:
    b = TemplateBuilder()
    a = b.argument(a_type)
    shape, element = split_type(a_type)
    if shape[-1] == 0:
        return b.function([a])  # 0x0 matrices: nothing to factor
    x = b.convert(a, WIDENED.get(element, element))
    if not lower:
        x = b.conj(b.swap_minor(x))
    factor = left_looking_cholesky(b, x)
    if not lower:
        factor = b.conj(b.swap_minor(factor))
    return b.function([b.convert(factor, element)])


def _blocked_step(
    a: ir.Value, factor: ir.Value, start: ir.Value, width: int, location: ir.Location
) -> tuple[ir.Value, ir.Value]:
    """Columns ``start`` .. ``start + width - 1`` of the lower factor, and ``a`` updated for the rest."""
    shape = list(ir.RankedTensorType(a.type).shape)
    rank, batch, n = len(shape), shape[:-2], shape[-1]
    element = ir.RankedTensorType(a.type).element_type
    i64 = ir.IntegerType.get_signless(64)
    zero = hlo.scalar_constant(0, i64, location)
    batch_zeros = [zero] * len(batch)
    panel = hlo.dynamic_slice(a, [*batch_zeros, zero, start], [*batch, n, width])
    diagonal = hlo.dynamic_slice(panel, [*batch_zeros, start, zero], [*batch, width, width])
    l11 = create_value("stablehlo.cholesky", [diagonal], diagonal.type, lower=ir.BoolAttr.get(True))
    # panel @ adjoint(l11)^-1: the rows below the block are L21.
    solved = hlo.triangular_solve(l11, panel, False, True, False, "ADJOINT")
    end = create_value(
        "stablehlo.add", [start, hlo.scalar_constant(width, i64, location)], start.type
    )
    panel_shape = [*batch, n, width]
    below = hlo.compare("GE", hlo.iota(panel_shape, rank - 2), hlo.broadcast(end, panel_shape, []))
    l21 = hlo.select(below, solved, hlo.zeros(panel_shape, element, location))
    columns = hlo.dynamic_update_slice(l21, l11, [*batch_zeros, start, zero])
    factor = hlo.dynamic_update_slice(factor, columns, [*batch_zeros, zero, start])
    # Only the rows and columns after the block are read again; L21 is zero elsewhere.
    product = hlo.batched_dot(l21, hlo.conj(l21), rank - 1, rank - 1, a.type)
    return create_value("stablehlo.subtract", [a, product], a.type), factor


def _blocked_lower_factor(a: ir.Value, location: ir.Location) -> ir.Value:
    """The lower factor of ``a`` ([..., n, n], n > BLOCK), BLOCK columns at a time."""
    a_type = ir.RankedTensorType(a.type)
    shape = list(a_type.shape)
    i64 = ir.IntegerType.get_signless(64)
    blocks, rest = divmod(shape[-1], BLOCK)
    factor = hlo.zeros(shape, a_type.element_type, location)

    def block(index: ir.Value, current: ir.Value, partial: ir.Value) -> list[ir.Value]:
        size = hlo.scalar_constant(BLOCK, i64, location)
        start = create_value("stablehlo.multiply", [index, size], index.type)
        return list(_blocked_step(current, partial, start, BLOCK, location))

    a, factor = hlo.counted_loop(location, [a, factor], blocks, block)
    if rest:
        start = hlo.scalar_constant(blocks * BLOCK, i64, location)
        _, factor = _blocked_step(a, factor, start, rest, location)
    return factor


def _blocked_cholesky(op: ir.Operation, lower: bool) -> None:
    a = op.operands[0]
    element = ir.RankedTensorType(a.type).element_type
    wide = WIDENED.get(str(element))
    location = op.location
    with location, ir.InsertionPoint(op):
        x = a
        if wide is not None:
            x = create_value(
                "stablehlo.convert",
                [a],
                hlo.tensor_type(list(ir.RankedTensorType(a.type).shape), ir.F32Type.get()),
            )
        if not lower:
            x = hlo.adjoint(x)
        factor = _blocked_lower_factor(x, location)
        if not lower:
            factor = hlo.adjoint(factor)
        if wide is not None:
            factor = create_value("stablehlo.convert", [factor], a.type)
    op.results[0].replace_all_uses_with(factor)
    op.erase()


def lower_cholesky(op: ir.Operation) -> None:
    a_type = ir.RankedTensorType(op.operands[0].type)
    if not a_type.has_static_shape:
        raise PassError(op.location, "expected static shapes")
    if str(a_type.element_type) not in SUPPORTED:
        raise PassError(op.location, "expected a floating-point or complex element type")
    lower = ir.BoolAttr(op.attributes["lower"]).value if "lower" in op.attributes else False
    if a_type.shape[-1] > BLOCK:
        _blocked_cholesky(op, lower)
    else:
        replace_with_template(op, cholesky_template(str(a_type), lower))


@dataclass(frozen=True)
class LowerCholeskyPass(Pass):
    """Lower stablehlo.cholesky to a column-by-column loop."""

    argument: ClassVar[str] = "shlo-lower-cholesky"

    def run(self, module: ir.Operation) -> None:
        # A blocked factorization makes small stablehlo.cholesky ops of its own.
        for op in ops_named(module, "stablehlo.cholesky"):
            lower_cholesky(op)
        for op in ops_named(module, "stablehlo.cholesky"):
            lower_cholesky(op)
