"""``shlo.compile``: StableHLO in, a callable running native CPU code out."""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from shlo import disk_cache
from shlo._mlir_compat import ir
from shlo.cpu_pipeline import CpuPipeline, default_threads
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
            arg_types = [str(ArrayType(shape, t)) for shape, t in signature]
            # Read here: the worker's environment is a copy from its start.
            max_bytes = self._max_bytes or default_max_bytes()
            code_kind = "object" if linker() is not None else "llvm"
            key = None
            function = None
            if disk_cache.cache_dir() is not None:
                pipeline = [*self._pipeline.elements(), repr(self._pipeline)]
                key = disk_cache.code_key(
                    self._module,
                    self.entry,
                    arg_types,
                    pipeline,
                    code_kind,
                    max_bytes,
                )
                function = disk_cache.load("code", key, partial(_open_code, signature))
            if function is None:
                request = {
                    "source": self._module,
                    "entry": self.entry,
                    "arg_types": arg_types if self.is_dynamic else None,
                    "pipeline": self._pipeline,
                    "filename": self._filename,
                    "max_bytes": max_bytes,
                }
                lowered: Lowered = (
                    shared_worker().call("lower", timeout=self._timeout, **request)
                    if self._isolate
                    else lower_to_object(**request)
                )
                code = lowered.object_code if code_kind == "object" else lowered.llvm_bytecode
                function = LoadedFunction(code, lowered.input_types, lowered.result_types)
                if key is not None:
                    types = {"inputs": lowered.input_types, "results": lowered.result_types}
                    disk_cache.store("code", key, types, code)
            self._compiled[signature] = function
            while len(self._compiled) > self._cache_size:
                self._compiled.popitem(last=False)
            return function


def _open_code(signature: Signature, types: Any, code: bytes) -> LoadedFunction | None:
    """The function in a code entry of the disk cache; None unless it fits ``signature``."""
    function = LoadedFunction(code, types["inputs"], types["results"])
    fits = [(t.shape, t.dtype) for t in function.inputs] == [
        (tuple(shape), numpy_dtype(t)) for shape, t in signature
    ]
    return function if fits else None


def _open_inspection(meta: Any, module_bytecode: bytes) -> EntrySignature:
    """The EntrySignature in an inspection entry of the disk cache."""
    params = [(tuple(d if d is None else int(d) for d in shape), str(t)) for shape, t in meta]
    return EntrySignature(module_bytecode, params)


def _inspect(
    source: str | bytes, entry: str, filename: str, isolate: bool, timeout: float | None
) -> EntrySignature:
    """The module and parameters of ``entry`` of ``source`` (a path or the program's bytes).

    From the disk cache when it holds them, else from the worker.
    """
    request = {"source": source, "entry": entry, "filename": filename}
    key = None
    if disk_cache.cache_dir() is not None:
        disk_cache.max_cache_bytes()  # a bad SHLO_CACHE_MAX_BYTES fails before any work
        try:
            contents = source if isinstance(source, bytes) else Path(source).read_bytes()
        except OSError:  # the worker says what is wrong with the file
            contents = None
        if contents is not None:
            key = disk_cache.inspection_key(contents, entry, filename)
            cached = disk_cache.load("inspection", key, _open_inspection)
            if cached is not None:
                return cached
    signature: EntrySignature = (
        shared_worker().call("inspect", timeout=timeout, **request)
        if isolate
        else inspect_entry(**request)
    )
    if key is not None and (isinstance(source, bytes) or _unchanged(source, contents)):
        params = [[list(shape), element] for shape, element in signature.params]
        disk_cache.store("inspection", key, params, signature.module_bytecode)
    return signature


def _unchanged(path: str, contents: bytes | None) -> bool:
    """Whether the file at ``path`` still holds ``contents`` (the worker read it meanwhile)."""
    try:
        return Path(path).read_bytes() == contents
    except OSError:
        return False


def _check_threads(threads: object, what: str) -> int:
    # bool is an int, but threads=True is a mistake.
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{what} must be a positive integer, got {threads!r}")
    return threads


def resolve_pipeline(pipeline: CpuPipeline | None, threads: int | None) -> CpuPipeline:
    """``pipeline`` (default ``CpuPipeline()``) with a thread count.

    ``threads`` when given, else the pipeline's own, else ``default_threads()``.
    """
    pipeline = pipeline or CpuPipeline()
    if threads is not None:
        count = _check_threads(threads, "threads")
    elif pipeline.threads is not None:
        count = _check_threads(pipeline.threads, "pipeline.threads")
    else:
        count = default_threads()
    return dataclasses.replace(pipeline, threads=count)


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
    threads: int | None = None,
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
    The generated code runs on ``threads`` threads: by default the
    pipeline's, else SHLO_THREADS, else every core this process may use.
    With SHLO_CACHE_DIR set, compiled code is kept in that directory and
    reused by later compilations, in any process (``shlo.disk_cache``).
    """
    if target != "cpu":
        raise ValueError(f"unknown target {target!r}; expected 'cpu'")
    pipeline = resolve_pipeline(pipeline, threads)
    filename = "<string>"  # as the parser names text and bytecode
    if names_a_file(source):
        source = filename = existing_path(source)  # type: ignore[arg-type]
    elif isinstance(source, str):
        source = source.encode()  # text, never a file name, from here on
    elif isinstance(source, ir.Module):
        # Already parsed by the caller: the worker reads it back from bytecode.
        source = module_to_bytecode(source)
    signature = _inspect(source, entry, filename, isolate, timeout)
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
