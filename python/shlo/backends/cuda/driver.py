"""The CUDA driver as the runtime sees it: a small interface and two implementations.

``CudaDriver`` calls the real driver through cuda-python (``cuda.bindings.driver``).
``FakeDriver`` runs without a GPU, for tests: its memory is host memory, so the
host side of a program runs for real; it loads PTX text only, reads the
signature of each ``.entry`` from it, and records every kernel launch (name,
grid, block, shared memory and the parameter values read from the ``void**``
array) instead of running the kernel. A launch whose parameters do not match
the entry's signature raises, as a mismatch would make the real kernel read
garbage: the count is checked, and the sizes through where the host put each
value (its C struct of the arguments), so a size difference that alignment
padding absorbs, or one in the last parameter, goes unseen.

Handles (modules, functions, streams, events) and device pointers are plain
ints, the addresses the generated code passes around; 0 is null.
"""

from __future__ import annotations

import abc
import ctypes
import itertools
import os
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any

from shlo.diagnostics import ShloError

# What a machine without the cuda extra needs.
INSTALL_HINT = "install the cuda extra: pip install 'shlo[cuda]'"

Dim3 = tuple[int, int, int]

_ELF_MAGIC = b"\x7fELF"


class DriverError(ShloError):
    """A driver call failed: the CUDA error, or a launch the fake found inconsistent."""


class Driver(abc.ABC):
    """What the mgpu runtime functions need from a CUDA driver, for one device."""

    # Every allocation is aligned at least this much (cuMemAllocManaged's guarantee).
    ALLOCATION_ALIGNMENT = 256

    device_ordinal: int = 0

    def architecture(self) -> str | None:
        """The device's architecture as ``sm_XY``, None when unknown (a fake device)."""
        return None

    @abc.abstractmethod
    def load_module(self, image: bytes, jit_optimization_level: int | None = None) -> int:
        """Load a cubin or PTX ``image``; PTX is compiled at ``jit_optimization_level`` (0-4)."""

    @abc.abstractmethod
    def unload_module(self, module: int) -> None: ...

    @abc.abstractmethod
    def get_function(self, module: int, name: str) -> int:
        """The kernel ``name`` of ``module``."""

    @abc.abstractmethod
    def launch_kernel(
        self,
        function: int,
        grid: Dim3,
        block: Dim3,
        shared_bytes: int,
        stream: int,
        params: int,
        param_count: int,
    ) -> None:
        """Launch ``function``; ``params`` is the address of a ``void*[param_count]``
        whose i-th entry points at the value of the kernel's i-th parameter."""

    @abc.abstractmethod
    def create_stream(self) -> int: ...

    @abc.abstractmethod
    def synchronize_stream(self, stream: int) -> None: ...

    @abc.abstractmethod
    def destroy_stream(self, stream: int) -> None: ...

    @abc.abstractmethod
    def create_event(self) -> int: ...

    @abc.abstractmethod
    def record_event(self, event: int, stream: int) -> None: ...

    @abc.abstractmethod
    def synchronize_event(self, event: int) -> None: ...

    @abc.abstractmethod
    def destroy_event(self, event: int) -> None: ...

    @abc.abstractmethod
    def wait_event(self, stream: int, event: int) -> None:
        """Make later work on ``stream`` wait for ``event``."""

    @abc.abstractmethod
    def allocate_managed(self, size: int) -> int:
        """``size`` (> 0) bytes of managed memory, readable by the host and the device."""

    @abc.abstractmethod
    def allocate_device(self, size: int) -> int:
        """``size`` (> 0) bytes of device memory, which only kernels and copies reach."""

    @abc.abstractmethod
    def free(self, pointer: int) -> None:
        """Free what ``allocate_managed`` or ``allocate_device`` returned."""

    @abc.abstractmethod
    def copy_to_host(self, host: int, device: int, size: int) -> None:
        """Copy ``size`` bytes of device (or managed) memory to host memory, waiting for it."""

    @abc.abstractmethod
    def synchronize_context(self) -> None:
        """Wait for all work on the device in this context, other libraries' included."""

    @abc.abstractmethod
    def memcpy(self, destination: int, source: int, size: int, stream: int) -> None: ...

    @abc.abstractmethod
    def memset32(self, destination: int, value: int, count: int, stream: int) -> None: ...

    @abc.abstractmethod
    def memset16(self, destination: int, value: int, count: int, stream: int) -> None: ...


