"""``shlo.compile``: StableHLO in, a callable running native code for a target out.

Target-independent: the code is made and loaded by the backend registered for
the target (``shlo.backends``).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shlo import custom_calls, disk_cache
from shlo._mlir_compat import ir
from shlo.backends import Backend, CompiledFunction, backend_path, load_backend
from shlo.diagnostics import ShloError
from shlo.dtypes import numpy_dtype, storage_element_type
from shlo.frontend import (
    EntrySignature,
    default_max_bytes,
    inspect_entry,
    retry_verifying_each_pass,
)
from shlo.io import existing_path, module_to_bytecode, names_a_file
from shlo.ir_utils import tensor_type_text
from shlo.isolation import shared_worker

Source = str | bytes | os.PathLike[str] | ir.Module
Signature = tuple[tuple[tuple[int, ...], str], ...]


# Compiled signatures a shape-polymorphic Executable keeps, least recently used dropped first.
DEFAULT_CACHE_SIZE = 64


def _release_device_arguments(arrays: Sequence[Any]) -> None:
    """Give back the device arguments a call took (``Backend.device_argument``)."""
    for array in arrays:
        if not isinstance(array, np.ndarray):
            array.release()


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
        backend: str,
        options: Any,
        filename: str,
        *,
        timeout: float | None = None,
        max_bytes: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        lowered: Any = None,
    ) -> None:
        """``lowered``: the backend's code for a static entry, when the worker made it already."""
        _check_limits(max_bytes, cache_size)
        self.entry = entry
        # (shape with None for dynamic sizes, element type) per parameter.
        self.params = params
        self._module = module_bytecode
        self._isolate = isolate
        # The backend's import path: the worker imports it by that path too.
        self._backend_path = backend
        self._backend: Backend = load_backend(backend)
        self._options = options
        self._filename = filename
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._cache_size = cache_size
        self._compiled: OrderedDict[Signature, CompiledFunction] = OrderedDict()
        self._lock = threading.Lock()
        self._dtypes = [numpy_dtype(element_type) for _, element_type in params]
        # Fully static parameter shapes compare as one tuple.
        self._static_shapes = [None if None in shape else shape for shape, _ in params]
        self.is_dynamic = None in self._static_shapes
        # A static entry has one function: calls skip the signature lookup.
        self._static: CompiledFunction | None = None
        if not self.is_dynamic:
            signature = tuple((tuple(s), t) for s, t in params)
            self._static = self._load(signature, lowered)  # type: ignore[arg-type]

    @property
    def target(self) -> str:
        return self._backend.name

    @property
    def options(self) -> Any:
        """The backend's options: for the CPU, the ``CpuPipeline`` with its thread count."""
        return self._options

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
        try:
            results = function(arrays)
        finally:
            _release_device_arguments(arrays)
        return results[0] if len(results) == 1 else tuple(results)

    def _check_inputs(self, args: Sequence[Any]) -> list[Any]:
        """numpy arrays, and arguments in the backend's device memory (see
        ``Backend.device_argument``), which the caller releases after the call."""
        if len(args) != len(self.params):
            raise ValueError(f"@{self.entry} takes {len(self.params)} argument(s), got {len(args)}")
        arrays: list[Any] = []
        try:
            for index, arg in enumerate(args):
                device = None if type(arg) is np.ndarray else self._backend.device_argument(arg)
                array = device if device is not None else arg
                if device is None and type(arg) is not np.ndarray:
                    array = np.asarray(arg)
                if array.dtype != self._dtypes[index] or not self._shape_fits(index, array):
                    if device is not None:
                        device.release()
                    self._raise_mismatch(index, array)
                if device is None and not array.flags.c_contiguous:
                    array = np.ascontiguousarray(array)
                arrays.append(array)
        except BaseException:
            _release_device_arguments(arrays)
            raise
        return arrays

    def _shape_fits(self, index: int, array: Any) -> bool:
        static = self._static_shapes[index]
        if static is not None:
            return array.shape == static
        shape = self.params[index][0]
        return len(array.shape) == len(shape) and all(
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

    def _load(self, signature: Signature, lowered: Any = None) -> CompiledFunction:
        with self._lock:
            if signature in self._compiled:
                return self._compiled[signature]
            if lowered is not None:
                function = self._compiled[signature] = self._backend.load(lowered)
                return function
            arg_types = [tensor_type_text(shape, t) for shape, t in signature]
            # Read here: the worker's environment is a copy from its start.
            max_bytes = self._max_bytes or default_max_bytes()
            backend = self._backend
            key = None
            function = None
            if disk_cache.cache_dir() is not None:
                handlers = [
                    f"{t}={h}" for t, h in sorted(custom_calls.user_registrations().items())
                ]
                key = disk_cache.code_key(
                    self._module,
                    self.entry,
                    arg_types,
                    [backend.name, *backend.cache_fields(self._options), *handlers],
                    max_bytes,
                )
                function = disk_cache.load(
                    "code",
                    key,
                    lambda meta, code: backend.load_cached(meta, code, signature),
                )
            if function is None:
                backend.prepare_to_load()
                request = {
                    "source": self._module,
                    "entry": self.entry,
                    "arg_types": arg_types if self.is_dynamic else None,
                    "options": self._options,
                    "filename": self._filename,
                    "max_bytes": max_bytes,
                }
                lowered = (
                    shared_worker().call(
                        "lower",
                        timeout=self._timeout,
                        backend=self._backend_path,
                        custom_calls=custom_calls.user_registrations(),
                        **request,
                    )
                    if self._isolate
                    else retry_verifying_each_pass(lambda: backend.lower(**request))
                )
                function = backend.load(lowered)
                cacheable = backend.cacheable(lowered) if key is not None else None
                if cacheable is not None:
                    disk_cache.store("code", key, *cacheable)
            self._compiled[signature] = function
            while len(self._compiled) > self._cache_size:
                self._compiled.popitem(last=False)
            return function


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


def _program(source: Source | bytearray) -> tuple[str | bytes, str]:
    """What the worker reads: a file's path, or the program's bytes; and its file name."""
    if names_a_file(source):
        path = existing_path(source)  # type: ignore[arg-type]
        return path, path
    if isinstance(source, ir.Module):
        # Already parsed by the caller: the worker reads it back from bytecode.
        return module_to_bytecode(source), "<string>"
    # Text is never a file name from here on; "<string>" as the parser names it.
    return (source.encode() if isinstance(source, str) else bytes(source)), "<string>"


def compile(
    source: Source,
    target: str = "cpu",
    entry: str = "main",
    *,
    isolate: bool = True,
    pipeline: Any = None,
    threads: int | None = None,
    arch: str | None = None,
    flush_denormals: bool | None = None,
    timeout: float | None = None,
    max_bytes: int | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> Executable:
    """Compile ``entry`` of a StableHLO program for ``target`` ("cpu", "cuda", ...).

    ``source`` is StableHLO text, MLIR bytecode, a portable artifact, a path,
    a parsed module, or a ``jax.export.Exported`` (or its ``serialize()``
    bytes): that gives a ``shlo.jax.ExportedFunction``, called like the
    exported function with pytrees. With ``isolate`` (the default) parsing, passes and code
    generation run in a child process, so input that crashes them raises
    ShloError instead of killing the caller. Limits (see docs/security.md):
    ``timeout`` seconds per compilation (default SHLO_COMPILE_TIMEOUT or 600),
    ``max_bytes`` per array (default SHLO_MAX_BYTES or 16 GiB), and
    ``cache_size`` shape signatures kept by a shape-polymorphic Executable.
    On the CPU, the generated code runs on ``threads`` threads: by default
    the pipeline's (a ``CpuPipeline``), else SHLO_THREADS, else every core
    this process may use. ``flush_denormals=True`` computes subnormal
    floats as zero, as XLA's CPU code does (and faster on x86); by default
    the pipeline's, else IEEE arithmetic, as StableHLO specifies. For CUDA,
    ``arch`` names the GPU (e.g. "sm_90").
    With SHLO_CACHE_DIR set, compiled code is kept in that directory and
    reused by later compilations, in any process (``shlo.disk_cache``).
    """
    backend = backend_path(target)  # an unknown target fails here, listing the known ones
    implementation = load_backend(backend)
    options = implementation.options(pipeline, threads, arch, flush_denormals)
    from shlo import jax as shlo_jax

    exported = source if shlo_jax.is_exported(source) else shlo_jax.deserialize_exported(source)
    if exported is not None:
        # Called like the exported function: pytrees in and out, kept leaves,
        # platform index (shlo.jax.ExportedFunction).
        keywords = {
            "isolate": isolate,
            "pipeline": pipeline,
            "threads": threads,
            "arch": arch,
            "flush_denormals": flush_denormals,
        }
        limits = {"timeout": timeout, "max_bytes": max_bytes, "cache_size": cache_size}
        return shlo_jax.ExportedFunction(exported, target, **keywords, **limits)  # type: ignore[return-value]
    _check_limits(max_bytes, cache_size)
    source, filename = _program(source)
    lowered = None
    if isolate and disk_cache.cache_dir() is None:
        implementation.prepare_to_load()
        # A static entry's code comes with its signature, from one request.
        signature, lowered = shared_worker().call(
            "inspect_and_lower",
            timeout=timeout,
            backend=backend,
            source=source,
            entry=entry,
            filename=filename,
            options=options,
            max_bytes=max_bytes or default_max_bytes(),
            custom_calls=custom_calls.user_registrations(),
        )
    else:
        signature = _inspect(source, entry, filename, isolate, timeout)
    params = []
    for index, (shape, element) in enumerate(signature.params):
        storage = storage_element_type(element)
        if storage is None:
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
        backend,
        options,
        filename,
        timeout=timeout,
        max_bytes=max_bytes,
        cache_size=cache_size,
        lowered=lowered,
    )


def prepare(target: str = "cpu") -> None:
    """Get ready, in the background, for a compilation for ``target`` to come.

    The worker process starts (and for the CPU warms up) and the backend
    prepares loading, while the caller goes on; ``shlo.jax.jit`` calls it
    when it decorates, ``shlo.torch.compile`` before it exports. A process's
    first compilation then takes about what later ones take.
    """
    backend = load_backend(backend_path(target))
    shared_worker().prestart(warm_up=backend.name == "cpu")
    backend.prepare_to_load()


def _check_limits(max_bytes: int | None, cache_size: int) -> None:
    if cache_size < 1:
        raise ValueError(f"cache_size must be at least 1, got {cache_size}")
    if max_bytes is not None and max_bytes < 1:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")


def emit(
    source: Source,
    target: str = "cpu",
    kind: str | None = None,
    entry: str = "main",
    *,
    arch: str | None = None,
    arg_types: Sequence[str] | None = None,
    flush_denormals: bool | None = None,
    timeout: float | None = None,
) -> bytes:
    """The code ``target`` generates for ``entry``, as ``kind`` (the target's first by default).

    What ``shlo-compile`` writes: e.g. "object" for the CPU, "ptx" or
    "cubin" for CUDA. ``arg_types`` (tensor types) make a dynamic entry
    static; ``flush_denormals`` is as ``compile`` takes it. It runs in the
    worker and needs no device.
    """
    path = backend_path(target)
    backend = load_backend(path)
    kind = kind or backend.emit_kinds[0]
    if kind not in backend.emit_kinds:
        raise ValueError(f"--emit={kind}: target {target} emits {', '.join(backend.emit_kinds)}")
    source, filename = _program(source)
    return shared_worker().call(
        "emit",
        custom_calls=custom_calls.user_registrations(),
        timeout=timeout,
        backend=path,
        kind=kind,
        source=source,
        entry=entry,
        arg_types=list(arg_types) if arg_types is not None else None,
        options=backend.options(None, None, arch, flush_denormals),
        filename=filename,
        max_bytes=default_max_bytes(),
    )
