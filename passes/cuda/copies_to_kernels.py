"""shlo-copies-to-kernels: copies between buffers become linalg.copy, so GPU kernels do them.

Ours: upstream lowers a host ``memref.copy`` to a ``memcpy`` that the host
runs, which cannot read or write GPU memory. Run before the linalg ops become
parallel loops, a ``linalg.copy`` turns into a kernel like any other, so
a call can pass its inputs and results in device memory. Two kinds of copy
stay on the host: those of 0-d buffers (no loop to map to threads) and those
from a constant global, which lives in host memory that kernels cannot read.

  memref.copy %arg0, %alloc : memref<4x8xf32> to memref<4x8xf32>
  ==>
  linalg.copy ins(%arg0 : memref<4x8xf32>) outs(%alloc : memref<4x8xf32>)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import VIEW_OPS, linalg_copy, ops_named
from shlo.pass_framework import Pass


def buffer_source(value: ir.Value) -> ir.Operation | None:
    """The op that made the buffer ``value`` views (None for a block argument)."""
    while True:
        owner = value.owner
        if not isinstance(owner, ir.OpView | ir.Operation):
            return None
        owner = owner.operation
        if owner.name not in VIEW_OPS:
            return owner
        value = owner.operands[0]


def _inside_gpu_code(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name in ("gpu.module", "gpu.launch", "gpu.func"):
            return True
        parent = parent.parent
    return False


@dataclass(frozen=True)
class CopiesToKernelsPass(Pass):
    """memref.copy between non-0-d, non-constant buffers -> linalg.copy."""

    argument: ClassVar[str] = "shlo-copies-to-kernels"

    def run(self, module: ir.Operation) -> None:
        for copy in ops_named(module, "memref.copy"):
            source, target = copy.operands
            if ir.MemRefType(source.type).rank == 0 or _inside_gpu_code(copy):
                continue
            origin = buffer_source(source)
            if origin is not None and origin.name == "memref.get_global":
                continue
            with copy.location, ir.InsertionPoint(copy):
                linalg_copy(source, target)
            copy.erase()
