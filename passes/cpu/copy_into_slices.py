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
the last one before the plan.) A ``tensor.pad`` by a value computed outside
it becomes such an insert into a ``linalg.fill`` of the padded shape, both
threaded, where bufferization made it a scalar fill and a strided copy on one
thread (``jnp.pad`` of [2048, 2048]: 1.4x XLA's time).

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
from shlo.ir_utils import defining_op, linalg_fill, ops_named, parallel_generic, static_shape
from shlo.pass_framework import Pass


def _copy_into(source: ir.Value, destination: ir.Value) -> ir.Value:
    """A linalg.generic that copies ``source`` into ``destination`` (same shape)."""
    body = parallel_generic([source], [destination])
    with ir.InsertionPoint(body):
        linalg.YieldOp([body.arguments[0]])
    return body.owner.results[0]


def _computed_in_place(value: ir.Value) -> bool:
    """Whether a linalg op computes ``value``: bufferized, it can write into the slice."""
    producer = defining_op(value)
    return producer is not None and producer.name.startswith("linalg.")


def _pad_value(op: ir.Operation) -> ir.Value | None:
    """The value a static ``tensor.pad`` pads with, when its body only yields one from outside."""
    body = op.regions[0].blocks[0]
    operations = list(body.operations)
    if len(operations) != 1 or static_shape(op.results[0]) is None:
        return None
    value = operations[0].operands[0]
    if any(value == argument for argument in body.arguments):
        return None  # the position
    return value  # the body holds only the yield: defined outside


def _fill_and_insert(op: ir.Operation, value: ir.Value) -> None:
    """Replace the pad ``op`` by an insert of its source into a fill of its result."""
    low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
    result_type = ir.RankedTensorType(op.results[0].type)
    source = op.operands[0]
    with op.location, ir.InsertionPoint(op):
        empty = tensor.EmptyOp(result_type.shape, result_type.element_type).result
        filled = linalg_fill(value, empty)
        inserted = tensor.InsertSliceOp(
            source, filled, [], [], [], low, static_shape(source), [1] * len(low)
        ).result
    op.results[0].replace_all_uses_with(inserted)
    op.erase()


@dataclass(frozen=True)
class CopyIntoSlicesPass(Pass):
    """Copy arrays inserted into slices (and padded) with ops that the vector plan threads."""

    argument: ClassVar[str] = "shlo-copy-into-slices"
    # Smaller inserts stay: a copy kernel costs a call and a loop nest.
    min_elements: int = 4096

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "tensor.pad"):
            value = _pad_value(op)
            if value is not None and len(op.operands) == 1:  # static low and high
                _fill_and_insert(op, value)
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
