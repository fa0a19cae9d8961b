"""shlo-free-after-last-use: free each buffer right after the last op that uses it.

Ours because upstream is slow and frees late. ``buffer-deallocation-pipeline``
(ownership-based deallocation, its simplification, canonicalize and cse)
took 0.39 s of GPT-2's compile (12 layers), and it frees every buffer at the
end of the block that allocates it: all of a program's intermediates lived
until it returned, so none of their memory was reused within a call.

Programs after bufferization are mostly straight-line code: a buffer is
allocated in a block and used by ops of that block, or by ops nested in
them (a loop nest writing it). For such a buffer the pass inserts
``memref.dealloc`` after the last op of its block that uses it, directly or
through views. When any buffer is used otherwise (yielded by a loop,
returned, passed to an op the pass does not know, or reallocated), the pass
runs upstream's pipeline on the module instead, unchanged.

  %a = memref.alloc() : memref<8xf32>
  linalg.generic ... outs(%a : memref<8xf32>)
  linalg.generic ... ins(%a : memref<8xf32>) outs(%out : memref<8xf32>)
  %b = memref.alloc() : memref<8xf32>
  ...
  ==>
  %a = memref.alloc() : memref<8xf32>
  linalg.generic ... outs(%a : memref<8xf32>)
  linalg.generic ... ins(%a : memref<8xf32>) outs(%out : memref<8xf32>)
  memref.dealloc %a : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, memref, passmanager
from shlo.ir_utils import VIEW_OPS, ops_named
from shlo.pass_framework import Pass

UPSTREAM = "builtin.module(buffer-deallocation-pipeline)"

# Ops that read or write a buffer passed to them without keeping it.
_ACCESSES = frozenset(
    (
        "memref.load",
        "memref.store",
        "memref.copy",
        "memref.dim",
        "memref.prefetch",
        "memref.atomic_rmw",
        "memref.generic_atomic_rmw",
        "memref.extract_aligned_pointer_as_index",
        "vector.transfer_read",
        "vector.transfer_write",
        "vector.load",
        "vector.store",
        "vector.maskedload",
        "vector.maskedstore",
        "vector.gather",
        "vector.scatter",
    )
)


class _Escapes(Exception):
    """A buffer used in a way this pass does not free: upstream's pipeline does."""


def _keeps_no_reference(op: ir.Operation) -> bool:
    if op.name in _ACCESSES:
        return True
    # linalg ops on buffers have no results; func.call: the callee cannot
    # return a buffer it was given when it returns none.
    if op.name.startswith("linalg.") or op.name == "func.call":
        return not any(isinstance(r.type, ir.BaseMemRefType) for r in op.results)
    return False


def _last_user(alloc: ir.Operation) -> ir.Operation:
    """The last op of the allocation's block that uses its buffer (the alloc when none does)."""
    block = alloc.block
    last = alloc
    buffers = [alloc.results[0]]
    while buffers:
        for use in buffers.pop().uses:
            user = use.owner.operation
            if user.name in VIEW_OPS and use.operand_number == 0:
                buffers.append(user.results[0])
            elif not _keeps_no_reference(user):
                raise _Escapes(user.name)
            while user.block != block:  # the op of this block the use is nested in
                user = user.parent
                if user is None:
                    raise _Escapes("a use outside the allocating block")
            if last.is_before_in_block(user):
                last = user
    return last


@dataclass(frozen=True)
class FreeAfterLastUsePass(Pass):
    """Free each allocated buffer after its last use; upstream's deallocation when one escapes."""

    argument: ClassVar[str] = "shlo-free-after-last-use"

    def run(self, module: ir.Operation) -> None:
        allocs = ops_named(module, "memref.alloc", "memref.realloc", "memref.dealloc")
        try:
            if any(op.name != "memref.alloc" for op in allocs):
                raise _Escapes("a realloc or dealloc")
            last_users = [(alloc, _last_user(alloc)) for alloc in allocs]
        except _Escapes:
            passmanager.PassManager.parse(UPSTREAM).run(module)
            return
        for alloc, last in last_users:
            with ir.InsertionPoint.after(last), alloc.location:
                memref.DeallocOp(alloc.results[0])
