"""shlo-mark-precompiled-kernels: f32 matmuls and convolutions become placeholders for precompiled kernels.

Ours: the first half of ``shlo-call-precompiled-kernels`` (whose docstring
has the design). Each op that a kernel of ``shlo/backends/cpu/kernels``
computes as the op does (f32, static shapes, an init filled with +0.0)
becomes a call of a bodiless private function on the tensors the kernel
reads, naming the kernel and its scalar arguments in attributes. The
codegen recipes and fusion leave the opaque call alone.

- ``linalg.matmul`` and ``linalg.batch_matmul`` call ``shlo_matmul_f32``
  with their sizes and strides: a transpose that only the matmul reads is
  read through permuted strides instead.
- ``linalg.conv_2d_nhwc_hwcf`` calls ``shlo_conv2d_f32`` with its sizes,
  strides and dilations, and so does ``linalg.conv_1d_nwc_wcf``, as a 2-D
  convolution of height 1 (the same layout in memory). A ``tensor.pad`` with
  zeros that only the convolution reads is the kernel's padding: it reads
  the unpadded input.

  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x8xf32>) outs(%f : ...) -> ...
  ==>
  %m = call @shlo_precompiled_0(%a, %b) {shlo.kernel = "shlo_matmul_f32",
      shlo.kernel_arguments = array<i64: 1, 4, 8, 3, 0, 3, 1, 0, 8, 1>}
      : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import (
    constant_float,
    copy_parts,
    defining_op,
    has_default_matmul_maps,
    ops_named,
    row_major_strides,
    static_shape,
)
from shlo.pass_framework import Pass
from shlo.passes.cpu.call_precompiled_kernels import (
    erase_with_unused_inits,
    replace_with_placeholder,
)

MATMUL_KERNEL = "shlo_matmul_f32"
CONV2D_KERNEL = "shlo_conv2d_f32"
MATMULS = ("linalg.matmul", "linalg.batch_matmul")
CONV1D = "linalg.conv_1d_nwc_wcf"
CONV2D = "linalg.conv_2d_nhwc_hwcf"
CONVOLUTIONS = (CONV1D, CONV2D)


def _is_f32(value: ir.Value) -> bool:
    return isinstance(ir.ShapedType(value.type).element_type, ir.F32Type)


def _zero(value: ir.Value, positive: bool) -> bool:
    """Whether ``value`` is an f32 constant zero (+0.0 only, when ``positive``)."""
    number = constant_float(value)
    return (
        isinstance(value.type, ir.F32Type)
        and number == 0.0
        and (not positive or math.copysign(1.0, number) > 0)
    )


def _zero_fill(value: ir.Value) -> ir.Operation | None:
    """The ``linalg.fill`` with +0.0 that ``value`` is the result of, if it is one."""
    fill = defining_op(value)
    if fill is None or fill.name != "linalg.fill" or not _zero(fill.operands[0], True):
        return None
    return fill


def _all_static_f32(op: ir.Operation) -> bool:
    return len(op.results) == 1 and all(
        static_shape(value) is not None and _is_f32(value) for value in op.operands
    )


def _only_reader(value: ir.Value, op: ir.Operation) -> ir.Operation | None:
    """The op defining ``value``, when ``op`` is its only reader, in the same block."""
    producer = defining_op(value)
    if producer is None or len(list(value.uses)) != 1 or producer.parent != op.parent:
        return None
    return producer


@dataclass
class _Operand:
    """What the matmul kernel reads for one input: a tensor and the strides of the
    logical operand's dimensions in that tensor's row-major buffer."""

    tensor: ir.Value
    strides: list[int]
    transpose: ir.Operation | None = None  # the copy it replaces, erased after


def _matmul_operand(matmul: ir.Operation, value: ir.Value) -> _Operand:
    """``value`` itself, or the input of the transpose it is, when only ``matmul`` reads it."""
    shape = static_shape(value)
    producer = _only_reader(value, matmul)
    parts = copy_parts(producer) if producer is not None else None
    if (
        parts is not None
        and parts.input_maps[0].is_permutation
        and parts.output_maps[0] == ir.AffineMap.get_identity(len(shape))
        and static_shape(parts.inputs[0]) is not None
    ):
        source = parts.inputs[0]
        source_strides = row_major_strides(static_shape(source))
        strides = [0] * len(shape)
        # The transpose's result dimension d reads the source's dimension j where the
        # input map's result j is d.
        for j, result in enumerate(parts.input_maps[0].results):
            strides[ir.AffineDimExpr(result).position] = source_strides[j]
        return _Operand(source, strides, producer)
    return _Operand(value, row_major_strides(shape))


def _mark_matmul(module: ir.Operation, op: ir.Operation, index: int) -> None:
    lhs, rhs = _matmul_operand(op, op.operands[0]), _matmul_operand(op, op.operands[1])
    fill = defining_op(op.operands[2])
    shape = static_shape(op.results[0])
    batched = op.name == "linalg.batch_matmul"
    # A matmul is a batch of one: its batch strides are never used.
    scalars = [
        shape[0] if batched else 1,
        *shape[-2:],
        static_shape(op.operands[0])[-1],
        *(lhs.strides if batched else [0, *lhs.strides]),
        *(rhs.strides if batched else [0, *rhs.strides]),
    ]
    replace_with_placeholder(module, op, MATMUL_KERNEL, [lhs.tensor, rhs.tensor], scalars, index)
    for dead in (fill, lhs.transpose, rhs.transpose):
        erase_with_unused_inits(dead)


def _zero_padding(conv: ir.Operation) -> tuple[ir.Operation, list[int]] | None:
    """The ``tensor.pad`` of the convolution's input with zeros of its spatial dimensions
    only, that only the convolution reads, with its padding before each, if it is one."""
    pad = _only_reader(conv.operands[0], conv)
    if pad is None or pad.name != "tensor.pad" or len(pad.operands) != 1:
        return None
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    if low[0] or low[-1] or high[0] or high[-1]:  # the batch and the channels
        return None
    body = pad.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands[0]
    # A padding of zeros of either sign: the kernel multiplies +0.0 instead, which changes
    # only the sign of zero products, and its sums start from +0.0 (+0.0 + -0.0 is +0.0).
    if not _zero(yielded, False):
        return None
    return pad, low[1:-1]


def _mark_convolution(module: ir.Operation, op: ir.Operation, index: int) -> None:
    """A 2-D convolution, or a 1-D one as a 2-D one of height 1."""
    fill = defining_op(op.operands[2])
    padding = _zero_padding(op)
    strides = list(ir.DenseIntElementsAttr(op.attributes["strides"]))
    dilations = list(ir.DenseIntElementsAttr(op.attributes["dilations"]))
    pad, before = padding if padding is not None else (None, [0] * len(strides))
    source = pad.operands[0] if pad is not None else op.operands[0]
    x, w, y = (static_shape(v) for v in (source, op.operands[1], op.results[0]))
    if op.name == CONV1D:
        x, w, y = [x[0], 1, *x[1:]], [1, *w], [y[0], 1, *y[1:]]
        before, strides, dilations = [0, *before], [1, *strides], [1, *dilations]
    n, h, width, c = x
    kh, kw, _, f = w
    _, oh, ow, _ = y
    scalars = [n, h, width, c, kh, kw, f, oh, ow, *before, *strides, *dilations]
    replace_with_placeholder(module, op, CONV2D_KERNEL, [source, op.operands[1]], scalars, index)
    erase_with_unused_inits(fill)
    if pad is not None:
        pad.erase()


def _eligible(op: ir.Operation) -> bool:
    """An op a kernel computes as the op does."""
    if not _all_static_f32(op) or len(op.operands) != 3 or _zero_fill(op.operands[2]) is None:
        return False
    return op.name in CONVOLUTIONS or has_default_matmul_maps(op)


@dataclass(frozen=True)
class MarkPrecompiledKernelsPass(Pass):
    """Replace f32 (batch) matmuls and 1-D and 2-D convolutions by calls of opaque placeholders."""

    argument: ClassVar[str] = "shlo-mark-precompiled-kernels"

    def run(self, module: ir.Operation) -> None:
        ops = [op for op in ops_named(module, *MATMULS, *CONVOLUTIONS) if _eligible(op)]
        for index, op in enumerate(ops):
            if op.name in CONVOLUTIONS:
                _mark_convolution(module, op, index)
            else:
                _mark_matmul(module, op, index)
