"""Calling JIT-compiled entry functions with numpy arrays.

The entry function is called through the JIT's packed wrapper ``_mlir_main``,
which takes an array of pointers to the lowered arguments. Each memref
becomes (allocated pointer, aligned pointer, offset, sizes..., strides...),
inputs first, then one out-parameter per result. Shapes are static, so all
but the data pointers are fixed when the function is loaded, and a call costs
one ctypes call plus one ``np.empty`` per result.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from shlo._mlir_compat import ExecutionEngine, ir, new_context
from shlo.dtypes import numpy_dtype

# Sub-byte integers are stored one per byte; LLVM leaves the unused high bits
# of a stored value undefined, so results are sign- or zero-extended here.
_SUB_BYTE_BITS = {"i2": 2, "i4": 4, "ui2": 2, "ui4": 4}


@dataclass(frozen=True)
class ArrayType:
    """A static tensor type as numpy sees it."""

    shape: tuple[int, ...]
    element_type: str

    @property
    def dtype(self) -> np.dtype[Any]:
        return numpy_dtype(self.element_type)

    @staticmethod
    def parse(text: str, context: ir.Context) -> ArrayType:
        tensor_type = ir.RankedTensorType(ir.Type.parse(text, context))
        return ArrayType(tuple(tensor_type.shape), str(tensor_type.element_type))

    def __str__(self) -> str:
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + self.element_type + ">"


def _memref_tail(shape: tuple[int, ...]) -> list[int]:
    """Offset, sizes and row-major strides (in elements) of a contiguous array."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * max(shape[axis + 1], 1)
    return [0, *shape, *strides]


def _fix_sub_byte(array: np.ndarray, element_type: str) -> np.ndarray:
    bits = _SUB_BYTE_BITS.get(element_type)
    if bits is None:
        return array
    raw = array.view(np.uint8) & ((1 << bits) - 1)
    if not element_type.startswith("u"):
        raw = np.where(raw >= (1 << (bits - 1)), raw | (0xFF << bits) & 0xFF, raw).astype(np.uint8)
    return raw.view(array.dtype)


class LoadedFunction:
    """A JIT-compiled entry function with static input and result types."""

    def __init__(
        self,
        llvm_bytecode: bytes,
        inputs: list[ArrayType],
        results: list[ArrayType],
        opt_level: int = 2,
    ) -> None:
        self.inputs = inputs
        self.results = results
        self._context = new_context()
        module = ir.Module.parse(llvm_bytecode, self._context)
        self._engine = ExecutionEngine(module, opt_level=opt_level)
        # raw_lookup finds the packed wrapper: void _mlir_main(void **args).
        address = self._engine.raw_lookup("main")
        if not address:
            raise RuntimeError("the JIT has no symbol main")
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._tails = [_memref_tail(t.shape) for t in [*inputs, *results]]
        self._arity = sum(2 + len(tail) for tail in self._tails)
        self._values_type = ctypes.c_int64 * self._arity
        self._pointers_type = ctypes.c_void_p * self._arity

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run on C-contiguous arrays of the input types; returns new result arrays."""
        outputs = [np.empty(t.shape, t.dtype) for t in self.results]
        flat: list[int] = []
        for array, tail in zip([*arrays, *outputs], self._tails):
            pointer = array.ctypes.data
            flat += [pointer, pointer, *tail]
        values = self._values_type(*flat)
        base = ctypes.addressof(values)
        pointers = self._pointers_type(*range(base, base + 8 * self._arity, 8))
        self._function(ctypes.addressof(pointers))
        return [_fix_sub_byte(out, t.element_type) for out, t in zip(outputs, self.results)]
