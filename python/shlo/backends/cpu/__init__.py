"""The CPU backend: linalg -> tiled, vectorized, threaded loops -> LLVM -> native code.

``pipeline`` holds its stages and code-generation strategies,
``codegen_recipes`` the transform-dialect recipes per op kind, ``lowering``
runs them (in the worker), and ``runtime`` links and calls the object code.
"""

from __future__ import annotations

import dataclasses
import platform
from collections.abc import Sequence
from typing import Any

from shlo.backends import Backend, CompiledFunction
from shlo.backends.cpu.pipeline import CpuPipeline, default_threads
from shlo.dtypes import numpy_dtype


def _check_threads(threads: object, what: str) -> int:
    # bool is an int, but threads=True is a mistake.
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{what} must be a positive integer, got {threads!r}")
    return threads


def resolve_pipeline(
    pipeline: CpuPipeline | None, threads: int | None, flush_denormals: bool | None = None
) -> CpuPipeline:
    """``pipeline`` (default ``CpuPipeline()``) with a thread count.

    ``threads`` when given, else the pipeline's own, else ``default_threads()``.
    ``flush_denormals``, when given, replaces the pipeline's.
    """
    pipeline = pipeline or CpuPipeline()
    if flush_denormals is not None:
        if not isinstance(flush_denormals, bool):
            raise ValueError(f"flush_denormals must be True or False, got {flush_denormals!r}")
        pipeline = dataclasses.replace(pipeline, flush_denormals=flush_denormals)
    if pipeline.flush_denormals and platform.machine().lower() not in ("x86_64", "amd64"):
        raise ValueError(
            f"flush_denormals=True sets x86-64's MXCSR; this host is {platform.machine()}"
        )
    if threads is not None:
        count = _check_threads(threads, "threads")
    elif pipeline.threads is not None:
        count = _check_threads(pipeline.threads, "pipeline.threads")
    else:
        count = default_threads()
    return dataclasses.replace(pipeline, threads=count)


def _code_kind() -> str:
    """Object code when a C compiler can link it, else LLVM-dialect bytecode for the JIT."""
    from shlo.backends.cpu.runtime import linker

    return "object" if linker() is not None else "llvm"


class CpuBackend(Backend):
    name = "cpu"
    # An ELF object exporting shlo_call-compatible @main, or the LLVM dialect module as text.
    emit_kinds = ("object", "llvm-mlir")

    def options(
        self,
        pipeline: Any,
        threads: int | None,
        arch: str | None,
        flush_denormals: bool | None = None,
    ) -> CpuPipeline:
        if arch is not None:
            raise ValueError(f"arch={arch!r} is for target='cuda'; the CPU backend takes none")
        if pipeline is not None and not isinstance(pipeline, CpuPipeline):
            raise TypeError(f"target='cpu' takes a CpuPipeline, got {type(pipeline).__name__}")
        return resolve_pipeline(pipeline, threads, flush_denormals)

    def cache_fields(self, options: CpuPipeline) -> list[str]:
        from shlo.backends.cpu import precompiled
        from shlo.backends.cpu.codegen_recipes import l2_cache

        # The L2 cache's geometry chooses some matmuls' tiles (matmul_k_tile).
        fields = [*options.elements(), repr(options), _code_kind(), repr(l2_cache())]
        if options.calls_precompiled_kernels:
            # Code compiled to call the kernels assumes their calling convention.
            fields.append(precompiled.source_digest())
        return fields

    def lower(
        self,
        source: bytes | str,
        entry: str,
        arg_types: Sequence[str] | None,
        options: CpuPipeline,
        filename: str,
        max_bytes: int,
    ) -> Any:
        from shlo.backends.cpu.lowering import lower_to_object

        return lower_to_object(source, entry, arg_types, options, filename, max_bytes)

    def prepare_to_load(self) -> None:
        if _code_kind() == "object":
            from shlo.backends.cpu.runtime import prepare_linking_in_background

            prepare_linking_in_background()

    def load(self, lowered: Any) -> CompiledFunction:
        from shlo.backends.cpu.runtime import LoadedFunction

        code = lowered.object_code if _code_kind() == "object" else lowered.llvm_bytecode
        return LoadedFunction(code, lowered.input_types, lowered.result_types)

    def emit(self, kind: str, lowered: Any) -> bytes:
        if kind == "object":
            from shlo.backends.cpu import precompiled
            from shlo.backends.cpu.runtime import linker, single_object

            code = lowered.object_code
            # Code compiled ahead of time carries the kernels it calls (weak symbols).
            kernels = [precompiled.object_path(linker())] if precompiled.uses_kernels(code) else []
            return single_object(code, kernels)
        from shlo.backends.cpu.lowering import joined_llvm_bytecode
        from shlo.io import bytecode_to_text

        llvm = lowered.llvm_bytecode or joined_llvm_bytecode(lowered.llvm_shards)
        return bytecode_to_text(llvm)

    def cacheable(self, lowered: Any) -> tuple[dict[str, Any], bytes]:
        code = lowered.object_code if _code_kind() == "object" else lowered.llvm_bytecode
        return {"inputs": lowered.input_types, "results": lowered.result_types}, code

    def load_cached(
        self, metadata: Any, code: bytes, signature: Sequence[tuple[tuple[int, ...], str]] = ()
    ) -> CompiledFunction | None:
        from shlo.backends.cpu.runtime import LoadedFunction

        function = LoadedFunction(code, metadata["inputs"], metadata["results"])
        fits = [(t.shape, t.dtype) for t in function.inputs] == [
            (tuple(shape), numpy_dtype(t)) for shape, t in signature
        ]
        return function if fits else None
