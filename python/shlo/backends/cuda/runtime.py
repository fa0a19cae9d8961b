"""The host runtime of the CUDA backend: the mgpu* functions, and calling @main with numpy arrays.

The host module is LLVM-dialect code produced by ``gpu-to-llvm``: it calls the
``mgpu*`` functions of MLIR's CUDA runtime wrappers, and translating it to
LLVM IR turns each ``gpu.binary`` into a global constructor that loads the
module (``mgpuModuleLoad``, ``mgpuModuleLoadJIT`` for PTX) and a destructor
that unloads it. The wheel ships no ``mlir_cuda_runtime``, so ``MgpuRuntime``
implements those functions in Python over a ``Driver`` and registers them in
the ExecutionEngine as ctypes callbacks.

The C signatures are the ones the pinned wheel (torch-mlir 20261001) emits,
read from its LLVM IR and object code:

  void *mgpuModuleLoad(void *image, int64_t size)
  void *mgpuModuleLoadJIT(void *ptx, int32_t optLevel, int64_t size)   (size counts the NUL)
  void  mgpuModuleUnload(void *module)
  void *mgpuModuleGetFunction(void *module, const char *name)
  void  mgpuLaunchKernel(void *function, intptr_t gridX, gridY, gridZ, blockX, blockY, blockZ,
                         int32_t sharedBytes, void *stream, void **params, void **extra,
                         int64_t paramCount)
  void *mgpuStreamCreate(void);  void mgpuStreamSynchronize/mgpuStreamDestroy(void *stream)
  void  mgpuStreamWaitEvent(void *stream, void *event)
  void *mgpuEventCreate(void);  void mgpuEventSynchronize/mgpuEventDestroy(void *event)
  void  mgpuEventRecord(void *event, void *stream)
  void *mgpuMemAlloc(uint64_t size, void *stream, int8_t hostShared)
  void  mgpuMemFree(void *pointer, void *stream)
  void  mgpuMemcpy(void *dst, void *src, uint64_t size, void *stream)
  void  mgpuMemset32(void *dst, uint32_t value, uint64_t count, void *stream)
  void  mgpuMemset16(void *dst, uint16_t value, uint64_t count, void *stream)
  void  mgpuSetDefaultDevice(int32_t device)

The host module's own buffers (``finalize-memref-to-llvm{use-generic-functions}``)
come from ``_mlir_memref_to_llvm_alloc``, ``_aligned_alloc`` and ``_free``.
Every buffer, those and ``gpu.alloc``'s, is CUDA managed memory, so host code
can read what kernels wrote; each launch is synchronous.

An exception must not unwind into generated code: each callback records it
and returns null, kernels are no longer launched once one is recorded, and
the caller raises the first one when the generated code returns. A failed
allocation returns zeroed host memory instead of null, so that host code
writing to it cannot crash the process (``MgpuRuntime._placeholder``).

A call with GPU arrays (DLPack) reads them where they are and writes its
results into new device memory, returned as ``DeviceArray``s. Only the
buffers host code reads or writes (``CudaLowered.host_accessed``: a while
loop's condition, 0-d arithmetic) go through managed memory.
"""

from __future__ import annotations

import atexit
import ctypes
import mmap
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ExecutionEngine, ir, new_context
from shlo.backends.cpu.runtime import ArrayType, fix_sub_byte
from shlo.backends.cuda.dlpack import DeviceArray, ImportedTensor, is_device_array
from shlo.backends.cuda.driver import Driver, DriverError
from shlo.diagnostics import ShloError

_VOID_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_U64 = ctypes.c_uint64

# Largest module image read from generated code; a larger size is a corrupt call.
_MAX_IMAGE_BYTES = 1 << 31
# CUDA's limits on launch dimensions.
_MAX_GRID = (2**31 - 1, 65535, 65535)
_MAX_BLOCK_THREADS = 1024
# Reserve address space without committing memory (Linux).
_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0)