# --- The real driver -----------------------------------------------------------------------

_LIBCUDA = "libcuda.so.1"
_JIT_LOG_BYTES = 8192


class CudaDriver(Driver):
    """The CUDA driver through cuda-python, on the primary context of one device."""

    def __init__(self, device_ordinal: int = 0) -> None:
        from cuda.bindings import driver as cuda  # optional dependency

        self._cuda = cuda
        self.device_ordinal = device_ordinal
        self._check(cuda.cuInit(0), "cuInit")
        (count,) = self._check(cuda.cuDeviceGetCount(), "cuDeviceGetCount")
        if not 0 <= device_ordinal < count:
            raise DriverError(f"no CUDA device {device_ordinal}: {count} device(s) present")
        (self._device,) = self._check(cuda.cuDeviceGet(device_ordinal), "cuDeviceGet")
        (self._context,) = self._check(
            cuda.cuDevicePrimaryCtxRetain(self._device), "cuDevicePrimaryCtxRetain"
        )
        self._start_bookkeeping()

    def _start_bookkeeping(self) -> None:
        self._thread = threading.local()
        # Device memory by size, freed and kept for the next allocation of that size:
        # cuMemAlloc costs tens of microseconds and cuMemFree waits for the device.
        self._device_sizes: dict[int, int] = {}
        self._free_device: dict[int, list[int]] = {}
        self._pool_lock = threading.Lock()

    def architecture(self) -> str:
        attribute = self._cuda.CUdevice_attribute
        major, minor = (
            self._run("cuDeviceGetAttribute", which, self._device)
            for which in (
                attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            )
        )
        return f"sm_{major}{minor}"

    def close(self) -> None:
        """Release the primary context (once every module and buffer is gone)."""
        if self._context is not None:
            self.release_pool()
            self._check(self._cuda.cuDevicePrimaryCtxRelease(self._device), "release")
            self._context = None

    def _check(self, result: tuple[Any, ...], what: str) -> tuple[Any, ...]:
        """The values after the CUresult, or DriverError naming the CUDA error."""
        error, *values = result
        if error != self._cuda.CUresult.CUDA_SUCCESS:
            raise DriverError(f"{what} failed: {getattr(error, 'name', error)}")
        return tuple(values)

    def _run(self, name: str, *args: Any) -> Any:
        """``cuda.<name>(*args)`` in this driver's context: its one value, if any."""
        if self._context is None:
            raise DriverError("the CUDA driver is closed")
        # The generated code may call in from any thread, and the context is per
        # thread; other libraries on the device use the same primary context.
        if getattr(self._thread, "context", None) is not self._context:
            self._check(self._cuda.cuCtxSetCurrent(self._context), "cuCtxSetCurrent")
            self._thread.context = self._context
        values = self._check(getattr(self._cuda, name)(*args), name)
        return values[0] if values else None

    def load_module(self, image: bytes, jit_optimization_level: int | None = None) -> int:
        cuda = self._cuda
        if image.startswith(_ELF_MAGIC):
            return int(self._run("cuModuleLoadData", image))
        if not image.endswith(b"\0"):
            image += b"\0"  # the driver reads PTX up to a NUL
        log = bytearray(_JIT_LOG_BYTES)  # the driver writes the JIT's errors here
        option = cuda.CUjit_option
        options = [option.CU_JIT_ERROR_LOG_BUFFER, option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        values: list[Any] = [log, len(log)]
        if jit_optimization_level is not None:
            options.append(option.CU_JIT_OPTIMIZATION_LEVEL)
            values.append(jit_optimization_level)
        try:
            return int(self._run("cuModuleLoadDataEx", image, len(options), options, values))
        except DriverError as error:
            detail = bytes(log).split(b"\0", 1)[0].decode("utf-8", "replace").strip()
            raise DriverError(f"loading PTX: {error.summary}: {detail or 'no JIT log'}") from None

    def unload_module(self, module: int) -> None:
        self._run("cuModuleUnload", self._cuda.CUmodule(module))

    def get_function(self, module: int, name: str) -> int:
        return int(self._run("cuModuleGetFunction", self._cuda.CUmodule(module), name.encode()))

    def launch_kernel(
        self,
        function: int,
        grid: Dim3,
        block: Dim3,
        shared_bytes: int,
        stream: int,
        params: int,
        param_count: int,
    ) -> None:
        cuda = self._cuda
        handle = cuda.CUfunction(function)
        if shared_bytes > 48 * 1024:
            # Above 48 KiB the kernel must opt in to dynamic shared memory.
            attribute = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self._run("cuFuncSetAttribute", handle, attribute, shared_bytes)
        # The driver reads the parameters' count and sizes from the kernel's image.
        stream_handle = cuda.CUstream(stream)
        self._run("cuLaunchKernel", handle, *grid, *block, shared_bytes, stream_handle, params, 0)

    def create_stream(self) -> int:
        flags = self._cuda.CUstream_flags.CU_STREAM_NON_BLOCKING
        return int(self._run("cuStreamCreate", flags))

    def synchronize_stream(self, stream: int) -> None:
        self._run("cuStreamSynchronize", self._cuda.CUstream(stream))

    def destroy_stream(self, stream: int) -> None:
        self._run("cuStreamDestroy", self._cuda.CUstream(stream))

    def create_event(self) -> int:
        return int(self._run("cuEventCreate", self._cuda.CUevent_flags.CU_EVENT_DISABLE_TIMING))

    def record_event(self, event: int, stream: int) -> None:
        self._run("cuEventRecord", self._cuda.CUevent(event), self._cuda.CUstream(stream))

    def synchronize_event(self, event: int) -> None:
        self._run("cuEventSynchronize", self._cuda.CUevent(event))

    def destroy_event(self, event: int) -> None:
        self._run("cuEventDestroy", self._cuda.CUevent(event))

    def wait_event(self, stream: int, event: int) -> None:
        self._run("cuStreamWaitEvent", self._cuda.CUstream(stream), self._cuda.CUevent(event), 0)

    def allocate_managed(self, size: int) -> int:
        flags = self._cuda.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL
        return int(self._run("cuMemAllocManaged", size, flags))

    def allocate_device(self, size: int) -> int:
        with self._pool_lock:
            free = self._free_device.get(size)
            if free:
                return free.pop()
        try:
            pointer = int(self._run("cuMemAlloc", size))
        except DriverError:
            self.release_pool()  # the memory kept for reuse, then try once more
            pointer = int(self._run("cuMemAlloc", size))
        with self._pool_lock:
            self._device_sizes[pointer] = size
        return pointer

    def free(self, pointer: int) -> None:
        with self._pool_lock:
            size = self._device_sizes.get(pointer)
            if size is not None:
                self._free_device.setdefault(size, []).append(pointer)
                return
        self._run("cuMemFree", self._cuda.CUdeviceptr(pointer))

    def release_pool(self) -> None:
        """Give the device memory kept for reuse back to the driver."""
        with self._pool_lock:
            pooled, self._free_device = self._free_device, {}
            for pointers in pooled.values():
                for pointer in pointers:
                    del self._device_sizes[pointer]
        for pointers in pooled.values():
            for pointer in pointers:
                self._run("cuMemFree", self._cuda.CUdeviceptr(pointer))

    def copy_to_host(self, host: int, device: int, size: int) -> None:
        cuda = self._cuda
        # Unified addressing tells the driver which side each pointer is on.
        self._run("cuMemcpy", cuda.CUdeviceptr(host), cuda.CUdeviceptr(device), size)

    def synchronize_context(self) -> None:
        self._run("cuCtxSynchronize")

    def memcpy(self, destination: int, source: int, size: int, stream: int) -> None:
        cuda = self._cuda
        dst, src = cuda.CUdeviceptr(destination), cuda.CUdeviceptr(source)
        self._run("cuMemcpyAsync", dst, src, size, cuda.CUstream(stream))

    def memset32(self, destination: int, value: int, count: int, stream: int) -> None:
        cuda = self._cuda
        dst = cuda.CUdeviceptr(destination)
        self._run("cuMemsetD32Async", dst, value, count, cuda.CUstream(stream))

    def memset16(self, destination: int, value: int, count: int, stream: int) -> None:
        cuda = self._cuda
        dst = cuda.CUdeviceptr(destination)
        self._run("cuMemsetD16Async", dst, value, count, cuda.CUstream(stream))


# One driver per process and device: every compiled function shares its context and
# its pool of device memory (results freed by one are reused by the next).
_drivers: dict[tuple[int, int], CudaDriver] = {}
_drivers_lock = threading.Lock()


def available_driver(device_ordinal: int = 0) -> CudaDriver:
    """The CudaDriver for ``device_ordinal``, or ShloError naming what this machine lacks."""
    key = (os.getpid(), device_ordinal)  # a forked child starts its own
    with _drivers_lock:
        driver = _drivers.get(key)
        if driver is None:
            driver = _drivers[key] = _new_driver(device_ordinal)
    return driver


def _new_driver(device_ordinal: int) -> CudaDriver:
    try:
        ctypes.CDLL(_LIBCUDA)
    except OSError:
        raise ShloError(
            f"no CUDA driver: {_LIBCUDA} could not be loaded; "
            "target='cuda' needs an NVIDIA GPU and its driver"
        ) from None
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError:
        raise ShloError(f"cuda-python is not installed; {INSTALL_HINT}") from None
    try:
        return CudaDriver(device_ordinal)
    except DriverError as error:
        raise ShloError(f"no usable CUDA device: {error.summary}") from None
    except Exception as error:  # cuda-python raises its own types when it cannot load libcuda
        raise ShloError(f"the CUDA driver could not be initialized: {error}") from None


# --- The fake driver -----------------------------------------------------------------------

# PTX parameter types: size in bytes, and struct format to read a value (None: raw int).
_PTX_TYPES: dict[str, tuple[int, str]] = {
    "b8": (1, "B"), "u8": (1, "B"), "s8": (1, "b"),
    "b16": (2, "H"), "u16": (2, "H"), "s16": (2, "h"), "f16": (2, "e"), "bf16": (2, "H"),
    "b32": (4, "I"), "u32": (4, "I"), "s32": (4, "i"), "f32": (4, "f"),
    "f16x2": (4, "I"), "bf16x2": (4, "I"),
    "b64": (8, "Q"), "u64": (8, "Q"), "s64": (8, "q"), "f64": (8, "d"),
}  # fmt: skip

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$%]*)\s*(?:\(([^)]*)\))?")
_NAME = re.compile(r"([A-Za-z_$%][\w$%]*)\s*(?:\[\s*(\d+)\s*\])?$")


