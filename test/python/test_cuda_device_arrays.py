"""GPU arrays in and out of target="cuda" calls (DLPack), without a GPU: the fake driver.

The fake driver's "device memory" is host memory and its kernels do not run,
so these tests check what reaches the kernels (pointers), what is staged, and
who frees what; the GPU runs of docs/cuda.md check the values.
"""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest
import shlo
from shlo import ShloError

pytest.importorskip("llvmlite")
from shlo.backends.cuda import driver as cuda_driver
from shlo.backends.cuda.dlpack import DeviceArray, ImportedTensor, _exports, is_device_array
from shlo.backends.cuda.driver import DriverError, FakeDriver
from shlo.backends.cuda.ptx import find_ptxas

pytestmark = pytest.mark.skipif(find_ptxas() is None, reason="ptxas (the cuda extra) is missing")

SCALE = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = stablehlo.multiply %x, %y : tensor<4x8xf32>
  return %0, %x : tensor<4x8xf32>, tensor<4x8xf32>
}
"""

WHILE_N = """
func.func @main(%x: tensor<64xf32>, %n: tensor<i32>) -> tensor<64xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<64xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %next = stablehlo.add %i, %c1 : tensor<i32>
      %sum = stablehlo.add %acc, %x : tensor<64xf32>
      stablehlo.return %next, %sum : tensor<i32>, tensor<64xf32>
    }
  return %r#1 : tensor<64xf32>
}
"""


@pytest.fixture
def fake_driver(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    driver = FakeDriver()
    monkeypatch.setattr(cuda_driver, "available_driver", lambda: driver)
    return driver


def on_device(driver: FakeDriver, array: np.ndarray) -> DeviceArray:
    pointer = driver.allocate_device(array.nbytes)
    ctypes.memmove(pointer, array.ctypes.data, array.nbytes)
    return DeviceArray(driver, pointer, array.shape, array.dtype)


def test_dlpack_export_and_import_share_the_memory_until_both_let_go() -> None:
    driver = FakeDriver()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    array = on_device(driver, x)
    assert is_device_array(array) and not is_device_array(x)
    assert array.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    np.testing.assert_array_equal(np.asarray(array), x)

    tensor = ImportedTensor(array)
    assert (tensor.pointer, tensor.shape, tensor.dtype) == (array.pointer, (2, 3), x.dtype)
    del array
    gc.collect()
    assert driver.live_allocations == 1  # the import still holds it
    tensor.release()
    gc.collect()
    assert driver.live_allocations == 0 and not _exports

    # A capsule nobody consumes gives the memory back when it is destroyed.
    array = on_device(driver, x)
    capsule = array.__dlpack__()
    del array, capsule
    gc.collect()
    assert driver.live_allocations == 0 and not _exports


def test_bfloat16_and_bool_cross_dlpack() -> None:
    driver = FakeDriver()
    for dtype in (shlo.dtypes.numpy_dtype("bf16"), np.dtype(np.bool_), np.dtype(np.int8)):
        tensor = ImportedTensor(on_device(driver, np.zeros((3,), dtype)))
        assert tensor.dtype == dtype
        tensor.release()


def test_a_call_with_gpu_arrays_passes_their_pointers_and_returns_gpu_arrays(
    fake_driver: FakeDriver,
) -> None:
    executable = shlo.compile(SCALE, target="cuda")
    x = on_device(fake_driver, np.full((4, 8), 2.0, np.float32))
    y = on_device(fake_driver, np.full((4, 8), 3.0, np.float32))
    product, copy = executable(x, y)
    assert isinstance(product, DeviceArray) and isinstance(copy, DeviceArray)
    assert product.shape == (4, 8) and product.dtype == np.float32
    assert {product.pointer, copy.pointer} <= fake_driver.device_allocations
    # The kernels read the inputs and write the results where they are: no staging.
    pointers = {p for launch in fake_driver.launches for p in launch.params if isinstance(p, int)}
    assert {x.pointer, y.pointer, product.pointer, copy.pointer} <= pointers
    assert fake_driver.context_synchronizations == 1
    # numpy inputs still give numpy results.
    outputs = executable(np.ones((4, 8), np.float32), np.ones((4, 8), np.float32))
    assert all(type(o) is np.ndarray for o in outputs)


def test_a_gpu_array_of_the_wrong_shape_is_refused_and_released(fake_driver: FakeDriver) -> None:
    executable = shlo.compile(SCALE, target="cuda")
    x = on_device(fake_driver, np.zeros((4, 8), np.float32))
    wrong = on_device(fake_driver, np.zeros((8, 4), np.float32))
    with pytest.raises(ValueError, match="argument 1 of @main: expected shape 4x8, got 8x4"):
        executable(x, wrong)
    assert not _exports  # both imports were released


def test_only_buffers_the_host_code_reads_are_staged() -> None:
    from shlo.backends.cuda import CudaBackend, CudaOptions

    lowered = CudaBackend().lower(WHILE_N, "main", None, CudaOptions(), "<string>", 1 << 30)
    # The loop bound is read by the host; x is copied by a kernel, the result written by one.
    assert lowered.host_accessed == (1,)
    lowered = CudaBackend().lower(SCALE, "main", None, CudaOptions(), "<string>", 1 << 30)
    assert lowered.host_accessed == ()


class FailingDriver(FakeDriver):
    """Managed allocations fail after the first ``budget``."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def allocate_managed(self, size: int) -> int:
        if self.budget <= 0:
            raise DriverError("cuMemAllocManaged failed: CUDA_ERROR_OUT_OF_MEMORY")
        self.budget -= 1
        return super().allocate_managed(size)


