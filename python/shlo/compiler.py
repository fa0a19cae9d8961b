"""``shlo.compile``: StableHLO in, a callable running native CPU code out."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ir
from shlo.cpu_pipeline import CpuPipeline
from shlo.diagnostics import ShloError
from shlo.dtypes import mlir_element_type, numpy_dtype
from shlo.io import load_module, module_to_bytecode
from shlo.isolation import shared_worker
from shlo.lowering import Lowered, function_types, lower_to_llvm
from shlo.runtime import ArrayType, LoadedFunction

Source = str | bytes | os.PathLike[str] | ir.Module
Signature = tuple[tuple[tuple[int, ...], str], ...]


class Executable:
    """A compiled entry function. Call it with numpy arrays.

    A shape-polymorphic entry is specialized to the shapes of each call, and
    the native code is cached by shape and dtype signature.
    """

    def __init__(
        self,
        module_bytecode: bytes,
        entry: str,
        params: list[tuple[tuple[int | None, ...], str]],
        isolate: bool,
        pipeline: CpuPipeline,
        filename: str,
    ) -> None:
        self.entry = entry
        # (shape with None for dynamic sizes, element type) per parameter.
        self.params = params
        self._module = module_bytecode
        self._isolate = isolate
        self._pipeline = pipeline
        self._filename = filename
        self._compiled: dict[Signature, LoadedFunction] = {}
        self._lock = threading.Lock()
        self._dtypes = [numpy_dtype(element_type) for _, element_type in params]
        # Fully static parameter shapes compare as one tuple.
        self._static_shapes = [None if None in shape else shape for shape, _ in params]
        self.is_dynamic = None in self._static_shapes
        # A static entry has one function: calls skip the signature lookup.
        self._static: LoadedFunction | None = None
        if not self.is_dynamic:
            self._static = self._load(tuple((tuple(s), t) for s, t in params))  # type: ignore[misc]

    @property
    def compiled_signatures(self) -> list[Signature]:
        """The ((shape, element type), ...) signatures compiled so far, in order."""
        return list(self._compiled)

    def __call__(self, *args: Any) -> Any:
        arrays = self._check_inputs(args)
        if self._static is not None:
            function = self._static
        else:
            signature = tuple((a.shape, t) for a, (_, t) in zip(arrays, self.params))
            function = self._compiled.get(signature) or self._load(signature)
        results = function(arrays)
        return results[0] if len(results) == 1 else tuple(results)

    def _check_inputs(self, args: Sequence[Any]) -> list[np.ndarray]:
        if len(args) != len(self.params):
            raise ValueError(f"@{self.entry} takes {len(self.params)} argument(s), got {len(args)}")
        arrays = []
        for index, arg in enumerate(args):
            array = arg if type(arg) is np.ndarray else np.asarray(arg)
            static = self._static_shapes[index]
            if array.dtype != self._dtypes[index] or (
                array.shape != static if static is not None else not self._shape_fits(index, array)
            ):
                self._raise_mismatch(index, array)
            arrays.append(array if array.flags.c_contiguous else np.ascontiguousarray(array))
        return arrays

    def _shape_fits(self, index: int, array: np.ndarray) -> bool:
        shape = self.params[index][0]
        return array.ndim == len(shape) and all(
            want is None or want == got for want, got in zip(shape, array.shape)
        )

    def _raise_mismatch(self, index: int, array: np.ndarray) -> None:
        shape, element_type = self.params[index]
        expected = self._dtypes[index]
        if array.dtype != expected:
            raise ValueError(
                f"argument {index} of @{self.entry}: expected dtype {expected.name} "
                f"({element_type}), got {array.dtype.name}"
            )
        wanted = "x".join("?" if d is None else str(d) for d in shape) or "scalar"
        raise ValueError(
            f"argument {index} of @{self.entry}: expected shape {wanted}, "
            f"got {'x'.join(map(str, array.shape)) or 'scalar'}"
        )

    def _load(self, signature: Signature) -> LoadedFunction:
        with self._lock:
            if signature in self._compiled:
                return self._compiled[signature]
            arg_types = (
                [str(ArrayType(shape, t)) for shape, t in signature] if self.is_dynamic else None
            )
            request = {
                "source": self._module,
                "entry": self.entry,
                "arg_types": arg_types,
                "pipeline": self._pipeline,
                "filename": self._filename,
            }
            lowered: Lowered = (
                shared_worker().call("lower", **request)
                if self._isolate
                else lower_to_llvm(**request)
            )
            function = LoadedFunction(
                lowered.llvm_bytecode, lowered.input_types, lowered.result_types
            )
            self._compiled[signature] = function
            return function


_QUANTIZED = re.compile(r"^!quant\.uniform<(u?)i(\d+)")


def _storage_element_type(element: str) -> str:
    """The element type numpy passes: quantized values travel as their storage integers."""
    quantized = _QUANTIZED.match(element)
    if quantized:
        return f"{'ui' if quantized.group(1) else 'i'}{quantized.group(2)}"
    return mlir_element_type(element)


def compile(
    source: Source,
    target: str = "cpu",
    entry: str = "main",
    *,
    isolate: bool = True,
    pipeline: CpuPipeline | None = None,
) -> Executable:
    """Compile ``entry`` of a StableHLO program for ``target`` ("cpu").

    ``source`` is StableHLO text, MLIR bytecode, a portable artifact, a path or
    a parsed module. With ``isolate`` (the default) the passes run in a child
    process, so one that aborts raises ShloError instead of killing the caller.
    """
    if target != "cpu":
        raise ValueError(f"unknown target {target!r}; expected 'cpu'")
    module = load_module(source)
    filename = (
        str(source)
        if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source)
        else "<module>"
    )
    inputs, _ = function_types(module, entry)
    params = []
    for index, type_ in enumerate(inputs):
        if not isinstance(type_, ir.RankedTensorType):
            raise ShloError(
                f"argument {index} of @{entry} has type {type_}; expected a ranked tensor"
            )
        shape = tuple(
            None if type_.is_dynamic_dim(d) else type_.shape[d] for d in range(type_.rank)
        )
        params.append((shape, _storage_element_type(str(type_.element_type))))
    return Executable(
        module_to_bytecode(module), entry, params, isolate, pipeline or CpuPipeline(), filename
    )
