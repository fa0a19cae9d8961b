"""shlo-mark-precompiled-row-kernels: f32 reductions and softmax become placeholders for precompiled kernels.

Ours, as ``shlo-mark-precompiled-kernels`` is (``shlo-call-precompiled-kernels``
has the design); this half runs after elementwise fusion, whose results it
matches. XLA calls a library (YNNPACK) for reductions and for attention's
softmax. Generated, softmax over [512, 4096] took shlo 61 ms to compile, 32
of them in LLVM, against XLA's 34; calling the kernel, 19 ms, and attention
22 ms instead of 75 (bench/README.md, "Precompiled row kernels"). The
kernels are in ``shlo/backends/cpu/kernels/rows_f32.c``; their exp is
``shlo-approximate-math``'s, step for step, so it has the generated code's
bits.

- **softmax** (``shlo_softmax_f32``): the four ops jax and torch-mlir make of
  a softmax over the last dimension once fused, ``m = max(z)`` from -inf,
  ``e = exp(z - m)``, ``s = sum(e)`` from zero and ``e / s``, each result
  read only by the next ops of the four. When z is ``x * c`` or ``x / c``
  for a constant c (attention's scaling), computed for the max and the exp
  only or in each of their bodies, the kernel computes it from x; and so it
  adds a bias that both bodies add (a mask's, broadcast over heads), read
  through the rows' strides. The division may write the result transposed
  (Flax's attention does, for the next einsum): the kernel writes each row
  as a column then, for rows of up to 4096.
- **reductions** (``shlo_reduce_f32``): a sum, ``maximumf`` or ``minimumf``
  of one dense f32 input over contiguous dimensions, from a filled constant,
  whose input nothing else reads (a row shared with other ops is left to
  ``shlo-fuse-rows``). Reductions over the last dimensions need rows of at
  least 16 values and reductions over others 16 columns: a vector each.

  %m = linalg.generic {... ["parallel", "reduction"]} ins(%z) outs(%fill_minus_inf)
       { maximumf }                                                 // max(z)
  %e = linalg.generic {... ["parallel", "parallel"]} ins(%m, %z) { exp(z - m) }
  %s = linalg.generic {... ["parallel", "reduction"]} ins(%e) outs(%fill_zero) { addf }
  %y = linalg.generic {... ["parallel", "parallel"]} ins(%s, %e) { e / s }
  ==>  (%z = x / 8.0, read by %m and %e only; x: [rows, columns])
  %y = call @shlo_precompiled_0(%x, %x) {shlo.kernel = "shlo_softmax_f32",
      shlo.kernel_arguments = array<i64: rows, columns, 2 (divided), bits of 8.0,
          0 (no bias: x stands in), sizes 1, 1, rows, bias strides 0, 0, 0,
          result strides 0, 0, columns, 1 (along a row)>}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import (
    GenericParts,
    constant_float,
    defining_op,
    linalg_generic_parts,
    ops_named,
    result_dims,
    row_major_strides,
    static_shape,
)
from shlo.pass_framework import Pass
from shlo.passes.cpu.call_precompiled_kernels import (
    erase_with_unused_inits,
    f32_bits,
    first_free_index,
    replace_with_placeholder,
)

REDUCE_KERNEL = "shlo_reduce_f32"
SOFTMAX_KERNEL = "shlo_softmax_f32"
# rows_f32.c's kinds of reduction and of softmax input.
REDUCTIONS = {"arith.addf": 0, "arith.maximumf": 1, "arith.minimumf": 2}
SCALINGS = {"arith.mulf": 1, "arith.divf": 2}
# rows_f32.c's MOST_TRANSPOSED_COLUMNS.
TRANSPOSED_COLUMNS = 4096
# A vector of values: fewer a row or a block of columns would not fill.
LANES = 16


def _generic(
    value: ir.Value, inputs: int | None = None
) -> tuple[ir.Operation, GenericParts] | None:
    """The ``linalg.generic`` of static f32 operands (``inputs`` inputs, when given) and
    one result that defines ``value``, and its parts."""
    op = defining_op(value)
    if op is None or op.name != "linalg.generic" or len(op.results) != 1:
        return None
    parts = linalg_generic_parts(op)
    if inputs not in (None, len(parts.inputs)) or len(parts.outputs) != 1:
        return None
    for operand in op.operands:
        type_ = ir.ShapedType(operand.type)
        if not isinstance(type_.element_type, ir.F32Type) or static_shape(operand) is None:
            return None
    return op, parts


def _body(op: ir.Operation) -> list[ir.Operation]:
    """The body's ops before its yield, when the yield returns the last of them."""
    ops = list(op.regions[0].blocks[0].operations)
    if len(ops) < 2 or list(ops[-1].operands) != [ops[-2].results[0]]:
        return []
    return ops[:-1]


