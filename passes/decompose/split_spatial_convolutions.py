"""shlo-split-spatial-convolutions: a convolution over 3+ spatial dimensions becomes a sum of 2-D ones.

Ours because upstream's lowering is slow: ``stablehlo-legalize-to-linalg``
turns a 3-D convolution into ``linalg.conv_3d_ndhwc_dhwcf``, which no codegen
recipe takes. A [1, 16, 32, 32, 16] input with a 3x3x3 kernel to 32 features
took 131 ms (XLA 11 ms). Each slice of the kernel along the first spatial
dimension is a convolution over the others, with that dimension of the input
(padded, strided, dilated as the window says) moved into the batch:

  out[b, d, ...] = sum over k of conv_(n-1)(in_padded[b, d * stride + k * dilation, ...], w[k])

so the convolution becomes one per kernel slice, on inputs reshaped to
[batch * out_depth, ...], added up; a 4-D one becomes 3-D ones, which this
pass splits again. The 2-D convolutions take the 2-D recipes. Left as they
are: an input dilation along the first dimension (a transposed
convolution's), batch groups, and element types other than f32, f64 and
integers (a sum of partial convolutions rounds once per slice).

  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f],
         window = {pad = [[1, 1], [1, 1], [1, 1]]} : (tensor<1x16x32x32x16xf32>, ...) -> tensor<1x16x32x32x32xf32>
  ==>
  %p = stablehlo.pad %x, low = [0, 1, 0, 0, 0], high = [0, 1, 0, 0, 0]      // 18 planes
  %x0 = stablehlo.reshape (stablehlo.slice %p [0:1, 0:16, ...])          // [16, 32, 32, 16]
  %w0 = stablehlo.reshape (stablehlo.slice %w [0:1, ...])                // [3, 3, 16, 32]
  %c0 = stablehlo.convolution(%x0, %w0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
          window = {pad = [[1, 1], [1, 1]]}
  ... %c1 from planes 1:17 and %w[1], %c2 from planes 2:18 and %w[2]
  %0 = stablehlo.reshape (%c0 + %c1 + %c2) : tensor<1x16x32x32x32xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ConvDimensionNumbers, ir
from shlo.ir_utils import attribute_dict, create_value, ops_named, slice_ranges, static_shape
from shlo.pass_framework import Pass
from shlo.passes.decompose import stablehlo_builders as hlo


def window_integers(
    attributes: dict[str, ir.Attribute], name: str, default: list[int]
) -> list[int]:
    """A convolution's window attribute ``name`` as ints (padding: low and high per
    dimension, flattened), or ``default`` when absent."""
    if name not in attributes:
        return default
    if name == "padding":  # a dense tensor<n x 2 x i64>, the others arrays
        return [int(v) for v in np.array(ir.DenseIntElementsAttr(attributes[name])).reshape(-1)]
    return [int(v) for v in ir.DenseI64ArrayAttr(attributes[name])]


def canonical_orders(numbers: ConvDimensionNumbers) -> tuple[list[int], list[int], list[int]]:
    """The permutations to the canonical layouts: input [b, s0, s1.., f], kernel
    [k0, k1.., i, o], output [b, o0, o1.., f]."""
    return (
        [
            numbers.input_batch_dimension,
            *numbers.input_spatial_dimensions,
            numbers.input_feature_dimension,
        ],
        [
            *numbers.kernel_spatial_dimensions,
            numbers.kernel_input_feature_dimension,
            numbers.kernel_output_feature_dimension,
        ],
        [
            numbers.output_batch_dimension,
            *numbers.output_spatial_dimensions,
            numbers.output_feature_dimension,
        ],
    )


def canonical_numbers(spatial: int) -> ConvDimensionNumbers:
    """The dimension numbers of the canonical layouts with ``spatial`` spatial dimensions:
    [b, 0, 1.., f]x[0, 1.., i, o]->[b, 0, 1.., f]."""
    inner = list(range(1, spatial + 1))
    return ConvDimensionNumbers.get(
        input_batch_dimension=0,
        input_feature_dimension=spatial + 1,
        input_spatial_dimensions=inner,
        kernel_input_feature_dimension=spatial,
        kernel_output_feature_dimension=spatial + 1,
        kernel_spatial_dimensions=list(range(spatial)),
        output_batch_dimension=0,
        output_feature_dimension=spatial + 1,
        output_spatial_dimensions=inner,
    )


def from_canonical(value: ir.Value, out_order: list[int]) -> ir.Value:
    """An output in the canonical layout put back in the op's (``out_order`` from
    canonical_orders)."""
    rank = len(out_order)
    return hlo.transpose(value, [out_order.index(d) for d in range(rank)])


def _splittable(op: ir.Operation) -> bool:
    attributes = attribute_dict(op)
    numbers = ConvDimensionNumbers(attributes["dimension_numbers"])
    spatial = len(numbers.input_spatial_dimensions)
    batch_groups = ir.IntegerAttr(attributes["batch_group_count"]).value
    element = ir.RankedTensorType(op.results[0].type).element_type
    shapes = [static_shape(value) for value in (*op.operands, op.results[0])]
    return (
        spatial >= 3
        and batch_groups == 1
        and window_integers(attributes, "lhs_dilation", [1] * spatial)[0] == 1
        and (isinstance(element, ir.IntegerType) or str(element) in ("f32", "f64"))
        and all(shape is not None and 0 not in shape for shape in shapes)
    )


def _window_attributes(attributes: dict[str, ir.Attribute], spatial: int) -> dict:
    """The window attributes of the convolution over spatial dimensions 1 on."""
    rest: dict[str, ir.Attribute] = {}
    for name in ("window_strides", "lhs_dilation", "rhs_dilation"):
        if name in attributes:
            rest[name] = ir.DenseI64ArrayAttr.get(window_integers(attributes, name, [])[1:])
    if "padding" in attributes:
        pairs = np.array(window_integers(attributes, "padding", []), np.int64).reshape(spatial, 2)
        rest["padding"] = ir.DenseIntElementsAttr.get(pairs[1:])
    if "window_reversal" in attributes:
        reversal = list(ir.DenseBoolArrayAttr(attributes["window_reversal"]))[1:]
        rest["window_reversal"] = ir.DenseBoolArrayAttr.get(reversal)
    return rest


def split(op: ir.Operation) -> None:
    """Replace ``op`` by a sum of convolutions over its spatial dimensions but the first."""
    attributes = attribute_dict(op)
    numbers = ConvDimensionNumbers(attributes["dimension_numbers"])
    spatial = len(numbers.input_spatial_dimensions)
    lhs_shape, rhs_shape, out_shape = (
        static_shape(value) for value in (*op.operands, op.results[0])
    )
    element = ir.RankedTensorType(op.results[0].type).element_type
    stride = window_integers(attributes, "window_strides", [1] * spatial)[0]
    dilation = window_integers(attributes, "rhs_dilation", [1] * spatial)[0]
    low, high = window_integers(attributes, "padding", [0] * 2 * spatial)[:2]
    reversed_ = (
        "window_reversal" in attributes and ir.DenseBoolArrayAttr(attributes["window_reversal"])[0]
    )
    lhs_order, rhs_order, out_order = canonical_orders(numbers)
    batch, depth = lhs_shape[lhs_order[0]], out_shape[out_order[1]]
    inner_out = [batch * depth, *(out_shape[d] for d in out_order[2:])]
    attributes.update(_window_attributes(attributes, spatial))
    attributes["dimension_numbers"] = canonical_numbers(spatial - 1)
    with op.location, ir.InsertionPoint(op):
        lhs = hlo.transpose(op.operands[0], lhs_order)
        rhs = hlo.transpose(op.operands[1], rhs_order)
        lhs = hlo.pad(lhs, [0, low, *[0] * spatial], [0, high, *[0] * spatial])
        lhs_type = ir.RankedTensorType(lhs.type)
        kernel_depth = rhs_shape[rhs_order[0]]
        total = None
        for k in range(kernel_depth):
            start = k * dilation
            ranges = [(0, size, 1) for size in lhs_type.shape]
            ranges[1] = (start, start + (depth - 1) * stride + 1, stride)
            planes = hlo.reshape(slice_ranges(lhs, ranges), [batch * depth, *lhs_type.shape[2:]])
            taken = kernel_depth - 1 - k if reversed_ else k
            kernel_ranges = [(0, size, 1) for size in ir.RankedTensorType(rhs.type).shape]
            kernel_ranges[0] = (taken, taken + 1, 1)
            kernel = hlo.reshape(
                slice_ranges(rhs, kernel_ranges), list(ir.RankedTensorType(rhs.type).shape[1:])
            )
            part = create_value(
                "stablehlo.convolution",
                [planes, kernel],
                hlo.tensor_type(inner_out, element),
                **attributes,
            )
            total = (
                part if total is None else create_value("stablehlo.add", [total, part], part.type)
            )
        canonical_out = hlo.reshape(total, [batch, depth, *inner_out[1:]])
        result = from_canonical(canonical_out, out_order)
    op.results[0].replace_all_uses_with(result)
    op.erase()


@dataclass(frozen=True)
class SplitSpatialConvolutionsPass(Pass):
    """Convolutions over 3+ spatial dimensions: sums of 2-D ones, which the recipes take."""

    argument: ClassVar[str] = "shlo-split-spatial-convolutions"

    def run(self, module: ir.Operation) -> None:
        # A 4-D convolution becomes 3-D ones, split in the next round.
        while splittable := [
            op for op in ops_named(module, "stablehlo.convolution") if _splittable(op)
        ]:
            for op in splittable:
                split(op)
