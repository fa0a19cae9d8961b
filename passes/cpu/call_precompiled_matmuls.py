"""shlo-call-precompiled-matmuls: f32 matrix products as calls of a kernel compiled once per machine.

Ours because upstream has no such library call. XLA calls Eigen for its
matmuls and compiles a 1024^3 matmul in about 11 ms; generated from the
codegen recipes, the same matmul took shlo about 60 ms, 20 of them in LLVM
for one register-tiled kernel. ``shlo_matmul_f32``
(``shlo/backends/cpu/kernels/matmul_f32.c``) is built by the system's C
compiler once per machine (``shlo.backends.cpu.precompiled``) and packs,
tiles and threads any f32 (batch) matmul, so the program's own code is a
call.

A ``linalg.matmul`` or ``linalg.batch_matmul`` of f32 with static shapes,
whose init is a fill with +0.0, becomes that call on the operands' buffers
(``bufferization.to_buffer``, read only) and a new buffer for the result
(``bufferization.to_tensor``, restrict). An operand that is a transpose
(a ``linalg.generic`` copy with permuted maps) that only the matmul reads is
passed untransposed, with permuted strides: the kernel's packing reads any
strides, so the transpose's copy goes away. The kernel takes bare pointers
(``llvm.bareptr``); each buffer is passed as a 0-d view of its start, so one
declaration serves every shape.

Two passes. ``shlo-mark-precompiled-matmuls`` (``mark``), first in the tensor stage,
puts a call of a bodiless placeholder (``shlo_precompiled_matmul_<i>``) on
tensors in each matmul's place, with the sizes and strides as attributes:
the recipes and fusion see an opaque call. ``shlo-call-precompiled-matmuls``
expands the placeholders right before one-shot bufferization. Expanded
earlier, the ``to_buffer`` ops were CSE'd across calls (two products
reading attention's q) and canonicalization folds ``to_buffer`` of a
``to_tensor``: a later call then read a buffer that bufferization, which
saw the read only where the merged ``to_buffer`` was, had let an op
overwrite in between (the random-blocks campaign's attention gradients,
error 1.46). Between the expansion and bufferization no pass moves or
merges ops.

  %m = call @shlo_precompiled_matmul_0(%a, %b)
      {shlo.kernel_arguments = array<i64: 1, 4, 8, 3, 0, 3, 1, 0, 8, 1>}
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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import arith, bufferization, ir, memref
from shlo.ir_utils import (
    copy_parts,
    defining_op,
    has_default_matmul_maps,
    ops_named,
    static_shape,
    string_value,
)
from shlo.pass_framework import Pass

KERNEL = "shlo_matmul_f32"

MATMULS = ("linalg.matmul", "linalg.batch_matmul")


def _is_f32(value: ir.Value) -> bool:
    return isinstance(ir.ShapedType(value.type).element_type, ir.F32Type)


def _zero_fill(value: ir.Value) -> ir.Operation | None:
    """The ``linalg.fill`` with +0.0 that ``value`` is the result of, if it is one."""
    fill = defining_op(value)
    if fill is None or fill.name != "linalg.fill":
        return None
    constant = defining_op(fill.operands[0])
    if constant is None or constant.name != "arith.constant":
        return None
    attribute = constant.attributes["value"]
    if not isinstance(attribute, ir.FloatAttr) or not isinstance(attribute.type, ir.F32Type):
        return None
    value = ir.FloatAttr(attribute).value
    return fill if value == 0.0 and math.copysign(1.0, value) > 0 else None


def _row_major_strides(shape: Sequence[int]) -> list[int]:
    return [int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape))]


@dataclass
class _Operand:
    """What the kernel reads for one input: a tensor and the strides of the logical
    operand's dimensions in that tensor's row-major buffer."""

    tensor: ir.Value
    strides: list[int]
    transpose: ir.Operation | None = None  # the copy it replaces, erased after


def _operand(matmul: ir.Operation, value: ir.Value) -> _Operand:
    """``value`` itself, or the input of the transpose it is, when only ``matmul`` reads it."""
    shape = static_shape(value)
    producer = defining_op(value)
    parts = copy_parts(producer) if producer is not None else None
    if (
        parts is not None
        and len(list(value.uses)) == 1
        and producer.parent == matmul.parent
        and parts.input_maps[0].is_permutation
        and parts.output_maps[0] == ir.AffineMap.get_identity(len(shape))
        and static_shape(parts.inputs[0]) is not None
    ):
        source = parts.inputs[0]
        source_strides = _row_major_strides(static_shape(source))
        strides = [0] * len(shape)
        # The transpose's result dimension d reads the source's dimension j where the
        # input map's result j is d.
        for j, result in enumerate(parts.input_maps[0].results):
            strides[ir.AffineDimExpr(result).position] = source_strides[j]
        return _Operand(source, strides, producer)
    return _Operand(value, _row_major_strides(shape))


def eligible(op: ir.Operation) -> bool:
    """A matmul the kernel computes as the op does."""
    if len(op.results) != 1 or len(op.operands) != 3:
        return False
    if not has_default_matmul_maps(op):
        return False
    return (
        all(static_shape(value) is not None and _is_f32(value) for value in op.operands)
        and _zero_fill(op.operands[2]) is not None
    )


def _declare(module: ir.Operation) -> None:
    """``func.func private @shlo_matmul_f32``, taking bare pointers, once per module."""
    body = module.regions[0].blocks[0]
    for op in body.operations:
        if op.operation.name == "func.func" and string_value(op.attributes["sym_name"]) == KERNEL:
            return
    pointer = ir.MemRefType.get([], ir.F32Type.get())
    i64 = ir.IntegerType.get_signless(64)
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(KERNEL),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get([pointer] * 3 + [i64] * 11, [])
                ),
                "sym_visibility": ir.StringAttr.get("private"),
                "llvm.bareptr": ir.UnitAttr.get(),
            },
            regions=1,
        )


def _start(buffer: ir.Value) -> ir.Value:
    """A 0-d view of ``buffer``'s first element: the bare pointer the kernel takes."""
    return memref.ReinterpretCastOp(
        ir.MemRefType.get([], ir.F32Type.get()), buffer, [], [], [], [0], [], []
    ).result