def _reduced_range(parts: GenericParts) -> tuple[int, int] | None:
    """[a, b): the input's dimensions that the reduction loops walk, when they are
    contiguous and the output's dimensions are the input's others, in order."""
    kinds = ["reduction" in str(kind) for kind in parts.iterator_types]
    dims = result_dims(parts.input_maps[0])
    if dims is None or sorted(dims) != list(range(len(kinds))):
        return None
    reduced = [i for i, dim in enumerate(dims) if kinds[dim]]
    if not reduced or reduced != list(range(reduced[0], reduced[-1] + 1)):
        return None
    if result_dims(parts.output_maps[0]) != [dim for dim in dims if not kinds[dim]]:
        return None
    return reduced[0], reduced[-1] + 1


def _reduction(value: ir.Value) -> tuple[ir.Operation, GenericParts, str, tuple[int, int]] | None:
    """The reduction of one input defining ``value``: its op, parts, combining op, loops."""
    found = _generic(value, 1)
    if found is None:
        return None
    op, parts = found
    body = _body(op)
    reduced = _reduced_range(parts)
    if len(body) != 1 or body[0].name not in REDUCTIONS or reduced is None:
        return None
    arguments = {parts.input_args[0], parts.output_args[0]}
    if len(arguments) != 2 or set(body[0].operands) != arguments:
        return None
    return op, parts, body[0].name, reduced


def _fill_value(value: ir.Value) -> float | None:
    """The constant a ``linalg.fill`` that defines ``value`` fills it with."""
    fill = defining_op(value)
    if fill is None or fill.name != "linalg.fill":
        return None
    return constant_float(fill.operands[0])


def _uses(value: ir.Value) -> list[ir.Operation]:
    return [use.owner for use in value.uses]


def _only_used_by(value: ir.Value, *readers: ir.Operation) -> bool:
    users = _uses(value)
    return len(users) == len(readers) and all(any(u == r for r in readers) for u in users)


def _is_identity(affine_map: ir.AffineMap, rank: int) -> bool:
    return result_dims(affine_map) == list(range(rank))


def _is_rows(affine_map: ir.AffineMap, rank: int) -> bool:
    """The map of a value per row: every loop but the last."""
    return result_dims(affine_map) == list(range(rank - 1))


def _division_operands(parts: GenericParts, rank: int) -> tuple[int, int, list[int]] | None:
    """(index of the input read per row, of the one read whole, the loops the whole one's
    dimensions walk), for a division whose result may be a transpose of the rows: the
    whole input's map is a permutation, and the per-row one's its rows."""
    for per_row, whole in ((0, 1), (1, 0)):
        order = result_dims(parts.input_maps[whole])
        if order is None or sorted(order) != list(range(rank)):
            continue
        if result_dims(parts.input_maps[per_row]) == order[:-1]:
            return per_row, whole, order
    return None


