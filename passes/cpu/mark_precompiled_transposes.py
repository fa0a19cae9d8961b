"""shlo-mark-precompiled-transposes: f32 transposes left alone by fusion become placeholders for a precompiled kernel.

Ours, as ``shlo-mark-precompiled-kernels`` is (``shlo-call-precompiled-kernels``
has the design); this half runs after elementwise fusion, so a transpose
that fusion put into a loop with other ops stays there. Generated, a
transpose's loops are tiles of 16 x 16 values transposed in registers by 64
shuffles, which cost LLVM 15-20 ms per transpose: 3 of GPT-2's 30 kernels
and a quarter of its LLVM time, 10 of the training step's. The kernel
(``shlo_transpose_f32``, in ``shlo/backends/cpu/kernels/transpose_f32.c``)
does the same tiles with AVX-512's permutes, or 8 x 8 ones with AVX2's, so
only hosts with one of them call it; elsewhere the code stays generated.

A ``linalg.generic`` that only copies one static f32 input of at least 256
values, through a permutation of its dimensions, becomes a call that reads
the input through strides: the output's dimension k steps through the input
by the stride of the input dimension the permutation maps to k. An input
that is a view of a larger tensor (``tensor.extract_slice`` with static
offsets, sizes and strides, ``tensor.expand_shape``) is read in place, the
view's start an offset into the larger tensor, so that bufferization need
not copy the slice first (GPT-2's keys and values are slices of one
projection's result).

  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
      affine_map<(d0, d1) -> (d0, d1)>], ...} ins(%x : tensor<64x32xf32>)
      outs(%e : tensor<32x64xf32>) { ^bb0(%in: f32, %out: f32): linalg.yield %in : f32 }
  ==>
  %t = call @shlo_precompiled_0(%x) {shlo.kernel = "shlo_transpose_f32",
      shlo.kernel_arguments = array<i64: 0 (offset), 1, 1, 1, 1, 32, 64 (sizes),
          0, 0, 0, 0, 1, 32 (strides of %x for each dimension of %t)>}
      : (tensor<64x32xf32>) -> tensor<32x64xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.backends.cpu.precompiled import host_suits_kernels
from shlo.ir_utils import copy_parts, defining_op, ops_named, row_major_strides, static_shape
from shlo.pass_framework import Pass
from shlo.passes.cpu.call_precompiled_kernels import (
    erase_with_unused_inits,
    first_free_index,
    replace_with_placeholder,
)

TRANSPOSE_KERNEL = "shlo_transpose_f32"
RANK = 6  # the kernel's most dimensions (TRANSPOSE_RANK)
# Smaller transposes are left to the generated code: a call costs more than their copy.
MIN_ELEMENTS = 256


@dataclass
class _View:
    """A tensor's values as a view of ``base``: at ``offset`` plus the index dot ``strides``."""

    base: ir.Value
    offset: int
    strides: list[int]


def _view(value: ir.Value) -> _View | None:
    """``value`` read through the slices and expansions it is of, down to a dense
    tensor; None for a tensor of dynamic shape."""
    producer = defining_op(value)
    shape = static_shape(value)
    if shape is None:
        return None
    if producer is not None and producer.name == "tensor.extract_slice":
        inner = _view(producer.operands[0])
        static = [
            list(ir.DenseI64ArrayAttr(producer.attributes[name]))
            for name in ("static_offsets", "static_sizes", "static_strides")
        ]
        # Dynamic offsets, sizes or strides, or dimensions dropped: the slice is the base.
        if (
            inner is not None
            and len(producer.operands) == 1
            and len(static[1]) == len(shape) == len(inner.strides)
        ):
            offsets, _, steps = static
            offset = inner.offset + sum(o * s for o, s in zip(offsets, inner.strides))
            return _View(inner.base, offset, [s * t for s, t in zip(inner.strides, steps)])
    if producer is not None and producer.name == "tensor.expand_shape":
        inner = _view(producer.operands[0])
        if inner is None:
            return _View(value, 0, row_major_strides(shape))
        groups = [
            [ir.IntegerAttr(position).value for position in ir.ArrayAttr(group)]
            for group in ir.ArrayAttr(producer.attributes["reassociation"])
        ]
        strides = [0] * len(shape)
        for group, stride in zip(groups, inner.strides):
            # The source dimension's stride is its last part's; each part before
            # steps over the parts after it.
            for position in reversed(group):
                strides[position] = stride
                stride *= shape[position]
        return _View(inner.base, inner.offset, strides)
    return _View(value, 0, row_major_strides(shape))


def _transpose_arguments(op: ir.Operation) -> tuple[ir.Value, list[int]] | None:
    """The tensor the kernel reads and its scalar arguments, for a transpose it computes."""
    parts = copy_parts(op)
    if parts is None or len(parts.inputs) != 1:
        return None
    source = parts.inputs[0]
    shape = static_shape(op.results[0])
    input_map, output_map = parts.input_maps[0], parts.output_maps[0]
    if (
        shape is None
        or static_shape(source) is None
        or not 2 <= len(shape) <= RANK
        or not isinstance(ir.ShapedType(source.type).element_type, ir.F32Type)
        or not input_map.is_permutation
        or output_map != ir.AffineMap.get_identity(len(shape))
        or input_map == output_map
        or math.prod(shape) < MIN_ELEMENTS
    ):
        return None
    view = _view(source)
    assert view is not None  # the source's shape is static
    strides = [0] * len(shape)
    # The output's dimension d reads the input's dimension j where the map's result j is d.
    for j, result in enumerate(input_map.results):
        strides[ir.AffineDimExpr(result).position] = view.strides[j]
    if not _whole_tiles(shape, strides):
        return None
    padding = RANK - len(shape)
    return view.base, [view.offset, *[1] * padding, *shape, *[0] * padding, *strides]


def _whole_tiles(shape: list[int], strides: list[int]) -> bool:
    """Whether the kernel copies whole rows or tiles 16 values wide: the output's last
    dimension, once dimensions of 1 are dropped and dimensions adjacent in the input
    too are merged (as the kernel does), is contiguous in the input, or 16 values
    long with another dimension contiguous. A shorter one makes 16 short rows per
    tile, where the generated code is twice as fast; with none contiguous, the
    kernel would copy one value at a time."""
    merged: list[tuple[int, int]] = []
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if merged and merged[-1][1] == stride * size:
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    if not merged or merged[-1][1] == 1:
        return True
    return merged[-1][0] >= 16 and any(stride == 1 for _, stride in merged)


@dataclass(frozen=True)
class MarkPrecompiledTransposesPass(Pass):
    """Replace f32 transposes that stand alone by calls of opaque placeholders, on hosts
    with AVX-512 or AVX2."""

    argument: ClassVar[str] = "shlo-mark-precompiled-transposes"

    def run(self, module: ir.Operation) -> None:
        if not host_suits_kernels():
            return
        index = first_free_index(module)
        for op in ops_named(module, "linalg.generic"):
            found = _transpose_arguments(op)
            if found is None:
                continue
            source, scalars = found
            init = defining_op(op.operands[1])
            replace_with_placeholder(module, op, TRANSPOSE_KERNEL, [source], scalars, index)
            erase_with_unused_inits(init)
            index += 1
