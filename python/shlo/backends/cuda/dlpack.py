"""Device arrays across the DLPack protocol: taking a GPU array in, handing results out.

A CUDA call whose inputs are GPU arrays (jax, cupy, torch, ...: anything with
``__dlpack__`` and ``__dlpack_device__`` on a CUDA device) reads them where
they are and leaves its results on the device as ``DeviceArray``s, which
those libraries take back without a copy (``jax.dlpack.from_dlpack``,
``cupy.from_dlpack``, ``torch.from_dlpack``).

The structs are DLPack's unversioned ``DLManagedTensor`` (capsule name
"dltensor"), which every producer still accepts to give and every consumer
to take. A consumer renames the capsule "used_dltensor" and calls the
tensor's deleter when it no longer needs the memory; a capsule never
consumed calls it when it is destroyed.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from shlo.backends.cuda.driver import Driver
from shlo.dtypes import numpy_dtype

# DLDeviceType values.
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
DEVICE_TYPES = (CUDA, CUDA_MANAGED)

# DLDataTypeCode values.
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The destructor sees a capsule whose reference count is 0: only raw pointers touch it.
# (Indexing makes new function objects: attributes are cached and would share argtypes.)
_raw_is_valid = ctypes.pythonapi["PyCapsule_IsValid"]
_raw_is_valid.restype = ctypes.c_int
_raw_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_raw_get_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_raw_get_pointer.restype = ctypes.c_void_p
_raw_get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


def _dl_dtype(dtype: np.dtype[Any]) -> tuple[int, int]:
    """DLPack's (code, bits) for a numpy dtype (ml_dtypes' bfloat16 included)."""
    if dtype == np.bool_:
        return _BOOL, 8
    if dtype.name == "bfloat16":
        return _BFLOAT, 16
    code = {"i": _INT, "u": _UINT, "f": _FLOAT, "c": _COMPLEX}.get(dtype.kind)
    if code is None:
        raise TypeError(f"DLPack has no type for {dtype}")
    return code, dtype.itemsize * 8


def _numpy_dtype(dl_type: DLDataType) -> np.dtype[Any]:
    code, bits = dl_type.code, dl_type.bits
    if dl_type.lanes != 1:
        raise TypeError(f"DLPack vector types ({dl_type.lanes} lanes) are not supported")
    if code == _BOOL or (code == _UINT and bits == 1):
        return np.dtype(np.bool_)
    if code == _BFLOAT and bits == 16:
        return numpy_dtype("bf16")
    kind = {_INT: "i", _UINT: "u", _FLOAT: "f", _COMPLEX: "c"}.get(code)
    if kind is None:
        raise TypeError(f"DLPack type code {code} ({bits} bits) is not supported")
    return np.dtype(f"{kind}{bits // 8}")


def is_device_array(value: Any) -> bool:
    """Whether ``value`` is a DLPack array on a CUDA device (managed memory included)."""
    device = getattr(value, "__dlpack_device__", None)
    if device is None or isinstance(value, np.ndarray):
        return False
    try:
        device_type, _ = device()
    except Exception:
        return False
    return int(device_type) in DEVICE_TYPES


class ImportedTensor:
    """A GPU array taken through DLPack: its data pointer, shape and dtype.

    Holds the producer's memory until ``release()``, which the caller calls
    once the kernels that read it have finished.
    """

    def __init__(self, value: Any) -> None:
        self._capsule = value.__dlpack__()
        address = _capsule_get_pointer(self._capsule, _NAME)
        self._managed = ctypes.cast(address, ctypes.POINTER(DLManagedTensor))
        # Consumed: from here on this object, not the capsule, calls the deleter.
        _capsule_set_name(self._capsule, _USED_NAME)
        tensor = self._managed.contents.dl_tensor
        self.device_type = tensor.device.device_type
        self.device_id = tensor.device.device_id
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        try:
            self.dtype = _numpy_dtype(tensor.dtype)
            if tensor.device.device_type not in DEVICE_TYPES:
                raise TypeError(f"DLPack device type {tensor.device.device_type} is not CUDA")
            if tensor.strides and self._strides(tensor) != self._row_major():
                raise TypeError(
                    "the GPU array is not contiguous in row-major order; pass a copy of it"
                )
        except BaseException:
            self.release()
            raise
        self.pointer = (tensor.data or 0) + tensor.byte_offset
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def _strides(self, tensor: DLTensor) -> tuple[int, ...]:
        # Strides of size-1 dimensions say nothing about the layout.
        return tuple(tensor.strides[i] if self.shape[i] != 1 else 0 for i in range(tensor.ndim))

    def _row_major(self) -> tuple[int, ...]:
        strides, step = [], 1
        for size in reversed(self.shape):
            strides.append(step if size != 1 else 0)
            step *= size
        return tuple(reversed(strides))

    def release(self) -> None:
        managed, self._managed = getattr(self, "_managed", None), None
        if managed is not None and managed.contents.deleter:
            managed.contents.deleter(managed)

    def __del__(self) -> None:
        self.release()


# Exports alive in some consumer: address of the DLManagedTensor -> what it keeps alive.
_exports: dict[int, tuple[Any, ...]] = {}
_exports_lock = threading.Lock()


@_DELETER
def _delete_export(managed: Any) -> None:
    with _exports_lock:
        _exports.pop(ctypes.addressof(managed.contents), None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _destroy_capsule(capsule: int) -> None:
    # A capsule that no consumer took still owns its tensor.
    if _raw_is_valid(capsule, _NAME):
        address = _raw_get_pointer(capsule, _NAME)
        with _exports_lock:
            _exports.pop(address, None)


class DeviceArray:
    """A result left in GPU memory; DLPack hands it to jax, cupy or torch without a copy.

    ``numpy()`` (and ``np.asarray``) copy it to the host. The memory is freed
    when neither this object nor any consumer of its DLPack capsule needs it.
    """

    def __init__(
        self, driver: Driver, pointer: int, shape: tuple[int, ...], dtype: np.dtype[Any]
    ) -> None:
        self._driver = driver
        self._pointer = pointer
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def pointer(self) -> int:
        return self._pointer

    def numpy(self) -> np.ndarray:
        """A host copy."""
        array = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self._driver.copy_to_host(array.ctypes.data, self._pointer, self.nbytes)
        return array

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def __dlpack_device__(self) -> tuple[int, int]:
        return CUDA, self._driver.device_ordinal

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Any = None,
        dl_device: Any = None,
        copy: Any = None,
    ) -> Any:
        # The data is complete when a call returns (calls synchronize), so a
        # consumer's stream has nothing to wait for.
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("a DeviceArray is exported only from its own device")
        if copy:
            raise BufferError("a DeviceArray is exported without a copy only")
        managed = DLManagedTensor()
        shape = (ctypes.c_int64 * max(len(self.shape), 1))(*self.shape)
        code, bits = _dl_dtype(self.dtype)
        tensor = managed.dl_tensor
        tensor.data = self._pointer or None
        tensor.device = DLDevice(CUDA, self._driver.device_ordinal)
        tensor.ndim = len(self.shape)
        tensor.dtype = DLDataType(code, bits, 1)
        tensor.shape = shape
        tensor.strides = None  # row-major
        tensor.byte_offset = 0
        managed.deleter = _delete_export
        address = ctypes.addressof(managed)
        with _exports_lock:
            _exports[address] = (managed, shape, self)
        return _capsule_new(address, _NAME, ctypes.cast(_destroy_capsule, ctypes.c_void_p))

    def __repr__(self) -> str:
        device = f"cuda:{self._driver.device_ordinal}"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name}, {device})"

    def __del__(self) -> None:
        pointer, self._pointer = getattr(self, "_pointer", 0), 0
        if pointer:
            try:
                self._driver.free(pointer)
            except Exception:
                pass  # nothing to report to at garbage collection
