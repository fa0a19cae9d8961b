"""shlo-call-precompiled-kernels: placeholders become calls of kernels compiled once per machine.

Ours because upstream has no such library call. XLA calls Eigen for its
matmuls and convolutions and compiles a 1024^3 matmul in about 11 ms;
generated from the codegen recipes, the same matmul took shlo about 60 ms,
20 of them in LLVM for one register-tiled kernel. The kernels in
``shlo/backends/cpu/kernels/*.c`` are built by the system's C compiler once
per machine (``shlo.backends.cpu.precompiled``), so a program's own code for
such an op is a call.

``shlo-mark-precompiled-kernels``, first in the tensor stage, replaces each op a
kernel computes by a call of a bodiless placeholder (``shlo_precompiled_<i>``)
on tensors, naming the kernel and its scalar arguments in attributes: the
recipes and fusion see an opaque call. This pass expands the placeholders
right before one-shot bufferization into the kernel's call on the operands'
buffers (``bufferization.to_buffer``, read only) and a new buffer for the
result (``bufferization.to_tensor``, restrict), then the threads. Expanded
earlier, the ``to_buffer`` ops were CSE'd across calls (two products
reading attention's q) and canonicalization folds ``to_buffer`` of a
``to_tensor``: a later call then read a buffer that bufferization, which
saw the read only where the merged ``to_buffer`` was, had let an op
overwrite in between (the random-blocks campaign's attention gradients,
error 1.46). Between the expansion and bufferization no pass moves or
merges ops. The kernels take bare pointers (``llvm.bareptr``); each buffer
is passed as a 0-d view of its start, so one declaration serves every shape.

  %m = call @shlo_precompiled_0(%a, %b) {shlo.kernel = "shlo_matmul_f32",
      shlo.kernel_arguments = array<i64: 1, 4, 8, 3, 0, 3, 1, 0, 8, 1>}
      : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  ==>
  %ab = bufferization.to_buffer %a read_only : tensor<4x3xf32> to memref<4x3xf32>
  %bb = bufferization.to_buffer %b read_only : tensor<3x8xf32> to memref<3x8xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  call @shlo_matmul_f32(<0-d views of %ab, %bb, %c>, batch 1, m 4, n 8, k 3,
                        strides of a: 12, 3, 1, of b: 24, 8, 1, threads)
  %m = bufferization.to_tensor %c restrict writable : memref<4x8xf32> to tensor<4x8xf32>
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import arith, bufferization, ir, memref
from shlo.ir_utils import callee_name, defining_op, ops_named, static_shape, string_value
from shlo.pass_framework import Pass

PLACEHOLDER = "shlo_precompiled_"
_KERNEL = "shlo.kernel"


def _declare(module: ir.Operation, kernel: str, pointees: Sequence[ir.Type], scalars: int) -> None:
    """``func.func private @<kernel>``, taking bare pointers to ``pointees``, once per module."""
    body = module.regions[0].blocks[0]
    for op in body.operations:
        if op.operation.name == "func.func" and string_value(op.attributes["sym_name"]) == kernel:
            return
    pointers = [ir.MemRefType.get([], pointee) for pointee in pointees]
    i64 = ir.IntegerType.get_signless(64)
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(kernel),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get(pointers + [i64] * scalars, [])
                ),
                "sym_visibility": ir.StringAttr.get("private"),
                "llvm.bareptr": ir.UnitAttr.get(),
            },
            regions=1,
        )


def _start(buffer: ir.Value) -> ir.Value:
    """A 0-d view of ``buffer``'s first element: the bare pointer the kernel takes."""
    element = ir.MemRefType(buffer.type).element_type
    return memref.ReinterpretCastOp(
        ir.MemRefType.get([], element), buffer, [], [], [], [0], [], []
    ).result


def replace_with_placeholder(
    module: ir.Operation,
    op: ir.Operation,
    kernel: str,
    operands: Sequence[ir.Value],
    scalars: Sequence[int],
    index: int,
) -> None:
    """``op`` replaced by a call of a bodiless placeholder on ``operands``, for ``kernel``
    with the scalar arguments ``scalars`` (then the threads, added by the expansion)."""
    name = f"{PLACEHOLDER}{index}"
    result_type = op.results[0].type
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]), op.location:
        ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get([v.type for v in operands], [result_type])
                ),
                "sym_visibility": ir.StringAttr.get("private"),
            },
            regions=1,
        )
    with op.location, ir.InsertionPoint(op):
        call = ir.Operation.create(
            "func.call",
            results=[result_type],
            operands=list(operands),
            attributes={
                "callee": ir.FlatSymbolRefAttr.get(name),
                _KERNEL: ir.StringAttr.get(kernel),
                _SCALARS: ir.DenseI64ArrayAttr.get(list(scalars)),
            },
        )
    op.results[0].replace_all_uses_with(call.results[0])
    op.erase()


