"""shlo-copy-into-slices: an array inserted into a slice of another is copied there by a linalg.generic.

Ours because upstream is missing it: bufferization makes ``tensor.insert_slice``
of a value that no linalg op computes in place (an argument, a slice of one)
a ``memref.copy`` into a strided view, which ``shlo-lower-strided-copies``
turns into scalar loops on one thread: the copies of a concatenation along
the last axis (``shlo-lower-concatenate``) ran at a third of XLA's speed.
Here, on tensors and before the vector plan, each such insert of at least
``min-elements`` elements becomes a ``linalg.generic`` copy into
``tensor.extract_slice`` of the destination, which the plan tiles,
vectorizes and threads, and which bufferizes into the destination's buffer.
(``canonicalize`` would fold the copy back into the insert, so this runs after
the last one before the plan.)

  %r = tensor.insert_slice %a into %d[0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
  ==>
  %s = tensor.extract_slice %d[0, 3] [4, 5] [1, 1] : tensor<4x8xf32> to tensor<4x5xf32>
  %c = linalg.generic {... ["parallel", "parallel"]} ins(%a) outs(%s) { linalg.yield %in }
  %r = tensor.insert_slice %c into %d[0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, linalg, tensor
from shlo.ir_utils import defining_op, ops_named, static_shape
from shlo.pass_framework import Pass


def _copy_into(source: ir.Value, destination: ir.Value) -> ir.Value:
    """A linalg.generic that copies ``source`` into ``destination`` (same shape)."""
    rank = ir.RankedTensorType(source.type).rank
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    copy = ir.Operation.create(
        "linalg.generic",
        results=[destination.type],
        operands=[source, destination],
        attributes={
            "indexing_maps": ir.ArrayAttr.get([identity, identity]),
            "iterator_types": ir.ArrayAttr.get([parallel] * rank),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1]),
        },
        regions=1,
    )
    element = ir.RankedTensorType(source.type).element_type
    block = copy.regions[0].blocks.append(element, element)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return copy.results[0]


def _computed_in_place(value: ir.Value) -> bool:
    """Whether a linalg op computes ``value``: bufferized, it can write into the slice."""
    producer = defining_op(value)
    return producer is not None and producer.name.startswith("linalg.")


@dataclass(frozen=True)
class CopyIntoSlicesPass(Pass):
    """Copy arrays inserted into slices with a linalg.generic that the vector plan threads."""

    argument: ClassVar[str] = "shlo-copy-into-slices"
    # Smaller inserts stay: a copy kernel costs a call and a loop nest.
    min_elements: int = 4096

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "tensor.insert_slice"):
            source = op.operands[0]
            shape = static_shape(source)
            strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
            if (
                shape is None
                or not shape
                or len(op.operands) != 2  # dynamic offsets, sizes or strides
                or any(stride != 1 for stride in strides)
                or math.prod(shape) < self.min_elements
                or _computed_in_place(source)
            ):
                continue
            offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
            sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
            if sizes != list(shape):  # a rank-reducing insert
                continue
            destination = op.operands[1]
            with op.location, ir.InsertionPoint(op):
                slice_ = tensor.ExtractSliceOp(
                    source.type, destination, [], [], [], offsets, sizes, strides
                ).result
                op.operands[0] = _copy_into(source, slice_)