@dataclass(frozen=True)
class PtxParam:
    """One ``.param`` of a kernel: ``ptx_type`` such as ``u64``; arrays have ``count`` > 1."""

    name: str
    ptx_type: str
    count: int
    alignment: int

    @property
    def size(self) -> int:
        return _PTX_TYPES[self.ptx_type][0] * self.count

    def unpack(self, data: bytes) -> int | float | bytes:
        """The value of the parameter's bytes; arrays (structs by value) stay bytes."""
        if self.count != 1:
            return data
        return struct.unpack("<" + _PTX_TYPES[self.ptx_type][1], data)[0]


@dataclass(frozen=True)
class PtxEntry:
    name: str
    params: tuple[PtxParam, ...]

    def offsets(self) -> list[int]:
        """Each parameter's offset in a C struct of the parameters, as the host lays them out."""
        offsets, offset = [], 0
        for param in self.params:
            offset = -(-offset // param.alignment) * param.alignment
            offsets.append(offset)
            offset += param.size
        return offsets


def _parse_param(text: str, entry: str) -> PtxParam:
    tokens = text.split()
    if not tokens or tokens[0] != ".param":
        raise DriverError(f"PTX entry {entry}: cannot read parameter {text.strip()!r}")
    ptx_type, alignment, pointer, rest = None, None, False, tokens[1:]
    while rest and rest[0].startswith("."):
        token = rest.pop(0)
        if token == ".align" and rest and rest[0].isdigit():
            value = int(rest.pop(0))
            if not pointer:  # after .ptr, .align is the pointee's alignment
                alignment = value
        elif token == ".ptr":
            pointer = True
        elif token[1:] in _PTX_TYPES:
            ptx_type = token[1:]
        # Other qualifiers (.global, .const, ...) do not change the layout.
    name = _NAME.match(" ".join(rest))
    if ptx_type is None or name is None:
        raise DriverError(f"PTX entry {entry}: cannot read parameter {text.strip()!r}")
    element_size = _PTX_TYPES[ptx_type][0]
    count = int(name.group(2)) if name.group(2) else 1
    return PtxParam(name.group(1), ptx_type, count, alignment or element_size)


def parse_ptx_entries(ptx: str) -> dict[str, PtxEntry]:
    """The kernels (``.entry``) of a PTX module and their parameters, in order."""
    text = _COMMENTS.sub(" ", ptx)
    entries = {}
    for match in _ENTRY.finditer(text):
        name, params = match.group(1), match.group(2) or ""
        parts = [p for p in params.split(",") if p.strip()]
        entries[name] = PtxEntry(name, tuple(_parse_param(p, name) for p in parts))
    return entries


@dataclass(frozen=True)
class LaunchRecord:
    """A launch the FakeDriver saw; ``params`` holds the values, in the entry's order."""

    kernel: str
    grid: Dim3
    block: Dim3
    shared_bytes: int
    stream: int
    params: tuple[int | float | bytes, ...]


class FakeDriver(Driver):
    """A driver without a GPU: host memory, PTX signatures, recorded launches (see module doc)."""

    def __init__(self) -> None:
        self.launches: list[LaunchRecord] = []
        self.modules: dict[int, dict[str, PtxEntry]] = {}
        self.unloaded_modules = 0
        self.allocated: list[tuple[int, int]] = []  # (pointer, size) of every allocation
        self.device_allocations: set[int] = set()  # live ones from allocate_device
        # ("launch" or "synchronize", stream), in order: what a call waited for.
        self.events: list[tuple[str, int]] = []
        self.context_synchronizations = 0
        self._functions: dict[int, PtxEntry] = {}
        self._streams: set[int] = set()
        self._events: set[int] = set()
        # address -> (its ctypes buffer, size): the buffer keeps the memory alive.
        self._allocations: dict[int, tuple[ctypes.Array[ctypes.c_char], int]] = {}
        self._handles = itertools.count(0x1000, 0x10)

    @property
    def live_allocations(self) -> int:
        return len(self._allocations)

    def allocation_size(self, pointer: int) -> int | None:
        """The size of the live allocation that starts at ``pointer``, if any."""
        found = self._allocations.get(pointer)
        return found[1] if found else None

    def read(self, pointer: int, size: int) -> bytes:
        """``size`` bytes of fake device memory (checked to lie in one allocation)."""
        self._check_range(pointer, size)
        return ctypes.string_at(pointer, size)

    def _check_range(self, pointer: int, size: int) -> None:
        for start, (_, length) in self._allocations.items():
            if start <= pointer and pointer + size <= start + length:
                return
        raise DriverError(f"FakeDriver: [{pointer:#x}, +{size}) is not in an allocation")

    def load_module(self, image: bytes, jit_optimization_level: int | None = None) -> int:
        if image.startswith(_ELF_MAGIC):
            raise DriverError("FakeDriver loads PTX text only, not a cubin")
        try:
            ptx = image.rstrip(b"\0").decode("ascii")
        except UnicodeDecodeError:
            raise DriverError("FakeDriver: the module image is not PTX text") from None
        entries = parse_ptx_entries(ptx)
        if not entries:
            raise DriverError("FakeDriver: the PTX module has no .entry")
        handle = next(self._handles)
        self.modules[handle] = entries
        return handle

    def unload_module(self, module: int) -> None:
        if self.modules.pop(module, None) is None:
            raise DriverError(f"FakeDriver: unloading unknown module {module:#x}")
        self.unloaded_modules += 1

    def get_function(self, module: int, name: str) -> int:
        entries = self.modules.get(module)
        if entries is None:
            raise DriverError(f"FakeDriver: unknown module {module:#x}")
        if name not in entries:
            raise DriverError(f"FakeDriver: the PTX module has no kernel {name!r}")
        handle = next(self._handles)
        self._functions[handle] = entries[name]
        return handle

    def launch_kernel(
        self,
        function: int,
        grid: Dim3,
        block: Dim3,
        shared_bytes: int,
        stream: int,
        params: int,
        param_count: int,
    ) -> None:
        entry = self._functions.get(function)
        if entry is None:
            raise DriverError(f"FakeDriver: unknown kernel handle {function:#x}")
        self._check_stream(stream)
        expected = entry.params
        if param_count != len(expected):
            raise DriverError(
                f"kernel {entry.name} takes {len(expected)} parameters, "
                f"the launch passes {param_count}"
            )
        if expected and not params:
            raise DriverError(f"kernel {entry.name}: the launch passes no parameter array")
        pointers = list((ctypes.c_void_p * len(expected)).from_address(params)) if expected else []
        addresses = [p or 0 for p in pointers]
        # The host packs the values into one C struct; where its fields lie shows their
        # sizes (all but the last), to compare with the layout the kernel's types give.
        for param, offset, address in zip(expected, entry.offsets(), addresses):
            if address - addresses[0] != offset:
                raise DriverError(
                    f"kernel {entry.name}: the arguments before parameter {param.name} "
                    f"({param.ptx_type}) take {address - addresses[0]} bytes, the kernel's "
                    f"take {offset}: the argument sizes do not match its signature"
                )
        values = tuple(
            param.unpack(ctypes.string_at(address, param.size))
            for param, address in zip(expected, addresses)
        )
        self.launches.append(
            LaunchRecord(entry.name, tuple(grid), tuple(block), shared_bytes, stream, values)
        )
        self.events.append(("launch", stream))

    def _check_stream(self, stream: int) -> None:
        if stream and stream not in self._streams:
            raise DriverError(f"FakeDriver: unknown stream {stream:#x}")

    def _check_event(self, event: int) -> None:
        if event not in self._events:
            raise DriverError(f"FakeDriver: unknown event {event:#x}")

    def create_stream(self) -> int:
        stream = next(self._handles)
        self._streams.add(stream)
        return stream

    def synchronize_stream(self, stream: int) -> None:
        self._check_stream(stream)
        self.events.append(("synchronize", stream))

    def destroy_stream(self, stream: int) -> None:
        self._check_stream(stream)
        self._streams.discard(stream)

    def create_event(self) -> int:
        event = next(self._handles)
        self._events.add(event)
        return event

    def record_event(self, event: int, stream: int) -> None:
        self._check_event(event)
        self._check_stream(stream)

    def synchronize_event(self, event: int) -> None:
        self._check_event(event)

    def destroy_event(self, event: int) -> None:
        self._check_event(event)
        self._events.discard(event)

    def wait_event(self, stream: int, event: int) -> None:
        self._check_stream(stream)
        self._check_event(event)

    def allocate_managed(self, size: int) -> int:
        if size <= 0:
            raise DriverError("FakeDriver: allocations must be larger than 0 bytes")
        alignment = self.ALLOCATION_ALIGNMENT
        buffer = (ctypes.c_char * (size + alignment))()
        pointer = -(-ctypes.addressof(buffer) // alignment) * alignment
        self._allocations[pointer] = (buffer, size)
        self.allocated.append((pointer, size))
        return pointer

    def allocate_device(self, size: int) -> int:
        pointer = self.allocate_managed(size)
        self.device_allocations.add(pointer)
        return pointer

    def free(self, pointer: int) -> None:
        if self._allocations.pop(pointer, None) is None:
            raise DriverError(f"FakeDriver: freeing {pointer:#x}, which is not an allocation")
        self.device_allocations.discard(pointer)

    def copy_to_host(self, host: int, device: int, size: int) -> None:
        self._check_range(device, size)
        ctypes.memmove(host, device, size)

    def synchronize_context(self) -> None:
        self.context_synchronizations += 1

    def memcpy(self, destination: int, source: int, size: int, stream: int) -> None:
        self._check_stream(stream)
        self._check_range(destination, size)
        self._check_range(source, size)
        ctypes.memmove(destination, source, size)

    def _fill(self, destination: int, pattern: bytes, count: int, stream: int) -> None:
        self._check_stream(stream)
        self._check_range(destination, len(pattern) * count)
        ctypes.memmove(destination, pattern * count, len(pattern) * count)

    def memset32(self, destination: int, value: int, count: int, stream: int) -> None:
        self._fill(destination, struct.pack("<I", value & 0xFFFFFFFF), count, stream)

    def memset16(self, destination: int, value: int, count: int, stream: int) -> None:
        self._fill(destination, struct.pack("<H", value & 0xFFFF), count, stream)
