"""shlo-normalize-reduce: give stablehlo.reduce forms that upstream's linalg lowering accepts.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves a
``reduce`` over no dimensions (``jnp.unique(size=...)`` exports one) and a
``reduce`` over a dimension of size 0 unconverted, and bufferization then
fails with "op was not bufferized". A reduce over no dimensions combines each
element with the init once, which is a reduce over a new trailing dimension of
size 1. A reduce over an empty dimension yields its init everywhere. A
``reduce_window`` whose negative padding trims a dimension below zero passes
the verifier but makes upstream's lowering abort the process while it builds
the ``pad``: it is refused here, at its location.

  %0 = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = []
      : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  ==>
  %x1 = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  %0 = stablehlo.reduce(%x1 init: %c) applies stablehlo.add across dimensions = [2]
      : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3xf32>

  %0 = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1]
      : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
  ==>
  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<2xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass, PassError


def normalize_reduce(op: ir.Operation) -> None:
    dimensions = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    count = len(op.operands) // 2
    inputs, inits = list(op.operands)[:count], list(op.operands)[count:]
    shape = list(ir.RankedTensorType(inputs[0].type).shape)
    with op.location, ir.InsertionPoint(op):
        if not dimensions:
            for index, value in enumerate(inputs):
                element = ir.RankedTensorType(value.type).element_type
                op.operands[index] = create_value(
                    "stablehlo.reshape", [value], ir.RankedTensorType.get([*shape, 1], element)
                )
            op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([len(shape)])
        elif any(shape[d] == 0 for d in dimensions):
            for result, init in zip(list(op.results), inits):
                result.replace_all_uses_with(
                    create_value(
                        "stablehlo.broadcast_in_dim",
                        [init],
                        result.type,
                        broadcast_dimensions=ir.DenseI64ArrayAttr.get([]),
                    )
                )
            op.erase()


def check_reduce_window_padding(op: ir.Operation) -> None:
    if "padding" not in op.attributes:
        return
    shape = ir.RankedTensorType(op.operands[0].type).shape
    padding = ir.DenseIntElementsAttr(op.attributes["padding"])
    pairs = [(int(padding[2 * d]), int(padding[2 * d + 1])) for d in range(len(shape))]
    for dimension, (size, (low, high)) in enumerate(zip(shape, pairs)):
        if size + low + high < 0:
            raise PassError(
                op.location,
                f"expected padding that leaves dimension {dimension} a size of at least 0, "
                f"got {size} + ({low}) + ({high})",
            )


@dataclass(frozen=True)
class NormalizeReducePass(Pass):
    """Rewrite reduces over no dimensions or over empty dimensions into forms upstream lowers."""

    argument: ClassVar[str] = "shlo-normalize-reduce"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.reduce", "stablehlo.reduce_window"):
            if op.name == "stablehlo.reduce":
                normalize_reduce(op)
            else:
                check_reduce_window_padding(op)
