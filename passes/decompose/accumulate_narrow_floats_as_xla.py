"""shlo-accumulate-narrow-floats-as-xla: sum bf16, f16 and smaller floats as XLA does.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg``
accumulates in the result type, so a bf16 or f16 convolution, ``reduce`` or
cumulative sum rounds after every addition. Once the sum is 256 times larger
than a term (bf16 has 8 bits), adding the term changes nothing: the bias
gradient of a bf16 layer over 4096 rows of ones came out as 256, a 3x3
convolution over 1024 channels of ones as 256 instead of 9216, and a cumsum
of 4096 ones stopped at 256. jax.jit gets 4096, 9216 and 4096: XLA's CPU
backend has no bf16 arithmetic and computes these in f32, and jax's own
``jnp.sum`` and ``jnp.mean`` upcast before they reduce. The reduces that jax
emits itself (the transpose of a broadcast in a gradient, ``lax.reduce``)
and torch-mlir's stay narrow. Here, as in XLA:

- a ``stablehlo.convolution`` with a float result narrower than 32 bits, and
  a ``stablehlo.reduce`` of one such input whose body is one ``add``, are
  computed in f32 and rounded once, like the narrow dots of
  ``shlo-normalize-dot-general``;
- a cumulative sum (a ``reduce_window`` that
  ``shlo-lower-reduce-window-scan`` turns into a scan) longer than 16 is cut
  into blocks of 16, as XLA's ``ReduceWindowRewriter`` cuts it on the CPU:
  each block is scanned, the block totals are scanned the same way
  (recursively), and each block adds the total of the blocks before it. The
  results are XLA's bit for bit on forward bf16 cumsums (and within a few
  ulp on reverse ones, whose blocks are scanned from their end here).
  Scans of 16 or fewer stay as they are, which the conformance data's
  expected values (XLA's) pin.

Products, maxima, minima and other windows (pooling) keep their element
type: XLA computes them in it too (a bf16 product of 512 factors 1 + 2^-7
is 35.25 in jax.jit, 53.75 exactly).

  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0]
      : (tensor<4096x4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  ==>
  %x32 = stablehlo.convert %x : (tensor<4096x4xbf16>) -> tensor<4096x4xf32>
  %zero32 = stablehlo.convert %zero : (tensor<bf16>) -> tensor<f32>
  %1 = stablehlo.reduce(%x32 init: %zero32) applies stablehlo.add across dimensions = [0]
      : (tensor<4096x4xf32>, tensor<f32>) -> tensor<4xf32>
  %0 = stablehlo.convert %1 : (tensor<4xf32>) -> tensor<4xbf16>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named, ranked_type
from shlo.pass_framework import Pass
from shlo.passes.decompose import stablehlo_builders as hlo
from shlo.passes.decompose.lower_reduce_window_scan import match_scan

# The block length of XLA's ReduceWindowRewriter on the CPU: jax.jit's bf16
# cumsums are bit for bit those of blocks of 16.
SCAN_BLOCK = 16


def _element(value: ir.Value) -> ir.Type | None:
    value_type = ranked_type(value)
    return None if value_type is None else value_type.element_type


def _narrow_sum(op: ir.Operation) -> bool:
    """Whether ``op`` (a reduce or reduce_window) adds up one narrow-float input."""
    if len(op.operands) != 2:
        return False
    element = _element(op.operands[0])
    if element is None or not hlo.is_narrow_float(element):
        return False
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    return (
        len(body) == 2
        and body[0].name == "stablehlo.add"
        and set(body[0].operands) == set(block.arguments)
        and list(body[1].operands) == [body[0].result]
    )


def cumulative_sum(value: ir.Value, zero: ir.Value, axis: int, reverse: bool) -> ir.Value:
    """The reduce_window summing ``value`` along ``axis`` up to each element (from the
    end when ``reverse``), with ``zero`` as init."""
    value_type = ir.RankedTensorType(value.type)
    rank, size = value_type.rank, value_type.shape[axis]
    window = [size if d == axis else 1 for d in range(rank)]
    padding = np.zeros((rank, 2), np.int64)
    padding[axis] = (0, size - 1) if reverse else (size - 1, 0)
    op = ir.Operation.create(
        "stablehlo.reduce_window",
        results=[value_type],
        operands=[value, zero],
        attributes={
            "window_dimensions": ir.DenseI64ArrayAttr.get(window),
            "padding": ir.DenseIntElementsAttr.get(padding),
        },
        regions=1,
    )
    scalar = hlo.tensor_type([], value_type.element_type)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        total = create_value("stablehlo.add", list(block.arguments), scalar)
        ir.Operation.create("stablehlo.return", operands=[total])
    return op.result


def _along(rank: int, axis: int, amount: int) -> list[int]:
    return [amount if d == axis else 0 for d in range(rank)]


def blocked_cumulative_sum(value: ir.Value, zero: ir.Value, axis: int, reverse: bool) -> ir.Value:
    """``cumulative_sum`` in blocks of SCAN_BLOCK along ``axis``, as XLA computes it."""
    shape = list(ir.RankedTensorType(value.type).shape)
    rank, size = len(shape), shape[axis]
    if size <= SCAN_BLOCK:
        return cumulative_sum(value, zero, axis, reverse)
    blocks = -(-size // SCAN_BLOCK)
    extra = blocks * SCAN_BLOCK - size
    # Zeros at the end fill the last block: they change no sum.
    padded = hlo.pad(value, [0] * rank, _along(rank, axis, extra), zero)
    tiled_shape = [*shape[:axis], blocks, SCAN_BLOCK, *shape[axis + 1 :]]
    inner = cumulative_sum(hlo.reshape(padded, tiled_shape), zero, axis + 1, reverse)
    # A block's total is its last element (its first, from the end); pads crop.
    crop = _along(rank + 1, axis + 1, 1 - SCAN_BLOCK)
    totals = (
        hlo.pad(inner, [0] * (rank + 1), crop, zero)
        if reverse
        else hlo.pad(inner, crop, [0] * (rank + 1), zero)
    )
    totals = hlo.reshape(totals, [*shape[:axis], blocks, *shape[axis + 1 :]])
    scanned = blocked_cumulative_sum(totals, zero, axis, reverse)
    # What the blocks before each block add up to (after it, from the end).
    before = (
        hlo.pad(scanned, _along(rank, axis, -1), _along(rank, axis, 1), zero)
        if reverse
        else hlo.pad(scanned, _along(rank, axis, 1), _along(rank, axis, -1), zero)
    )
    spread = hlo.broadcast(before, tiled_shape, [d for d in range(rank + 1) if d != axis + 1])
    total = create_value("stablehlo.add", [spread, inner], inner.type)
    padded_shape = [blocks * SCAN_BLOCK if d == axis else n for d, n in enumerate(shape)]
    return hlo.pad(hlo.reshape(total, padded_shape), [0] * rank, _along(rank, axis, -extra), zero)


def accumulate_as_xla(op: ir.Operation) -> None:
    if op.name == "stablehlo.convolution":
        element = _element(op.results[0])
        if element is not None and hlo.is_narrow_float(element):
            hlo.compute_in_f32(op)
    elif op.name == "stablehlo.reduce":
        if _narrow_sum(op):
            hlo.compute_in_f32(op)
    elif _narrow_sum(op):  # a reduce_window: only scans, which match_scan tells from pooling
        scan = match_scan(op)
        if scan is None or ir.RankedTensorType(op.operands[0].type).shape[scan.axis] <= SCAN_BLOCK:
            return
        with op.location, ir.InsertionPoint(op):
            blocked = blocked_cumulative_sum(
                op.operands[0], op.operands[1], scan.axis, scan.reverse
            )
        op.results[0].replace_all_uses_with(blocked)
        op.erase()


@dataclass(frozen=True)
class AccumulateNarrowFloatsAsXlaPass(Pass):
    """Sum bf16, f16 and smaller floats as XLA does: in f32, cumsums in blocks of 16."""

    argument: ClassVar[str] = "shlo-accumulate-narrow-floats-as-xla"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(
            module, "stablehlo.convolution", "stablehlo.reduce", "stablehlo.reduce_window"
        ):
            accumulate_as_xla(op)
