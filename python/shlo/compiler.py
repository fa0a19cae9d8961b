"""``shlo.compile``: StableHLO in, a callable running native CPU code out."""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ir
from shlo.cpu_pipeline import CpuPipeline
from shlo.diagnostics import ShloError
from shlo.dtypes import mlir_element_type, numpy_dtype
from shlo.io import existing_path, module_to_bytecode, names_a_file
from shlo.isolation import shared_worker
from shlo.lowering import (
    EntrySignature,
    Lowered,
    default_max_bytes,
    inspect_entry,
    lower_to_object,
)
from shlo.runtime import ArrayType, LoadedFunction, linker

Source = str | bytes | os.PathLike[str] | ir.Module
Signature = tuple[tuple[tuple[int, ...], str], ...]


# Compiled signatures a shape-polymorphic Executable keeps, least recently used dropped first.
DEFAULT_CACHE_SIZE = 64


class Executable:
    """A compiled entry function. Call it with numpy arrays.

    A shape-polymorphic entry is specialized to the shapes of each call, and
    the native code is cached by shape and dtype signature (the
    ``cache_size`` most recently used ones).
    """

    def __init__(
        self,
        module_bytecode: bytes,
        entry: str,
        params: list[tuple[tuple[int | None, ...], str]],
        isolate: bool,
        pipeline: CpuPipeline,
        filename: str,
        *,
        timeout: float | None = None,
        max_bytes: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if cache_size < 1:
            raise ValueError(f"cache_size must be at least 1, got {cache_size}")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.entry = entry
        # (shape with None for dynamic sizes, element type) per parameter.
        self.params = params
        self._module = module_bytecode
        self._isolate = isolate
        self._pipeline = pipeline
        self._filename = filename
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._cache_size = cache_size
        self._compiled: OrderedDict[Signature, LoadedFunction] = OrderedDict()
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
        """The ((shape, element type), ...) signatures in the cache, least recently used first."""
        return list(self._compiled)

    def __call__(self, *args: Any) -> Any:
        arrays = self._check_inputs(args)
        if self._static is not None:
            function = self._static
        else:
            signature = tuple((a.shape, t) for a, (_, t) in zip(arrays, self.params))
            function = self._compiled.get(signature) or self._load(signature)
            try:
                self._compiled.move_to_end(signature)
            except KeyError:  # evicted meanwhile by another thread
                pass
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
                # Read here: the worker's environment is a copy from its start.
                "max_bytes": self._max_bytes or default_max_bytes(),
            }
            lowered: Lowered = (
                shared_worker().call("lower", timeout=self._timeout, **request)
                if self._isolate
                else lower_to_object(**request)
            )
            code = lowered.object_code if linker() is not None else lowered.llvm_bytecode
            function = LoadedFunction(code, lowered.input_types, lowered.result_types)
            self._compiled[signature] = function
            while len(self._compiled) > self._cache_size:
                self._compiled.popitem(last=False)
            return function


# Quantized values travel as their storage integers: i8, u8, i16, ...
# (with an optional storage range, as in u8<0:255>).
_QUANTIZED = re.compile(r"^!quant\.(?:uniform|any|calibrated)<([iu])(\d+)")


def _storage_element_type(element: str) -> str:
    """The element type numpy passes: quantized values travel as their storage integers."""
    quantized = _QUANTIZED.match(element)
    if quantized:
        return f"{'ui' if quantized.group(1) == 'u' else 'i'}{quantized.group(2)}"
    return mlir_element_type(element)


def compile(
    source: Source,
    target: str = "cpu",
    entry: str = "main",
    *,
    isolate: bool = True,
    pipeline: CpuPipeline | None = None,
    timeout: float | None = None,
    max_bytes: int | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> Executable:
    """Compile ``entry`` of a StableHLO program for ``target`` ("cpu").

    ``source`` is StableHLO text, MLIR bytecode, a portable artifact, a path or
    a parsed module. With ``isolate`` (the default) parsing, passes and code
    generation run in a child process, so input that crashes them raises
    ShloError instead of killing the caller. Limits (see docs/security.md):
    ``timeout`` seconds per compilation (default SHLO_COMPILE_TIMEOUT or 600),
    ``max_bytes`` per array (default SHLO_MAX_BYTES or 16 GiB), and
    ``cache_size`` shape signatures kept by a shape-polymorphic Executable.
    """
    if target != "cpu":
        raise ValueError(f"unknown target {target!r}; expected 'cpu'")
    filename = "<string>"  # as the parser names text and bytecode
    if names_a_file(source):
        source = filename = existing_path(source)  # type: ignore[arg-type]
    elif isinstance(source, str):
        source = source.encode()  # text, never a file name, from here on
    elif isinstance(source, ir.Module):
        # Already parsed by the caller: the worker reads it back from bytecode.
        source = module_to_bytecode(source)
    pipeline = pipeline or CpuPipeline()
    request = {"source": source, "entry": entry, "filename": filename}
    signature: EntrySignature = (
        shared_worker().call("inspect", timeout=timeout, **request)
        if isolate
        else inspect_entry(**request)
    )
    params = []
    for index, (shape, element) in enumerate(signature.params):
        try:
            storage = _storage_element_type(element)
            numpy_dtype(storage)
        except ValueError:
            raise ShloError(
                f"argument {index} of @{entry} has element type {element}, "
                "which numpy arrays cannot hold"
            ) from None
        params.append((shape, storage))
    return Executable(
        signature.module_bytecode,
        entry,
        params,
        isolate,
        pipeline,
        filename,
        timeout=timeout,
        max_bytes=max_bytes,
        cache_size=cache_size,
    )