def f32_bits(value: float) -> int:
    """The bits of ``value`` rounded to f32, as a kernel's scalar argument carries it."""
    return int(np.float32(value).view(np.uint32))


def first_free_index(module: ir.Operation) -> int:
    """A placeholder number no placeholder in ``module`` has (an earlier pass's)."""
    names = [
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in module.regions[0].blocks[0].operations
        if op.operation.name == "func.func"
    ]
    numbers = [int(n[len(PLACEHOLDER) :]) for n in names if n.startswith(PLACEHOLDER)]
    return max(numbers, default=-1) + 1


def erase_with_unused_inits(op: ir.Operation | None) -> None:
    """``op`` when nothing uses it, then what it wrote into (a ``linalg.fill`` or a
    ``tensor.empty``) when that is unused too, and so on."""
    if op is None or any(len(list(result.uses)) for result in op.results):
        return
    init = defining_op(op.operands[len(op.operands) - 1]) if len(op.operands) else None
    op.erase()
    if init is not None and init.name in ("linalg.fill", "tensor.empty"):
        erase_with_unused_inits(init)


_SCALARS = "shlo.kernel_arguments"


def placeholder_call(op: ir.Operation) -> tuple[str, list[int]] | None:
    """The kernel and scalar arguments of a placeholder's call, else None."""
    if op.name != "func.call" or _KERNEL not in op.attributes:
        return None
    return string_value(op.attributes[_KERNEL]), list(ir.DenseI64ArrayAttr(op.attributes[_SCALARS]))


def _expand(module: ir.Operation, call: ir.Operation, threads: int) -> None:
    """A placeholder's call as the kernel's call on the buffers of its operands."""
    i64 = ir.IntegerType.get_signless(64)
    result_type = ir.RankedTensorType(call.results[0].type)
    found = placeholder_call(call)
    assert found is not None, "only placeholders' calls are expanded"
    kernel, scalars = found
    values = [*scalars, threads]
    elements = [ir.ShapedType(value.type).element_type for value in call.operands]
    _declare(module, kernel, [*elements, ir.F32Type.get()], len(values))
    with call.location, ir.InsertionPoint(call):
        buffers = [
            bufferization.ToBufferOp(
                ir.MemRefType.get(static_shape(value), element), value, read_only=True
            ).result
            for value, element in zip(call.operands, elements, strict=True)
        ]
        result = memref.AllocOp(
            ir.MemRefType.get(list(result_type.shape), ir.F32Type.get()), [], [], alignment=64
        )
        constants = {
            value: arith.ConstantOp(i64, ir.IntegerAttr.get(i64, value)).result
            for value in dict.fromkeys(values)
        }
        ir.Operation.create(
            "func.call",
            operands=[
                *(_start(b) for b in (*buffers, result.result)),
                *(constants[value] for value in values),
            ],
            attributes={"callee": ir.FlatSymbolRefAttr.get(kernel)},
        )
        product = bufferization.ToTensorOp(
            result_type, result.result, restrict=True, writable=True
        ).result
    call.results[0].replace_all_uses_with(product)
    call.erase()


@dataclass(frozen=True)
class CallPrecompiledKernelsPass(Pass):
    """Expand the placeholders into calls of the precompiled kernels, before bufferization."""

    argument: ClassVar[str] = "shlo-call-precompiled-kernels"
    # The threads a kernel may run on.
    threads: int = 1

    def run(self, module: ir.Operation) -> None:
        calls = [
            op for op in ops_named(module, "func.call") if callee_name(op).startswith(PLACEHOLDER)
        ]
        for call in calls:
            _expand(module, call, self.threads)
        for op in list(module.regions[0].blocks[0].operations):
            op = op.operation
            if op.name == "func.func" and string_value(op.attributes["sym_name"]).startswith(
                PLACEHOLDER
            ):
                op.erase()