@dataclass
class _Softmax:
    ops: list[ir.Operation]  # the division, the sum, the exp, the max, then the scaling
    x: ir.Value
    scaling: int
    factor: float
    bias: ir.Value | None = None
    # Per dimension of the rows: the bias's stride (0: broadcast) and the result's;
    # then the result's stride along a row (1 unless the result is a transpose).
    bias_strides: list[int] | None = None
    result_strides: list[int] | None = None
    result_column_stride: int = 1


@dataclass(frozen=True)
class _Input:
    """z as the kernel reads it: x, x * factor or x / factor (``scaling``), plus a bias
    read through ``bias_map``; ``ops``: the body ops that compute it."""

    x: ir.Value
    scaling: int = 0
    factor: float = 1.0
    bias: ir.Value | None = None
    bias_map: ir.AffineMap | None = None
    ops: int = 0


def _input_of(op: ir.Operation, parts: GenericParts, z: ir.Value, rank: int) -> _Input | None:
    """What the body value ``z`` of ``op`` is: an input read whole, maybe scaled by a
    constant in the body (elementwise fusion copies a scaling into each reader), maybe
    plus an input read per row or broadcast (a mask's bias)."""
    inputs = list(parts.input_args)
    if z in inputs:
        index = inputs.index(z)
        if not _is_identity(parts.input_maps[index], rank):
            return None
        return _Input(parts.inputs[index])
    computed = defining_op(z)
    if computed is None:
        return None
    a, b = computed.operands if len(computed.operands) == 2 else (None, None)
    if computed.name == "arith.addf":
        for u, v in ((a, b), (b, a)):
            inner = _input_of(op, parts, u, rank)
            if inner is None or inner.bias is not None or v not in inputs:
                continue
            index = inputs.index(v)
            bias, bias_map = parts.inputs[index], parts.input_maps[index]
            return _Input(inner.x, inner.scaling, inner.factor, bias, bias_map, inner.ops + 1)
        return None
    if computed.name not in SCALINGS:
        return None
    # x / c, or x * c in either order.
    for x, c in [(a, b), *([(b, a)] if computed.name == "arith.mulf" else [])]:
        factor = constant_float(c)
        whole = _input_of(op, parts, x, rank) if x in inputs else None
        if factor is not None and whole is not None:
            return _Input(whole.x, SCALINGS[computed.name], factor, ops=1)
    return None


def _bias_strides(bias: ir.Value, bias_map: ir.AffineMap, shape: list[int]) -> list[int] | None:
    """The bias's stride for each dimension of the rows (0 where it is broadcast), when
    its last dimension is the columns', dense."""
    bias_shape, rank = static_shape(bias), len(shape)
    results = list(bias_map.results)
    if bias_shape is None or not results or bias_shape[-1] != shape[-1]:
        return None
    if not isinstance(results[-1], ir.AffineDimExpr) or results[-1].position != rank - 1:
        return None
    strides = [0] * (rank - 1)
    for result, size, stride in zip(results[:-1], bias_shape, row_major_strides(bias_shape)):
        if isinstance(result, ir.AffineDimExpr) and result.position < rank - 1:
            strides[result.position] = stride
        elif not (isinstance(result, ir.AffineConstantExpr) and result.value == 0 and size == 1):
            return None
    return strides


def _three_row_dimensions(
    sizes: list[int], *strides: list[int]
) -> tuple[list[int], list[list[int]]] | None:
    """The rows' sizes and each array's strides in at most three dimensions (padded with
    size 1 in front): size-1 dimensions dropped, neighbours that step as one merged."""
    kept: list[tuple[int, list[int]]] = []
    for d, size in enumerate(sizes):
        if size == 1:
            continue
        step = [stride[d] for stride in strides]
        if kept and all(prev == s * size for prev, s in zip(kept[-1][1], step)):
            kept[-1] = (kept[-1][0] * size, step)
        else:
            kept.append((size, step))
    if len(kept) > 3:
        return None
    kept = [(1, [0] * len(strides))] * (3 - len(kept)) + kept
    return [size for size, _ in kept], [[step[i] for _, step in kept] for i in range(len(strides))]


