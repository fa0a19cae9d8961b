"""The CUDA backend: linalg -> GPU dialect -> NVVM -> PTX and cubins, run by the CUDA driver.

``pipeline`` lowers the shared linalg stage's output to kernels and a host
module, ``ptx`` makes PTX (llvmlite's NVPTX target, libdevice) and cubins
(ptxas), ``driver`` wraps the CUDA driver (and a fake one for tests), and
``runtime`` gives the host module the ``mgpu*`` functions it calls.

Compiling needs no GPU: the lowering runs anywhere the ``cuda`` extra is
installed. Only calling the compiled function needs a device and its driver.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shlo.backends import Backend, CompiledFunction
from shlo.backends.cuda.driver import INSTALL_HINT
from shlo.backends.cuda.ptx import SUPPORTED_ARCHS

DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class CudaOptions:
    """What decides the CUDA code: the GPU architecture PTX and cubins are made for."""

    arch: str = DEFAULT_ARCH


class DeviceFunction:
    """A compiled entry that acquires the CUDA driver on its first call.

    So compiling works on a machine without a GPU, and only a call raises
    the driver's error.
    """

    def __init__(self, lowered: Any) -> None:
        self._lowered = lowered
        self._function: Any = None
        self._lock = threading.Lock()

    def __call__(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self._function is None:
            with self._lock:
                if self._function is None:
                    self._function = _load(self._lowered)
        return self._function(arrays)


def _load(lowered: Any) -> Any:
    # Imported here: cuda-python is only needed to run, not to compile.
    from shlo.backends.cuda.driver import available_driver
    from shlo.backends.cuda.runtime import CudaFunction

    driver = available_driver()
    # The cubin was made for one architecture: use it on that device, else JIT the PTX.
    cubins = {}
    if lowered.cubin is not None and driver.architecture() == lowered.arch:
        cubins[lowered.ptx.encode()] = lowered.cubin
    return CudaFunction(
        lowered.host_llvm_bytecode,
        lowered.input_types,
        lowered.result_types,
        driver,
        cubins=cubins,
        host_accessed=lowered.host_accessed,
        host_reads_memory=lowered.host_reads_memory,
    )


class CudaBackend(Backend):
    name = "cuda"
    # PTX (any device JIT-compiles it), the cubin for --arch, or the host module as MLIR text.
    emit_kinds = ("ptx", "cubin", "host-mlir")

    def options(
        self,
        pipeline: Any,
        threads: int | None,
        arch: str | None,
        flush_denormals: bool | None = None,
    ) -> CudaOptions:
        if pipeline is not None:
            raise ValueError("target='cuda' takes no pipeline")
        if flush_denormals:
            raise ValueError("flush_denormals= is for target='cpu'")
        if threads is not None:
            raise ValueError("threads= is for target='cpu'; a GPU kernel's threads are its own")
        arch = DEFAULT_ARCH if arch is None else arch
        if arch not in SUPPORTED_ARCHS:
            raise ValueError(f"unknown arch {arch!r}; expected one of {', '.join(SUPPORTED_ARCHS)}")
        return CudaOptions(arch)

    def cache_fields(self, options: CudaOptions) -> list[str]:
        return [repr(options)]

    def lower(
        self,
        source: bytes | str,
        entry: str,
        arg_types: Sequence[str] | None,
        options: CudaOptions,
        filename: str,
        max_bytes: int,
    ) -> Any:
        from shlo.backends.cuda.pipeline import lower_to_cuda, prepare_for_cuda

        module, entry_types = prepare_for_cuda(source, entry, arg_types, filename, max_bytes)
        return lower_to_cuda(module, options.arch, filename, entry_types)

    def load(self, lowered: Any) -> CompiledFunction:
        return DeviceFunction(lowered)

    def device_argument(self, value: Any) -> Any | None:
        from shlo.backends.cuda.dlpack import ImportedTensor, is_device_array

        return ImportedTensor(value) if is_device_array(value) else None

    def emit(self, kind: str, lowered: Any) -> bytes:
        if kind == "ptx":
            return lowered.ptx.encode()
        if kind == "cubin":
            if lowered.cubin is None:
                if not lowered.kernels:
                    raise ValueError("no cubin: the program has no kernel")
                raise ValueError(f"no cubin: ptxas was not found; {INSTALL_HINT}")
            return lowered.cubin
        from shlo.io import bytecode_to_text

        return bytecode_to_text(lowered.host_llvm_bytecode)