@pytest.mark.parametrize("budget", [2, 3, 4])
def test_a_failed_allocation_raises_instead_of_crashing(
    monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    # The host code of the loop writes to buffers it allocates: with a null
    # pointer it would crash the process.
    driver = FailingDriver(budget)
    monkeypatch.setattr(cuda_driver, "available_driver", lambda: driver)
    executable = shlo.compile(WHILE_N, target="cuda")
    with pytest.raises(ShloError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        executable(np.ones(64, np.float32), np.array(5, np.int32))


def test_launches_queue_unless_host_code_reads_memory(fake_driver: FakeDriver) -> None:
    # Softmax-like: the host code only launches, so the kernels queue on one stream
    # and the call waits once, after the last.
    executable = shlo.compile(SCALE, target="cuda")
    executable(np.ones((4, 8), np.float32), np.ones((4, 8), np.float32))
    kinds = [kind for kind, _ in fake_driver.events]
    assert kinds.count("launch") >= 2 and kinds[-1] == "synchronize"
    assert kinds.count("synchronize") == 1
    assert len({stream for _, stream in fake_driver.events}) == 1

    # The while loop's host code reads the loop bound and counter: every launch is
    # waited for before the host goes on.
    fake_driver.events.clear()
    looped = shlo.compile(WHILE_N, target="cuda")
    looped(np.ones(64, np.float32), np.array(3, np.int32))
    kinds = [kind for kind, _ in fake_driver.events]
    assert kinds.count("launch") >= 3
    for index, kind in enumerate(kinds):
        if kind == "launch":
            assert kinds[index + 1] == "synchronize", kinds


def test_jax_jit_for_cuda_reads_cpu_arrays_as_numpy(fake_driver: FakeDriver) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import shlo.jax

    x = jnp.ones((4, 8), jnp.float32)  # a jax array on the CPU: DLPack device type 1
    assert not is_device_array(x)
    scaled = shlo.jax.jit(lambda a: a * 2.0 + 1.0, target="cuda")
    out = scaled(x)
    assert isinstance(out, jax.Array) and out.shape == (4, 8) and out.dtype == jnp.float32
    assert len(fake_driver.launches) == 1  # the fused elementwise kernel


def test_host_code_computes_log1p_and_expm1_precisely(fake_driver: FakeDriver) -> None:
    # 0-d arithmetic stays host code: it must be as precise as the CPU backend's
    # (upstream lowers log1p to log(1 + x) and expm1 to exp(x) - 1).
    program = """
    func.func @main(%x: tensor<f32>, %y: tensor<f64>) -> (tensor<f32>, tensor<f64>) {
      %0 = stablehlo.log_plus_one %x : tensor<f32>
      %1 = stablehlo.exponential_minus_one %y : tensor<f64>
      return %0, %1 : tensor<f32>, tensor<f64>
    }
    """
    x, y = np.float32(1.2345e-5), np.float64(3.5e-12)
    got_log, got_exp = shlo.compile(program, target="cuda")(np.array(x), np.array(y))
    assert not fake_driver.launches  # all host code
    np.testing.assert_array_max_ulp(got_log, np.log1p(x), maxulp=1)
    np.testing.assert_array_max_ulp(got_exp, np.expm1(y), maxulp=1)


def test_a_dynamic_entry_takes_gpu_arrays(fake_driver: FakeDriver) -> None:
    program = """
    func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
      %0 = stablehlo.tanh %x : tensor<?xf32>
      return %0 : tensor<?xf32>
    }
    """
    executable = shlo.compile(program, target="cuda")
    result = executable(on_device(fake_driver, np.zeros(5, np.float32)))
    assert isinstance(result, DeviceArray) and result.shape == (5,)
    with pytest.raises(ValueError, match=r"expected shape \?, got 2x3"):
        executable(on_device(fake_driver, np.zeros((2, 3), np.float32)))
    assert not _exports
