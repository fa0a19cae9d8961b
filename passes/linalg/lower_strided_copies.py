"""shlo-lower-strided-copies: turn memref.copy of non-contiguous buffers into linalg.copy.

Ours because upstream is missing: ``finalize-memref-to-llvm`` lowers a copy
of a non-contiguous buffer (a strided subview, e.g. from pad, slice or
gather) to a call to ``memrefCopy``, which lives in the MLIR runner utils
library that the pinned wheel does not ship; the JIT then has no symbols.
``linalg.copy`` becomes loops with the rest of the linalg ops. Contiguous
copies stay memref.copy, which becomes a memcpy.

  memref.copy %a, %b : memref<2x3xf32, strided<[8, 1], offset: 4>> to memref<2x3xf32>
  ==>
  linalg.copy ins(%a : memref<2x3xf32, strided<[8, 1], offset: 4>>) outs(%b : memref<2x3xf32>)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import linalg_copy, ops_named
from shlo.pass_framework import Pass


def is_contiguous(type_: ir.Type) -> bool:
    """True when ``finalize-memref-to-llvm`` copies ``type_`` with a memcpy, not ``memrefCopy``.

    Mirrors upstream's rule exactly: innermost dimensions with row-major
    strides, then only dimensions of size 1. A size-1 inner dimension with
    another stride (a strided slice of it) is not contiguous there.
    """
    try:
        memref = ir.MemRefType(type_)
    except ValueError:
        return False  # unranked: no static layout to reason about
    if not memref.has_static_shape:
        return False
    strides, _ = memref.get_strides_and_offset()
    dimension = len(strides) - 1
    expected = 1
    while dimension >= 0 and strides[dimension] == expected:
        expected *= memref.shape[dimension]
        dimension -= 1
    while dimension >= 0 and memref.shape[dimension] == 1:
        dimension -= 1
    return dimension < 0


def lower_copy(op: ir.Operation) -> None:
    source, target = op.operands
    if source == target:  # tiles written in place copy onto themselves
        op.erase()
        return
    if is_contiguous(source.type) and is_contiguous(target.type):
        return
    if not all(isinstance(v.type, ir.MemRefType) for v in (source, target)):
        return  # linalg.copy needs ranked operands; upstream's lowering keeps the rest
    with op.location, ir.InsertionPoint(op):
        linalg_copy(source, target)
    op.erase()


@dataclass(frozen=True)
class LowerStridedCopiesPass(Pass):
    """Turn memref.copy of non-contiguous buffers into linalg.copy."""

    argument: ClassVar[str] = "shlo-lower-strided-copies"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "memref.copy"):
            lower_copy(op)