PLACEHOLDER = "shlo_precompiled_matmul_"


def mark(module: ir.Operation, op: ir.Operation, index: int) -> None:
    """``op`` replaced by a call of a bodiless placeholder on the tensors the kernel reads,
    with the kernel's sizes and strides as attributes."""
    lhs, rhs = _operand(op, op.operands[0]), _operand(op, op.operands[1])
    fill = defining_op(op.operands[2])
    shape = static_shape(op.results[0])
    batched = op.name == "linalg.batch_matmul"
    m, n = shape[-2:]
    k = static_shape(op.operands[0])[-1]
    name = f"{PLACEHOLDER}{index}"
    arguments = [lhs.tensor, rhs.tensor]
    result_type = op.results[0].type
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]), op.location:
        ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get([v.type for v in arguments], [result_type])
                ),
                "sym_visibility": ir.StringAttr.get("private"),
            },
            regions=1,
        )
    # A matmul is a batch of one: its batch strides are never used.
    scalars = [
        shape[0] if batched else 1,
        m,
        n,
        k,
        *(lhs.strides if batched else [0, *lhs.strides]),
        *(rhs.strides if batched else [0, *rhs.strides]),
    ]
    with op.location, ir.InsertionPoint(op):
        call = ir.Operation.create(
            "func.call",
            results=[result_type],
            operands=arguments,
            attributes={
                "callee": ir.FlatSymbolRefAttr.get(name),
                _SCALARS: ir.DenseI64ArrayAttr.get(scalars),
            },
        )
    op.results[0].replace_all_uses_with(call.results[0])
    op.erase()
    for dead in (fill, lhs.transpose, rhs.transpose):
        _erase_with_unused_inits(dead)


_SCALARS = "shlo.kernel_arguments"


def _expand(call: ir.Operation, threads: int) -> None:
    """A placeholder's call as the kernel's call on the buffers of its operands."""
    i64 = ir.IntegerType.get_signless(64)
    result_type = ir.RankedTensorType(call.results[0].type)
    with call.location, ir.InsertionPoint(call):
        buffers = [
            bufferization.ToBufferOp(
                ir.MemRefType.get(static_shape(value), ir.F32Type.get()), value, read_only=True
            ).result
            for value in call.operands
        ]
        result = memref.AllocOp(
            ir.MemRefType.get(list(result_type.shape), ir.F32Type.get()), [], [], alignment=64
        )
        values = [*ir.DenseI64ArrayAttr(call.attributes[_SCALARS]), threads]
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
            attributes={"callee": ir.FlatSymbolRefAttr.get(KERNEL)},
        )
        product = bufferization.ToTensorOp(
            result_type, result.result, restrict=True, writable=True
        ).result
    call.results[0].replace_all_uses_with(product)
    call.erase()


def _erase_with_unused_inits(op: ir.Operation | None) -> None:
    """``op`` when nothing uses it, then the ``tensor.empty`` it wrote into when unused."""
    if op is None or any(len(list(result.uses)) for result in op.results):
        return
    init = defining_op(op.operands[len(op.operands) - 1])
    op.erase()
    if init is not None and init.name == "tensor.empty" and not len(list(init.results[0].uses)):
        init.erase()


def _callee(op: ir.Operation) -> str:
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


@dataclass(frozen=True)
class CallPrecompiledMatmulsPass(Pass):
    """Expand the placeholders into calls of the precompiled kernel, before bufferization."""

    argument: ClassVar[str] = "shlo-call-precompiled-matmuls"
    # The threads the kernel may run on.
    threads: int = 1

    def run(self, module: ir.Operation) -> None:
        calls = [op for op in ops_named(module, "func.call") if _callee(op).startswith(PLACEHOLDER)]
        if not calls:
            return
        _declare(module)
        for call in calls:
            _expand(call, self.threads)
        for op in list(module.regions[0].blocks[0].operations):
            op = op.operation
            if op.name == "func.func" and string_value(op.attributes["sym_name"]).startswith(
                PLACEHOLDER
            ):
                op.erase()
