"""shlo-pack-entry-arguments: @main takes one pointer to an array of data pointers.

Ours because upstream is missing it: ``convert-func-to-llvm`` passes each
memref argument of a public function as a whole descriptor (allocated and
aligned pointer, offset, sizes, strides), so a program with 150 parameters
has a ~1,000-argument entry, and the call from the JIT's packed wrapper stores
most of them on the stack in one basic block, where LLVM's store merging is
quadratic: 2.5 of GPT-2's 3.8 s of code generation. The arguments of @main
are static, identity-layout buffers, so everything but the data pointer is a
constant. This pass gives @main a single ``!llvm.ptr`` argument, loads the
i-th data pointer from it, and rebuilds each descriptor from constants.

  func.func @main(%a: memref<4xf32>, %out: memref<4xf32>) { ... }
  ==>
  func.func @main(%pointers: !llvm.ptr) {
    %p0 = llvm.load %pointers : !llvm.ptr -> !llvm.ptr   (and %p1 at index 1)
    %a = unrealized_conversion_cast (descriptor of %p0) : ... to memref<4xf32>
    ...
  }

The runtime passes the data pointers of the inputs, then of the results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import defined_function, llvm_integer
from shlo.pass_framework import Pass

ENTRY = "main"


def _insert(descriptor: ir.Value, value: ir.Value, position: list[int]) -> ir.Value:
    return ir.Operation.create(
        "llvm.insertvalue",
        results=[descriptor.type],
        operands=[descriptor, value],
        attributes={"position": ir.DenseI64ArrayAttr.get(position)},
    ).result


def _strides(shape: list[int]) -> list[int]:
    strides, stride = [], 1
    for size in reversed(shape):
        strides.append(stride)
        stride *= size
    return strides[::-1]


def _descriptor(pointer: ir.Value, type_: ir.MemRefType) -> ir.Value:
    """The memref descriptor of a static identity-layout ``type_`` whose data is at ``pointer``."""
    shape = list(type_.shape)
    i64 = ir.IntegerType.get_signless(64)
    fields = [pointer.type, pointer.type, i64]
    if shape:
        array = ir.Type.parse(f"!llvm.array<{len(shape)} x i64>")
        fields += [array, array]
    struct = ir.Type.parse("!llvm.struct<(" + ", ".join(str(t) for t in fields) + ")>")
    descriptor = ir.Operation.create("llvm.mlir.poison", results=[struct]).result
    descriptor = _insert(descriptor, pointer, [0])
    descriptor = _insert(descriptor, pointer, [1])
    descriptor = _insert(descriptor, llvm_integer(0), [2])
    for dim, (size, stride) in enumerate(zip(shape, _strides(shape))):
        descriptor = _insert(descriptor, llvm_integer(size), [3, dim])
        descriptor = _insert(descriptor, llvm_integer(stride), [4, dim])
    return descriptor


def _packable(type_: ir.Type) -> bool:
    return (
        isinstance(type_, ir.MemRefType)
        and type_.has_static_shape
        and type_.affine_map == ir.AffineMap.get_identity(type_.rank)
        and type_.memory_space is None
    )


@dataclass(frozen=True)
class PackEntryArgumentsPass(Pass):
    """Give @main one argument, a pointer to the data pointers of its buffers."""

    argument: ClassVar[str] = "shlo-pack-entry-arguments"

    def run(self, module: ir.Operation) -> None:
        entry = defined_function(module, ENTRY)
        if entry is None:
            return
        function_type = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
        # Read once: each read of ``inputs`` builds the whole list (GPT-2: 150 arguments).
        inputs = function_type.inputs
        if function_type.results or not all(_packable(t) for t in inputs):
            raise ValueError(
                "shlo-pack-entry-arguments: @main must take static identity-layout "
                "memrefs and return nothing (run after bufferization)"
            )
        block = entry.regions[0].blocks[0]
        pointer = ir.Type.parse("!llvm.ptr")
        pointers = block.add_argument(pointer, entry.location)
        count = len(inputs)
        first = block.operations[0]
        with ir.InsertionPoint(first), entry.location:
            for index in range(count):
                slot = ir.Operation.create(
                    "llvm.getelementptr",
                    results=[pointer],
                    operands=[pointers],
                    attributes={
                        "rawConstantIndices": ir.DenseI32ArrayAttr.get([index]),
                        "elem_type": ir.TypeAttr.get(pointer),
                    },
                ).result
                data = ir.Operation.create("llvm.load", results=[pointer], operands=[slot]).result
                memref = ir.MemRefType(inputs[index])
                value = ir.Operation.create(
                    "builtin.unrealized_conversion_cast",
                    results=[memref],
                    operands=[_descriptor(data, memref)],
                ).result
                block.arguments[index].replace_all_uses_with(value)
        for _ in range(count):
            block.erase_argument(0)
        entry.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([pointer], []))
        for name in ("arg_attrs", "res_attrs"):
            if name in entry.attributes:
                del entry.attributes[name]
