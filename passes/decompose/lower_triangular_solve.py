"""shlo-lower-triangular-solve: lower stablehlo.triangular_solve to a substitution loop.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.triangular_solve`` alone. Every variant is first rewritten as one
lower-triangular system ``T x = b`` solved on the left: a right-hand solve
``x op(a) = b`` becomes ``op(a)^T x^T = b^T``, ``TRANSPOSE``/``ADJOINT``
transpose (and conjugate) ``a``, and an upper-triangular ``T`` is reversed
along both matrix dimensions (with ``b``'s rows) to make it lower. Then one
``scf.for`` over the rows does right-looking forward substitution for all
batches and columns at once: row ``k`` of ``x`` is divided by ``T[k, k]``
(unless ``unit_diagonal``), then ``T[i, k] * x[k]`` is subtracted from every
row ``i > k``. This is LAPACK's order of operations; only the triangle named
by ``lower`` is read. f16 and bf16 are solved in f32. Above ``BLOCK`` rows
the loop goes over blocks of ``BLOCK`` rows, as LAPACK's blocked trsm: a
block is solved by the row loop, then all the rows below it lose their
product with it in one ``dot_general``.

  %x = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>}> : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  ==>
  %x = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %b) -> (tensor<3x2xf32>) {
    %row = stablehlo.dynamic_slice %acc, %k, %zero, sizes = [1, 2]
    %xk = stablehlo.divide %row, (broadcast of %a[k, k])
    %col = stablehlo.dynamic_slice %a, %zero, %k, sizes = [3, 1]
    %rest = stablehlo.subtract %acc, (broadcast %col) * (broadcast %xk)
    %next = stablehlo.select (iota > k), %rest, (select (iota == k), (broadcast %xk), %acc)
    scf.yield %next : tensor<3x2xf32>
  }
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_templates import replace_with_template
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass, PassError
from shlo.template_builder import TemplateBuilder, split_type

# Element types solved in a wider type, and that type.
WIDENED = {"f16": "f32", "bf16": "f32"}
SUPPORTED = ("f16", "bf16", "f32", "f64", "complex<f32>", "complex<f64>")


def _bool(op: ir.Operation, name: str) -> bool:
    return ir.BoolAttr(op.attributes[name]).value


def _transpose_a(op: ir.Operation) -> str:
    match = re.search(r"transpose\s+(\w+)", str(op.attributes["transpose_a"]))
    if match is None or match.group(1) not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise PassError(op.location, "expected transpose_a NO_TRANSPOSE, TRANSPOSE or ADJOINT")
    return match.group(1)


def forward_substitution(b: TemplateBuilder, t: str, rhs: str, unit_diagonal: bool) -> str:
    """Solve ``t x = rhs`` for lower-triangular ``t`` ([..., M, M]) and ``rhs`` ([..., M, K])."""
    shape = split_type(b.type_of(rhs))[0]
    batch, (m, k) = shape[:-2], shape[-2:]
    nb = len(batch)
    zero = b.constant("tensor<i64>", "dense<0>")
    rows = b.iota(shape, nb)
    keep = list(range(nb + 2))

    def body(index: str, carried: list[str]) -> list[str]:
        (x,) = carried
        zeros = [zero] * nb
        row = b.dynamic_slice(x, [*zeros, index, zero], [*batch, 1, k])
        if not unit_diagonal:
            diagonal = b.dynamic_slice(t, [*zeros, index, index], [*batch, 1, 1])
            row = b.op(
                "stablehlo.divide",
                [row, b.broadcast(diagonal, [*batch, 1, k], keep)],
                b.type_of(row),
            )
        column = b.dynamic_slice(t, [*zeros, zero, index], [*batch, m, 1])
        row_everywhere = b.broadcast(row, shape, keep)
        product = b.op(
            "stablehlo.multiply", [b.broadcast(column, shape, keep), row_everywhere], b.type_of(x)
        )
        rest = b.op("stablehlo.subtract", [x, product], b.type_of(x))
        # Elementwise selects rather than a dynamic_update_slice: with batch
        # dimensions a row is not contiguous, and its copy would need a runtime.
        k_everywhere = b.broadcast(index, shape, [])
        solved = b.op(
            "stablehlo.select",
            [b.compare("EQ", rows, k_everywhere), row_everywhere, x],
            b.type_of(x),
        )
        below = b.compare("GT", rows, k_everywhere)
        return [b.op("stablehlo.select", [below, rest, solved], b.type_of(x))]

    return b.for_loop(m, [rhs], body)[0]


# Rows solved by the row loop at a time; larger systems are blocked.
BLOCK = 32


def blocked_forward_substitution(b: TemplateBuilder, t: str, rhs: str, unit_diagonal: bool) -> str:
    """``forward_substitution`` BLOCK rows at a time: the rows below lose each solved block at once.

    Block by block, the rows of the block are solved by the row loop with
    the block's diagonal part of ``t``, and every row below the block loses
    ``t[rows, block] @ x[block]`` in one dot_general (LAPACK's blocked trsm).
    """
    shape, element = split_type(b.type_of(rhs))
    batch, (m, k) = shape[:-2], shape[-2:]
    nb = len(batch)
    zero = b.constant("tensor<i64>", "dense<0>")
    zeros = [zero] * nb
    batching = ", ".join(str(d) for d in range(nb))
    numbers = (
        f"#stablehlo.dot<lhs_batching_dimensions = [{batching}], "
        f"rhs_batching_dimensions = [{batching}], "
        f"lhs_contracting_dimensions = [{nb + 1}], rhs_contracting_dimensions = [{nb}]>"
    )

    def solve_block(x: str, start: str, width: int, update: bool) -> str:
        diagonal = b.dynamic_slice(t, [*zeros, start, start], [*batch, width, width])
        rows = b.dynamic_slice(x, [*zeros, start, zero], [*batch, width, k])
        solved = forward_substitution(b, diagonal, rows, unit_diagonal)
        x = b.dynamic_update_slice(x, solved, [*zeros, start, zero])
        if not update:
            return x
        end = b.op(
            "stablehlo.add", [start, b.constant("tensor<i64>", f"dense<{width}>")], "tensor<i64>"
        )
        column_shape = [*batch, m, width]
        columns = b.dynamic_slice(t, [*zeros, zero, start], column_shape)
        below_block = b.compare("GE", b.iota(column_shape, nb), b.broadcast(end, column_shape, []))
        factors = b.op(
            "stablehlo.select",
            [below_block, columns, b.zeros(column_shape, element)],
            b.type_of(columns),
        )
        product = b.op(
            "stablehlo.dot_general",
            [factors, solved],
            b.type_of(x),
            f"dot_dimension_numbers = {numbers}",
        )
        rest = b.op("stablehlo.subtract", [x, product], b.type_of(x))
        # Rows above keep their values even where the product is 0 * inf.
        below = b.compare("GE", b.iota(shape, nb), b.broadcast(end, shape, []))
        return b.op("stablehlo.select", [below, rest, x], b.type_of(x))

    blocks, rest = divmod(m, BLOCK)
    size = b.constant("tensor<i64>", f"dense<{BLOCK}>")

    def body(index: str, carried: list[str]) -> list[str]:
        start = b.op("stablehlo.multiply", [index, size], "tensor<i64>")
        return [solve_block(carried[0], start, BLOCK, update=True)]

    x = b.for_loop(blocks, [rhs], body)[0]
    if rest:
        x = solve_block(x, b.constant("tensor<i64>", f"dense<{blocks * BLOCK}>"), rest, False)
    return x


def triangular_solve_template(
    a_type: str,
    b_type: str,
    left_side: bool,
    lower: bool,
    unit_diagonal: bool,
    transpose_a: str,
) -> str:
    b = TemplateBuilder()
    a, rhs = b.argument(a_type), b.argument(b_type)
    shape, element = split_type(a_type)
    if shape[-1] == 0:
        return b.function([rhs])  # no rows to solve: x is as empty as b
    compute = WIDENED.get(element, element)
    t, x = b.convert(a, compute), b.convert(rhs, compute)
    rank = len(shape)

    # Bring every variant to "t x = rhs" with t lower triangular.
    transposed = transpose_a != "NO_TRANSPOSE"
    if not left_side:
        transposed = not transposed
        x = b.swap_minor(x)
    if transposed:
        t = b.swap_minor(t)
        lower = not lower
    if transpose_a == "ADJOINT":
        t = b.conj(t)
    if not lower:
        t = b.op(
            "stablehlo.reverse",
            [t],
            b.type_of(t),
            f"dimensions = array<i64: {rank - 2}, {rank - 1}>",
        )
        x = b.op("stablehlo.reverse", [x], b.type_of(x), f"dimensions = array<i64: {rank - 2}>")

    if shape[-1] > BLOCK:
        x = blocked_forward_substitution(b, t, x, unit_diagonal)
    else:
        x = forward_substitution(b, t, x, unit_diagonal)

    if not lower:
        x = b.op("stablehlo.reverse", [x], b.type_of(x), f"dimensions = array<i64: {rank - 2}>")
    if not left_side:
        x = b.swap_minor(x)
    return b.function([b.convert(x, element)])


def lower_triangular_solve(op: ir.Operation) -> None:
    a_type, b_type = (ir.RankedTensorType(v.type) for v in op.operands)
    if not (a_type.has_static_shape and b_type.has_static_shape):
        raise PassError(op.location, "expected static shapes")
    if str(a_type.element_type) not in SUPPORTED:
        raise PassError(op.location, "expected a floating-point or complex element type")
    text = triangular_solve_template(
        str(a_type),
        str(b_type),
        _bool(op, "left_side"),
        _bool(op, "lower"),
        _bool(op, "unit_diagonal"),
        _transpose_a(op),
    )
    replace_with_template(op, text)


@dataclass(frozen=True)
class LowerTriangularSolvePass(Pass):
    """Lower stablehlo.triangular_solve to a forward-substitution loop."""

    argument: ClassVar[str] = "shlo-lower-triangular-solve"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.triangular_solve"):
            lower_triangular_solve(op)