class MgpuRuntime:
    """The mgpu* and memref allocation functions over one Driver, as ctypes callbacks.

    Keep the object alive as long as any engine it is registered in: the
    engine calls ``mgpuModuleUnload`` when it is destroyed.
    """

    def __init__(
        self,
        driver: Driver,
        cubins: dict[bytes, bytes] | None = None,
        synchronous: bool = True,
    ) -> None:
        self.driver = driver
        self.synchronous = synchronous
        self._functions: dict[tuple[int, str], int] = {}
        # PTX -> its cubin for this device: loaded instead of JIT-compiling the PTX.
        self.cubins = cubins or {}
        self.errors: list[BaseException] = []
        # Pointers handed out by the aligned allocator -> the allocation to free.
        self._over_aligned: dict[int, int] = {}
        # The code makes, syncs and destroys a stream per launch: one stream serves them all.
        self._stream: int | None = None
        # Freed buffers by size, handed out again: the same buffers every call, not an
        # allocation per buffer per call.
        self._sizes: dict[int, int] = {}
        self._free_buffers: dict[int, list[int]] = {}
        # Host stand-ins for buffers after a failure (see _placeholder): address -> region.
        self._placeholders: dict[int, tuple[mmap.mmap, Any]] = {}
        signatures: dict[str, tuple[Any, list[Any], Callable[..., Any]]] = {
            "mgpuModuleLoad": (_VOID_P, [_VOID_P, _I64], self.module_load),
            "mgpuModuleLoadJIT": (_VOID_P, [_VOID_P, ctypes.c_int32, _I64], self.module_load_jit),
            "mgpuModuleUnload": (None, [_VOID_P], self.module_unload),
            "mgpuModuleGetFunction": (_VOID_P, [_VOID_P, _VOID_P], self.module_get_function),
            "mgpuLaunchKernel": (
                None,
                [_VOID_P, *[ctypes.c_ssize_t] * 6, ctypes.c_int32, _VOID_P, _VOID_P, _VOID_P, _I64],
                self.launch_kernel,
            ),
            "mgpuStreamCreate": (_VOID_P, [], self.stream_create),
            "mgpuStreamSynchronize": (None, [_VOID_P], self.stream_synchronize),
            "mgpuStreamDestroy": (None, [_VOID_P], self.stream_destroy),
            "mgpuStreamWaitEvent": (None, [_VOID_P, _VOID_P], self.stream_wait_event),
            "mgpuEventCreate": (_VOID_P, [], driver.create_event),
            "mgpuEventRecord": (None, [_VOID_P, _VOID_P], self.event_record),
            "mgpuEventSynchronize": (None, [_VOID_P], self._nullable(driver.synchronize_event)),
            "mgpuEventDestroy": (None, [_VOID_P], self._nullable(driver.destroy_event)),
            "mgpuMemAlloc": (_VOID_P, [_U64, _VOID_P, ctypes.c_int8], self.mem_alloc),
            "mgpuMemFree": (None, [_VOID_P, _VOID_P], self.mem_free),
            "mgpuMemcpy": (None, [_VOID_P, _VOID_P, _U64, _VOID_P], self.memcpy),
            "mgpuMemset32": (None, [_VOID_P, ctypes.c_uint32, _U64, _VOID_P], self.memset32),
            "mgpuMemset16": (None, [_VOID_P, ctypes.c_uint16, _U64, _VOID_P], self.memset16),
            "mgpuSetDefaultDevice": (None, [ctypes.c_int32], self.set_default_device),
            "_mlir_memref_to_llvm_alloc": (_VOID_P, [_U64], self.alloc),
            "_mlir_memref_to_llvm_aligned_alloc": (_VOID_P, [_U64, _U64], self.aligned_alloc),
            "_mlir_memref_to_llvm_free": (None, [_VOID_P], self.free),
        }
        # The callbacks must outlive every engine that calls them, hence kept here.
        self.callbacks = {
            name: ctypes.CFUNCTYPE(restype, *argtypes)(self._guarded(function))
            for name, (restype, argtypes, function) in signatures.items()
        }

    def register(self, engine: ExecutionEngine) -> None:
        """Make the functions known to ``engine``, before its first lookup (which links
        the code) and its ``initialize()`` (which loads the kernels)."""
        for name, callback in self.callbacks.items():
            engine.raw_register_runtime(name, ctypes.cast(callback, _VOID_P))

    def raise_pending(self) -> None:
        """Raise the first error a callback recorded (as ShloError), and forget them all."""
        if not self.errors:
            return
        error, self.errors = self.errors[0], []
        if isinstance(error, ShloError | KeyboardInterrupt | MemoryError):
            raise error
        raise ShloError(f"the CUDA runtime failed: {type(error).__name__}: {error}") from error

    def _guarded(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            try:
                return function(*args)
            except BaseException as error:  # nothing may unwind into the generated code
                self.errors.append(error)
                return None  # null, or nothing for functions returning void

        return call

    @staticmethod
    def _nullable(method: Callable[[int], None]) -> Callable[[int | None], None]:
        # ctypes passes a null pointer as None; the Driver takes 0.
        return lambda handle: method(handle or 0)

    # --- modules and launches --------------------------------------------------------------

    def _image(self, data: int | None, size: int) -> bytes:
        if not data or not 0 < size <= _MAX_IMAGE_BYTES:
            raise DriverError(f"loading a GPU module: bad image (address {data}, {size} bytes)")
        return ctypes.string_at(data, size)

    def module_load(self, data: int | None, size: int) -> int:
        return self.driver.load_module(self._image(data, size))

    def module_load_jit(self, data: int | None, optimization_level: int, size: int) -> int:
        if not 0 <= optimization_level <= 4:
            raise DriverError(f"PTX JIT optimization level {optimization_level} is not in 0-4")
        ptx = self._image(data, size)
        cubin = self.cubins.get(ptx.rstrip(b"\0"))
        if cubin is not None:
            return self.driver.load_module(cubin)
        return self.driver.load_module(ptx, optimization_level)

    def module_unload(self, module: int | None) -> None:
        if module:  # null when loading failed, which is already recorded
            self.driver.unload_module(module)

    def module_get_function(self, module: int | None, name: int | None) -> int | None:
        if not module or not name:
            return None  # loading the module failed, which is already recorded
        # Asked again before every launch.
        kernel = ctypes.string_at(name).decode("utf-8", "replace")
        function = self._functions.get((module, kernel))
        if function is None:
            function = self._functions[module, kernel] = self.driver.get_function(module, kernel)
        return function

    def launch_kernel(
        self,
        function: int | None,
        grid_x: int,
        grid_y: int,
        grid_z: int,
        block_x: int,
        block_y: int,
        block_z: int,
        shared_bytes: int,
        stream: int | None,
        params: int | None,
        extra: int | None,
        param_count: int,
    ) -> None:
        if self.errors:
            return  # after a failure, results are not used: launch nothing more
        if not function:
            raise DriverError("launching a kernel that could not be loaded")
        grid, block = (grid_x, grid_y, grid_z), (block_x, block_y, block_z)
        if not all(1 <= size <= limit for size, limit in zip(grid, _MAX_GRID)):
            raise DriverError(f"bad kernel grid {grid}")
        if min(block) < 1 or block_x * block_y * block_z > _MAX_BLOCK_THREADS:
            raise DriverError(f"bad kernel block {block}")
        if shared_bytes < 0 or param_count < 0 or extra:
            raise DriverError("bad kernel launch: negative sizes or 'extra' parameters")
        self.driver.launch_kernel(
            function, grid, block, shared_bytes, stream or 0, params or 0, param_count
        )

    def stream_synchronize(self, stream: int | None) -> None:
        # The code waits for each launch; when no host code reads memory, the
        # launches queue on the one stream and the call waits once at its end.
        if self.synchronous or (stream and stream != self._stream):
            self.driver.synchronize_stream(stream or 0)

    def finish(self) -> None:
        """Wait for the work queued on the stream (the launches of an asynchronous call)."""
        if self._stream is not None:
            self.driver.synchronize_stream(self._stream)

    def stream_create(self) -> int:
        if self._stream is None:
            self._stream = self.driver.create_stream()
        return self._stream

    def stream_destroy(self, stream: int | None) -> None:
        if stream and stream != self._stream:
            self.driver.destroy_stream(stream)

    def close(self) -> None:
        """Destroy the stream and free the pooled buffers."""
        stream, self._stream = self._stream, None
        if stream:
            self.driver.destroy_stream(stream)
        pooled, self._free_buffers = self._free_buffers, {}
        for pointers in pooled.values():
            for pointer in pointers:
                self._sizes.pop(pointer, None)
                self.driver.free(pointer)

    def stream_wait_event(self, stream: int | None, event: int | None) -> None:
        self.driver.wait_event(stream or 0, event or 0)

    def event_record(self, event: int | None, stream: int | None) -> None:
        self.driver.record_event(event or 0, stream or 0)

    def set_default_device(self, device: int) -> None:
        if device != self.driver.device_ordinal:
            raise DriverError(
                f"the program selects CUDA device {device}, "
                f"but it runs on device {self.driver.device_ordinal}"
            )

    # --- memory ----------------------------------------------------------------------------

    def mem_alloc(self, size: int, stream: int | None, host_shared: int) -> int | None:
        # Managed memory whether or not host_shared is asked for: see the module doc.
        return self.alloc(size)

    def mem_free(self, pointer: int | None, stream: int | None) -> None:
        self.free(pointer)

    def memcpy(self, destination: int | None, source: int | None, size: int, stream: int | None):
        if size:
            if not destination or not source:
                raise DriverError("gpu.memcpy with a null pointer")
            self.driver.memcpy(destination, source, size, stream or 0)

    def memset32(self, destination: int | None, value: int, count: int, stream: int | None):
        if count:
            if not destination:
                raise DriverError("gpu.memset with a null pointer")
            self.driver.memset32(destination, value, count, stream or 0)

    def memset16(self, destination: int | None, value: int, count: int, stream: int | None):
        if count:
            if not destination:
                raise DriverError("gpu.memset with a null pointer")
            self.driver.memset16(destination, value, count, stream or 0)

    def alloc(self, size: int) -> int | None:
        # Zero bytes: null, which code never dereferences for an empty buffer.
        if not size:
            return None
        if self.errors:
            return self._placeholder(size)
        free = self._free_buffers.get(size)
        if free:
            return free.pop()
        try:
            pointer = self.driver.allocate_managed(size)
        except (DriverError, MemoryError) as error:
            self.errors.append(error)
            return self._placeholder(size)
        self._sizes[pointer] = size
        return pointer

    def _placeholder(self, size: int) -> int:
        """Zeroed host memory reserved, not committed, in place of a buffer, once a call failed.

        Host code would write through the null pointer of a failed allocation
        and kill the process; kernels are no longer launched, so only host code
        touches these pages, and only those it touches cost memory. Being zero,
        never stale, the conditions of loops whose kernels are skipped end them.
        """
        region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _NORESERVE)
        view = ctypes.c_char.from_buffer(region)
        address = ctypes.addressof(view)
        self._placeholders[address] = (region, view)
        return address

    def aligned_alloc(self, alignment: int, size: int) -> int | None:
        if alignment <= 0 or alignment & (alignment - 1):
            raise DriverError(f"allocation alignment {alignment} is not a power of 2")
        if alignment <= self.driver.ALLOCATION_ALIGNMENT:
            return self.alloc(size)
        base = self.alloc(size + alignment)
        aligned = -(-base // alignment) * alignment
        self._over_aligned[aligned] = base
        return aligned

    def free(self, pointer: int | None) -> None:
        if not pointer:
            return
        placeholder = self._placeholders.pop(pointer, None)
        if placeholder is not None:
            region, view = placeholder
            del view  # the region cannot close while a ctypes view exports it
            region.close()
            return
        pointer = self._over_aligned.pop(pointer, pointer)
        size = self._sizes.get(pointer)
        if size is None:
            self.driver.free(pointer)
        else:
            self._free_buffers.setdefault(size, []).append(pointer)


_live_functions: weakref.WeakSet[CudaFunction] = weakref.WeakSet()


@atexit.register
def _close_live_functions() -> None:
    # Unload while the callbacks the engines' destructors call still exist.
    for function in list(_live_functions):
        function.close()


class CudaFunction:
    """A compiled entry function of the CUDA backend, called with numpy arrays.

    ``host_llvm_bytecode`` is the LLVM-dialect host module (MLIR bytecode or
    text) whose ``@main`` takes one pointer to the data pointers of its
    buffers, inputs then results (``shlo-pack-entry-arguments``). ``cubins``
    maps the PTX of its ``gpu.binary`` to a cubin made for this device, which
    is loaded instead of having the driver JIT-compile the PTX. Each call
    copies the inputs into managed buffers, runs @main, and copies the
    results out of managed buffers into new arrays; the buffers are kept for
    the next call. Calls are serialized.
    """

    def __init__(
        self,
        host_llvm_bytecode: bytes,
        input_types: Sequence[str],
        result_types: Sequence[str],
        driver: Driver,
        opt_level: int = 2,
        cubins: dict[bytes, bytes] | None = None,
        host_accessed: Sequence[int] = (),
        host_reads_memory: bool = True,
    ) -> None:
        self.driver = driver
        self._host_accessed = frozenset(host_accessed)
        self._runtime = MgpuRuntime(driver, cubins, synchronous=host_reads_memory)
        self._lock = threading.Lock()
        self._engine: ExecutionEngine | None = None
        self._buffers: list[int] = []  # data pointers: inputs, then results (0: empty)
        self._views: list[np.ndarray] = []
        self._context = new_context()
        self.inputs = [ArrayType.parse(t, self._context) for t in input_types]
        self.results = [ArrayType.parse(t, self._context) for t in result_types]
        try:
            module = ir.Module.parse(host_llvm_bytecode, self._context)
        except ir.MLIRError as error:
            raise ShloError(f"the CUDA host module does not parse: {error}") from None
        try:
            self._engine = ExecutionEngine(module, opt_level=opt_level)
        except RuntimeError as error:  # the translation to LLVM IR failed
            raise ShloError(f"the CUDA host module does not translate: {error}") from None
        self._runtime.register(self._engine)
        _live_functions.add(self)
        # Code is generated on the first lookup; initialize() then runs the module
        # constructors, which load the kernels.
        address = self._engine.raw_lookup("main")
        if not address:
            raise ShloError("the CUDA host module has no function main (or misses a symbol)")
        self._engine.initialize()
        self._runtime.raise_pending()
        # void _mlir_main(void **arguments): arguments[0] points at main's one argument.
        self._main = ctypes.CFUNCTYPE(None, _VOID_P)(address)
        self._pointers = (_VOID_P * max(len(self.inputs) + len(self.results), 1))()
        self._argument = _VOID_P(ctypes.addressof(self._pointers))
        self._packed = (_VOID_P * 1)(ctypes.addressof(self._argument))

    def _allocate_buffers(self) -> None:
        """One managed buffer per input and result, and numpy views of them."""
        types = [*self.inputs, *self.results]
        sizes = [int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize for t in types]
        buffers: list[int] = []
        try:
            for size in sizes:
                buffers.append(self.driver.allocate_managed(size) if size else 0)
        except BaseException:
            for pointer in filter(None, buffers):
                self.driver.free(pointer)
            raise
        for index, (pointer, size, array_type) in enumerate(zip(buffers, sizes, types)):
            if pointer:
                memory = (ctypes.c_char * size).from_address(pointer)
                view = np.frombuffer(memory, array_type.dtype).reshape(array_type.shape)
            else:
                view = np.empty(array_type.shape, array_type.dtype)
            self._views.append(view)
            self._pointers[index] = pointer or None
        self._buffers = buffers

    def _check_inputs(self, arrays: Sequence[Any]) -> None:
        if len(arrays) != len(self.inputs):
            raise ShloError(f"expected {len(self.inputs)} inputs, got {len(arrays)}")
        for index, (array, expected) in enumerate(zip(arrays, self.inputs)):
            if not isinstance(array, np.ndarray | ImportedTensor):
                raise ShloError(
                    f"input {index} is a {type(array).__name__}, not a numpy or GPU array"
                )
            if array.shape != expected.shape or array.dtype != expected.dtype:
                got = f"{array.shape} {array.dtype}"
                raise ShloError(f"input {index} is {got}, expected {expected} ({expected.dtype})")

    def __call__(self, arrays: Sequence[Any]) -> list[Any]:
        """Run on arrays of the input types; returns new result arrays.

        With any GPU array among the inputs (DLPack, or an ``ImportedTensor``)
        the results are ``DeviceArray``s left on the device; else numpy arrays.
        """
        if all(isinstance(a, np.ndarray) for a in arrays):
            return self._call_with_host_arrays(arrays)
        taken, owned = [], []  # owned: imported here, so released here
        try:
            for array in arrays:
                if not isinstance(array, np.ndarray | ImportedTensor) and is_device_array(array):
                    array = ImportedTensor(array)
                    owned.append(array)
                taken.append(array)
            return self._call_on_device(taken)
        finally:
            for tensor in owned:
                tensor.release()

    def _call_on_device(self, arrays: Sequence[Any]) -> list[DeviceArray]:
        self._check_inputs(arrays)
        count = len(self.inputs)
        with self._lock:
            if self._engine is None:
                raise ShloError("the CUDA function is closed")
            if not self._buffers:
                self._allocate_buffers()
            # The producers (jax, torch, ...) may still be writing the inputs.
            self.driver.synchronize_context()
            pointers: list[int] = []
            for index, array in enumerate(arrays):
                if isinstance(array, np.ndarray):
                    self._views[index][...] = array
                    pointers.append(self._buffers[index])
                elif index in self._host_accessed:
                    self._stage(self._buffers[index], array.pointer, array.nbytes)
                    pointers.append(self._buffers[index])
                else:
                    if array.device_id != self.driver.device_ordinal:
                        raise ShloError(
                            f"input {index} is on CUDA device {array.device_id}; "
                            f"the function runs on device {self.driver.device_ordinal}"
                        )
                    pointers.append(array.pointer)
            results = []
            for offset, result_type in enumerate(self.results):
                size = self._views[count + offset].nbytes
                memory = self.driver.allocate_device(size) if size else 0
                shape, dtype = result_type.shape, result_type.dtype
                results.append(DeviceArray(self.driver, memory, shape, dtype))
                staged = count + offset in self._host_accessed
                pointers.append(self._buffers[count + offset] if staged else memory)
            for index, pointer in enumerate(pointers):
                self._pointers[index] = pointer or None
            try:
                self._main(ctypes.addressof(self._packed))
                self._runtime.finish()
            finally:
                for index, pointer in enumerate(self._buffers):
                    self._pointers[index] = pointer or None
            self._runtime.raise_pending()
            for offset, result in enumerate(results):
                if count + offset in self._host_accessed:
                    self._stage(result.pointer, self._buffers[count + offset], result.nbytes)
            return results

    def _stage(self, destination: int, source: int, size: int) -> None:
        if size:
            self.driver.memcpy(destination, source, size, 0)
            self.driver.synchronize_stream(0)

    def _call_with_host_arrays(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        self._check_inputs(arrays)
        with self._lock:
            if self._engine is None:
                raise ShloError("the CUDA function is closed")
            if not self._buffers:
                self._allocate_buffers()
            for view, array in zip(self._views, arrays):
                view[...] = array  # the one copy in: host memory -> managed memory
            self._main(ctypes.addressof(self._packed))
            self._runtime.finish()
            self._runtime.raise_pending()
            # The one copy out, into arrays that outlive the buffers.
            results = [view.copy() for view in self._views[len(self.inputs) :]]
            # Sub-byte integers (i4, ui2, ...) leave garbage in their bytes' high bits.
            return [fix_sub_byte(r, t.element_type) for r, t in zip(results, self.results)]

    def close(self) -> None:
        """Unload the kernels and free the buffers; the function cannot be called after."""
        with self._lock:
            if self._engine is not None:
                self._engine = None  # its destructor unloads the modules, through the callbacks
                self._main = None
            self._views = []
            buffers, self._buffers = self._buffers, []
            for pointer in buffers:
                if pointer:
                    self.driver.free(pointer)
            self._runtime.close()
            self._runtime.raise_pending()

    def __del__(self) -> None:
        # Skipped when __init__ failed before the lock existed, and at exit (atexit closed it).
        if hasattr(self, "_lock") and not sys.is_finalizing():
            try:
                self.close()
            except ShloError:
                pass  # nothing to report to at garbage collection
