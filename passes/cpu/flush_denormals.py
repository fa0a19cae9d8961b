"""shlo-flush-denormals: @main computes with subnormal floats flushed to zero, as XLA's CPU code does.

Ours because upstream is missing it: LLVM's ``denormal-fp-math`` attribute
only tells its optimizer what the hardware will do; nothing in MLIR sets
the mode. On x86-64 the mode is two bits of MXCSR: FTZ (results that
would be subnormal become zero) and DAZ (subnormal operands read as zero).
This pass sets both at the start of @main and puts the caller's MXCSR back
before each return. The OpenMP runtime gives each parallel region's
threads the MXCSR of the thread that starts it (intel-openmp's
KMP_INHERIT_FP_CONTROL, on by default), so the kernels run in the same mode
on every thread. The host's runtime restores MXCSR too, when an
allocation failure leaves @main without returning.

Why: XLA CPU runs compiled code in this mode, so a jax program's results on
subnormal values differ from IEEE ones (``log(1e-40)`` is -inf, not -92.1),
and x86 cores take a microcode assist of about a hundred cycles for every
operation on a subnormal: the same softmax ran 6 times slower on data
whose exponentials were subnormal. Values folded at compile time keep IEEE
semantics, as XLA's do.

  func.func @main(%arg0: !llvm.ptr) {
    ...
    return
  }
  ==>
  func.func @main(%arg0: !llvm.ptr) {
    %saved = llvm.alloca %c1 x i32 : (i32) -> !llvm.ptr
    llvm.call_intrinsic "llvm.x86.sse.stmxcsr"(%saved) : (!llvm.ptr) -> ()
    %mxcsr = llvm.load %saved : !llvm.ptr -> i32
    %flushing = llvm.or %mxcsr, %ftz_daz : i32          // 0x8040
    llvm.store %flushing, %mode : i32, !llvm.ptr
    llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%mode) : (!llvm.ptr) -> ()
    ...
    llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%saved) : (!llvm.ptr) -> ()
    return
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import defined_function, llvm_integer, ops_named
from shlo.pass_framework import Pass

ENTRY = "main"
# MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
FTZ_DAZ = 0x8040


def _call_intrinsic(name: str, pointer: ir.Value) -> None:
    ir.Operation.create(
        "llvm.call_intrinsic",
        operands=[pointer],
        attributes={
            "intrin": ir.StringAttr.get(name),
            "fastmathFlags": ir.Attribute.parse("#llvm.fastmath<none>"),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0]),
        },
    )


def _stack_slot() -> ir.Value:
    """Four bytes on the stack, for one MXCSR value."""
    return ir.Operation.create(
        "llvm.alloca",
        results=[ir.Type.parse("!llvm.ptr")],
        operands=[llvm_integer(1, 32)],
        attributes={
            "elem_type": ir.TypeAttr.get(ir.IntegerType.get_signless(32)),
            "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 4),
        },
    ).result


@dataclass(frozen=True)
class FlushDenormalsPass(Pass):
    """Run @main with FTZ and DAZ set in MXCSR, and restore the caller's MXCSR on return."""

    argument: ClassVar[str] = "shlo-flush-denormals"

    def run(self, module: ir.Operation) -> None:
        entry = defined_function(module, ENTRY)
        if entry is None:  # a shard of the module without @main's body
            return
        first = entry.regions[0].blocks[0].operations[0]
        with ir.InsertionPoint(first), entry.location:
            saved, mode = _stack_slot(), _stack_slot()
            _call_intrinsic("llvm.x86.sse.stmxcsr", saved)
            mxcsr = ir.Operation.create(
                "llvm.load", results=[ir.IntegerType.get_signless(32)], operands=[saved]
            ).result
            flushing = ir.Operation.create(
                "llvm.or", results=[mxcsr.type], operands=[mxcsr, llvm_integer(FTZ_DAZ, 32)]
            ).result
            ir.Operation.create("llvm.store", operands=[flushing, mode])
            _call_intrinsic("llvm.x86.sse.ldmxcsr", mode)
        for returned in ops_named(entry, "func.return"):
            with ir.InsertionPoint(returned), returned.location:
                _call_intrinsic("llvm.x86.sse.ldmxcsr", saved)