def _softmax(divide: ir.Operation) -> _Softmax | None:
    """The softmax whose last op is ``divide``, if it is one."""
    found = _generic(divide.results[0], 2)
    result_shape = static_shape(divide.results[0])
    if found is None or not result_shape or not found[1].all_parallel:
        return None
    parts, rank = found[1], len(result_shape)
    body, operands = _body(divide), _division_operands(parts, rank)
    if len(body) != 1 or body[0].name != "arith.divf" or operands is None:
        return None
    per_row, whole, order = operands
    if list(body[0].operands) != [parts.input_args[whole], parts.input_args[per_row]]:
        return None
    if not _is_identity(parts.output_maps[0], rank):
        return None
    sum_value, e = parts.inputs[per_row], parts.inputs[whole]
    # The result's stride along each dimension of e, which the division may transpose.
    result_strides = [row_major_strides(result_shape)[loop] for loop in order]
    total = _reduction(sum_value)
    if total is None or total[2] != "arith.addf" or total[3] != (rank - 1, rank):
        return None
    if total[1].inputs[0] != e or _fill_value(total[1].outputs[0]) != 0.0:
        return None
    exp = _generic(e)
    if exp is None or not exp[1].all_parallel:
        return None
    exp_op, exp_parts = exp
    exp_body = _body(exp_op)
    if [op.name for op in exp_body[-2:]] != ["arith.subf", "math.exp"]:
        return None
    z, max_argument = exp_body[-2].operands
    if list(exp_body[-1].operands) != [exp_body[-2].results[0]]:
        return None
    if max_argument not in exp_parts.input_args:
        return None
    max_index = list(exp_parts.input_args).index(max_argument)
    max_value = exp_parts.inputs[max_index]
    if not _is_rows(exp_parts.input_maps[max_index], rank):
        return None
    most = _generic(max_value)
    if most is None or not _reduces_rows(most[1], rank):
        return None
    most_op, most_parts = most
    most_body = _body(most_op)
    out = most_parts.output_args[0]
    if not most_body or most_body[-1].name != "arith.maximumf" or out not in most_body[-1].operands:
        return None
    operands = list(most_body[-1].operands)
    most_z = operands[1] if operands[0] == out else operands[0]
    if _fill_value(most_parts.outputs[0]) != -math.inf:
        return None
    # z, the same in both ops, and nothing else in their bodies or among their inputs.
    exp_input = _input_of(exp_op, exp_parts, z, rank)
    most_input = _input_of(most_op, most_parts, most_z, rank)
    if exp_input is None or exp_input != most_input:
        return None
    if len(exp_body) != exp_input.ops + 2 or len(most_body) != exp_input.ops + 1:
        return None
    read = [v for v in (exp_input.x, exp_input.bias) if v is not None]
    if not all(any(v == r for r in (*read, max_value)) for v in exp_parts.inputs):
        return None
    if not all(any(v == r for r in read) for v in most_parts.inputs):
        return None
    bias_strides = [0] * (rank - 1)
    if exp_input.bias is not None:
        bias_strides = _bias_strides(exp_input.bias, exp_input.bias_map, static_shape(e))
        if bias_strides is None:
            return None
    ops = [divide, total[0], exp_op, most_op]
    if not (
        _only_used_by(sum_value, divide)
        and _only_used_by(e, total[0], divide)
        and _only_used_by(max_value, exp_op)
    ):
        return None
    softmax = _Softmax(
        ops,
        exp_input.x,
        exp_input.scaling,
        exp_input.factor,
        exp_input.bias,
        bias_strides,
        result_strides[:-1],
        result_strides[-1],
    )
    scaling = _scaling(softmax.x)
    if exp_input.scaling == 0 and scaling is not None and _only_used_by(softmax.x, exp_op, most_op):
        softmax.ops.append(scaling[0])
        softmax.x, softmax.scaling, softmax.factor = scaling[1], scaling[2], scaling[3]
    return softmax


