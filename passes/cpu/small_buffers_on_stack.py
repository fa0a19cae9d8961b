"""shlo-small-buffers-on-stack: a small buffer freed where it was allocated lives on the stack.

Ours because upstream's ``promote-buffers-to-stack`` runs before deallocation
is placed and does not know the scopes that OpenMP regions get. A tiled
reduction keeps its partial results in a buffer of a few floats per tile (a
softmax's row maxima and sums for a block of 2 rows: 8 bytes), allocated and
freed in every step of the parallel loop: 512 allocations and frees per
call of the bench's softmax, each through the runtime's locked free lists.
On the stack the buffer costs two instructions. Softmax [512, 4096], same
object code otherwise, same results bit for bit, four copies of the kernel
timed in turn (old, new, old, new: in one process the first copy loaded
runs slower, so two copies bias the comparison): back to back 0.274 /
0.252 -> 0.226 / 0.223 ms (min of 50-call loops), after 0.25 s idle 0.393
/ 0.365 -> 0.346 / 0.309 ms (medians of 40 calls).

A ``memref.alloc`` of a static type becomes a ``memref.alloca`` (its
``memref.dealloc`` is dropped) when that dealloc is in the same block, and
the ops between the alloc and its block's stack scope run once per entry to
the scope: only ``scf.if``, ``scf.index_switch`` and ``scf.execute_region``
may enclose it before a ``memref.alloca_scope`` (each step of an OpenMP
loop, from ``convert-scf-to-openmp``) or the function. An alloca in a loop
without a scope would take new stack in every iteration. Runs after
``shlo-free-after-last-use``, which frees each buffer after its last use, so
a buffer freed in its own block does not outlive it.

How large: in a function's own scope, at most ``MAX_BYTES`` a buffer. Its
allocas all live as long as the function (LLVM gets no lifetimes to share
their slots), so a program with many such buffers must not fill the
caller's stack. In a step of a parallel loop, at most ``STEP_MAX_BYTES`` a
buffer and ``STEP_BUDGET_BYTES`` for the step: the stack is released when
the step ends, and a block of rows of ``shlo-fuse-rows`` keeps its
temporaries there. Attention's softmax, blocks of 4 rows of [8, 512, 512]
scores, allocated two 8 KB buffers per block from the heap, 2048 a call:
2.95 ms with them, 2.73 ms on the stack (the same with blocks of 16 rows:
2.87 and 2.80).

  memref.alloca_scope {
    %t = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
    ...
    memref.dealloc %t : memref<2xf32>
  }
  ==>
  memref.alloca_scope {
    %t = memref.alloca() {alignment = 64 : i64} : memref<2xf32>
    ...
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, memref
from shlo.frontend import array_bytes
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass

# Large enough for a tile's partial results (16 rows of f64: 128 bytes);
# small enough that a few live at once stay far inside a thread's stack
# (libiomp5's workers get 4 MiB). A larger buffer has more work to amortize
# its allocation.
MAX_BYTES = 1024
# In a parallel loop's step: a block of rows' temporaries (shlo-fuse-rows
# sizes a block's values to 32 KB), a few of them at once.
STEP_MAX_BYTES = 64 << 10
STEP_BUDGET_BYTES = 128 << 10
# Ops whose regions run at most once each time their parent runs.
_RUN_ONCE = frozenset({"scf.if", "scf.index_switch", "scf.execute_region"})
_STACK_SCOPES = frozenset({"memref.alloca_scope", "func.func"})


def _stack_scope(op: ir.Operation) -> ir.Operation | None:
    """The stack scope of ``op`` when the ops around it up to there run it once per entry."""
    parent = op.parent
    while parent is not None:
        if parent.name in _STACK_SCOPES:
            return parent
        if parent.name not in _RUN_ONCE:
            return None
        parent = parent.parent
    return None


def _own_dealloc(alloc: ir.Operation) -> ir.Operation | None:
    """The one dealloc of ``alloc``'s buffer, if it is in the alloc's block."""
    deallocs = [
        use.owner.operation for use in alloc.results[0].uses if use.owner.name == "memref.dealloc"
    ]
    if len(deallocs) != 1 or deallocs[0].block != alloc.operation.block:
        return None
    return deallocs[0]


def _take_step_stack(taken: dict[ir.Operation, int], scope: ir.Operation, size: int) -> bool:
    """Whether a parallel step ``scope`` (not a function) has ``size`` more bytes of
    stack to give; if so, they are counted in ``taken``."""
    if scope.name != "memref.alloca_scope":
        return False
    used = taken.get(scope.operation, 0) + size
    if used > STEP_BUDGET_BYTES:
        return False
    taken[scope.operation] = used
    return True


@dataclass(frozen=True)
class SmallBuffersOnStackPass(Pass):
    """Turn small static allocations freed in their own block into stack allocations."""

    argument: ClassVar[str] = "shlo-small-buffers-on-stack"

    def run(self, module: ir.Operation) -> None:
        # The bytes of buffers above MAX_BYTES given to each parallel step so far.
        taken: dict[ir.Operation, int] = {}
        for alloc in ops_named(module, "memref.alloc"):
            type_ = ir.MemRefType(alloc.results[0].type)
            size = array_bytes(type_)
            if size is None or size > STEP_MAX_BYTES or len(alloc.operands):
                continue
            dealloc = _own_dealloc(alloc)
            scope = None if dealloc is None else _stack_scope(alloc)
            if scope is None:
                continue
            if size > MAX_BYTES and not _take_step_stack(taken, scope, size):
                continue
            alignment = alloc.attributes["alignment"] if "alignment" in alloc.attributes else None
            with alloc.location, ir.InsertionPoint(alloc):
                alloca = memref.AllocaOp(type_, [], [], alignment=alignment)
            alloc.results[0].replace_all_uses_with(alloca.result)
            dealloc.erase()
            alloc.erase()