def _reduces_rows(parts: GenericParts, rank: int) -> bool:
    """Whether the last of ``rank`` loops is the one reduction and the output's map is
    the others in order (the inputs' maps are ``_input_of``'s to check)."""
    kinds = ["reduction" in str(kind) for kind in parts.iterator_types]
    return kinds == [False] * (rank - 1) + [True] and _is_rows(parts.output_maps[0], rank)


def _scaling(z: ir.Value) -> tuple[ir.Operation, ir.Value, int, float] | None:
    """(op, x, kind, c) for z = x * c, c * x or x / c, c a constant, elementwise."""
    found = _generic(z, 1)
    if found is None or not found[1].all_parallel:
        return None
    op, parts = found
    rank = len(static_shape(z))
    body = _body(op)
    if len(body) != 1 or not _is_identity(parts.output_maps[0], rank):
        return None
    scaled = _input_of(op, parts, body[0].results[0], rank)
    if scaled is None or scaled.scaling == 0:
        return None
    return op, scaled.x, scaled.scaling, scaled.factor


def _softmax_arguments(softmax: _Softmax) -> list[int] | None:
    """The kernel's scalar arguments: the rows and columns, the scaling and its factor's
    bits, whether there is a bias, the rows in three dimensions with the bias's strides
    and the result's in them, and the result's stride along a row."""
    shape = static_shape(softmax.x)
    rows = _three_row_dimensions(shape[:-1], softmax.bias_strides, softmax.result_strides)
    # A transposed result's rows are made on the kernel's stack.
    if rows is None or (softmax.result_column_stride != 1 and shape[-1] > TRANSPOSED_COLUMNS):
        return None
    sizes, (bias_strides, result_strides) = rows
    return [
        math.prod(shape[:-1]),
        shape[-1],
        softmax.scaling,
        f32_bits(softmax.factor),
        int(softmax.bias is not None),
        *sizes,
        *bias_strides,
        *result_strides,
        softmax.result_column_stride,
    ]


def _standalone_reduction(op: ir.Operation) -> list[int] | None:
    """The kernel's arguments for a reduction it computes, else None."""
    found = _reduction(op.results[0])
    if found is None:
        return None
    _, parts, combine, (a, b) = found
    init = _fill_value(parts.outputs[0])
    shape = static_shape(parts.inputs[0])
    if init is None or not _only_used_by(parts.inputs[0], op):
        return None
    outer, reduced, inner = (math.prod(shape[:a]), math.prod(shape[a:b]), math.prod(shape[b:]))
    if outer * reduced * inner == 0 or (reduced if inner == 1 else inner) < LANES:
        return None
    return [outer, reduced, inner, REDUCTIONS[combine], f32_bits(init)]


@dataclass(frozen=True)
class MarkPrecompiledRowKernelsPass(Pass):
    """Replace f32 softmax and reductions by calls of opaque placeholders."""

    argument: ClassVar[str] = "shlo-mark-precompiled-row-kernels"

    def run(self, module: ir.Operation) -> None:
        index = first_free_index(module)
        for op in ops_named(module, "linalg.generic"):
            softmax = _softmax(op)
            if softmax is None:
                continue
            scalars = _softmax_arguments(softmax)
            if scalars is None:
                continue
            # Without a bias, x stands in its place, unread.
            operands = [softmax.x, softmax.x if softmax.bias is None else softmax.bias]
            replace_with_placeholder(module, op, SOFTMAX_KERNEL, operands, scalars, index)
            index += 1
            for dead in softmax.ops[1:]:
                erase_with_unused_inits(dead)
        for op in ops_named(module, "linalg.generic"):
            scalars = _standalone_reduction(op)
            if scalars is None:
                continue
            fill = defining_op(op.operands[1])
            replace_with_placeholder(module, op, REDUCE_KERNEL, [op.operands[0]], scalars, index)
            index += 1
            erase_with_unused_inits(fill)
