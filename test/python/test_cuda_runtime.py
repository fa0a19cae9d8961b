"""The CUDA host runtime without a GPU: host modules lowered by gpu-to-llvm, run on the FakeDriver.

The FakeDriver records each launch with the parameter values it reads through
the kernel's PTX signature, so these tests check what a real kernel would
receive: the memref descriptors (pointers, offset, sizes, strides) and the
scalars, in the order of the PTX ``.entry`` parameters.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from shlo._mlir_compat import ir, new_context
from shlo.backends.cuda.driver import (
    CudaDriver,
    DriverError,
    FakeDriver,
    LaunchRecord,
    available_driver,
    parse_ptx_entries,
)
from shlo.backends.cuda.runtime import CudaFunction
from shlo.diagnostics import ShloError
from shlo.io import module_to_bytecode
from shlo.pipeline import run_pipeline

HOST_PIPELINE = [
    "shlo-pack-entry-arguments",
    "func.func(gpu-async-region)",
    "finalize-memref-to-llvm{use-generic-functions=true}",
    "gpu-to-llvm",
    "convert-arith-to-llvm",
    "convert-func-to-llvm",
    "reconcile-unrealized-casts",
]

PTX_HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"
# A rank-2 memref descriptor as gpu-to-llvm passes it: allocated and aligned
# pointers, offset, 2 sizes, 2 strides.
DESCRIPTOR_2D = ", ".join(f".param .u64 {{name}}_{i}" for i in range(7))


def ptx_kernel(name: str, params: str) -> str:
    return PTX_HEADER + f".visible .entry {name}(\n{params}\n)\n{{\n\tret;\n}}\n"


# The kernel of most tests:
# k(memref<4x8xf32> in, memref<4x8xf32> tmp, f32 scale, i32 smem, index n).
KERNEL_PARAMS = ",\n".join(
    [
        DESCRIPTOR_2D.format(name="in"),
        DESCRIPTOR_2D.format(name="tmp"),
        ".param .f32 scale",
        ".param .u32 smem",
        ".param .u64 n",
    ]
)


def mlir_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\0A")


def host_module(ptx: str, body: str, kernel: str = "k", object_attr: str | None = None) -> bytes:
    """The LLVM-dialect host module (bytecode) of @main(in, out: memref<4x8xf32>) running ``body``."""
    obj = (
        object_attr or f'#gpu.object<#nvvm.target<chip = "sm_80">, assembly = "{mlir_string(ptx)}">'
    )
    text = f"""
module attributes {{gpu.container_module}} {{
  gpu.binary @kernels [{obj}]
  func.func @main(%in: memref<4x8xf32>, %out: memref<4x8xf32>) {{
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %n = arith.constant 7 : index
    %scale = arith.constant 2.5 : f32
    %smem = arith.constant 96 : i32
    {body.replace("@KERNEL", f"@kernels::@{kernel}")}
    return
  }}
}}
"""
    module = ir.Module.parse(text, new_context())
    run_pipeline(module, HOST_PIPELINE, "<test>")
    return module_to_bytecode(module)


LAUNCH_BODY = """
    %tmp = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
    memref.copy %in, %tmp : memref<4x8xf32> to memref<4x8xf32>
    gpu.launch_func @KERNEL blocks in (%c4, %c2, %c3) threads in (%c3, %c2, %c1)
        dynamic_shared_memory_size %smem
        args(%in : memref<4x8xf32>, %tmp : memref<4x8xf32>, %scale : f32, %smem : i32,
             %n : index)
    memref.copy %tmp, %out : memref<4x8xf32> to memref<4x8xf32>
    memref.dealloc %tmp : memref<4x8xf32>
"""

TYPES = (["tensor<4x8xf32>"], ["tensor<4x8xf32>"])


def cuda_function(code: bytes, driver: FakeDriver) -> CudaFunction:
    return CudaFunction(code, *TYPES, driver=driver)


def test_launch_passes_descriptors_and_scalars_in_ptx_order():
    driver = FakeDriver()
    function = cuda_function(host_module(ptx_kernel("k", KERNEL_PARAMS), LAUNCH_BODY), driver)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    (y,) = function([x])

    # Host code ran on managed memory: in -> tmp -> out.
    np.testing.assert_array_equal(y, x)
    [launch] = driver.launches
    assert isinstance(launch, LaunchRecord)
    assert (launch.kernel, launch.grid, launch.block) == ("k", (4, 2, 3), (3, 2, 1))
    assert launch.shared_bytes == 96
    assert len(launch.params) == 17
    in_pointer, tmp_pointer = launch.params[0], launch.params[7]
    assert launch.params[:7] == (in_pointer, in_pointer, 0, 4, 8, 8, 1)
    assert launch.params[7:14] == (tmp_pointer, tmp_pointer, 0, 4, 8, 8, 1)
    assert launch.params[14:] == (2.5, 96, 7)
    assert isinstance(launch.params[14], float) and isinstance(launch.params[16], int)
    # The input descriptor points at the managed buffer that holds the input ...
    assert driver.allocation_size(in_pointer) == 128
    assert driver.read(in_pointer, 128) == x.tobytes()
    # ... and the temporary is managed memory from the host module's own allocator
    # (which asks for 64 bytes more, to align the pointer itself).
    assert any(p <= tmp_pointer and tmp_pointer + 128 <= p + n for p, n in driver.allocated[2:])
    assert tmp_pointer != in_pointer and tmp_pointer % 64 == 0
    # A launch on its own stream, synchronized and destroyed by the host code.
    assert launch.stream != 0

    # The buffers are reused, the temporary too (freed by the host code, kept by the
    # runtime): the second call allocates nothing, on the same stream.
    allocations = len(driver.allocated)
    (y2,) = function([x + 1])
    np.testing.assert_array_equal(y2, x + 1)
    assert len(driver.allocated) == allocations
    assert len(driver.launches) == 2
    assert driver.launches[1].params[7] == tmp_pointer
    assert driver.launches[1].stream == launch.stream

    function.close()
    assert driver.live_allocations == 0
    assert driver.unloaded_modules == 1 and not driver.modules
    with pytest.raises(ShloError, match="closed"):
        function([x])


def test_memset_memcpy_and_gpu_alloc_run_on_host_memory():
    body = """
    %buffer = gpu.alloc () : memref<4x8xf32>
    gpu.memset %buffer, %scale : memref<4x8xf32>, f32
    gpu.memcpy %out, %buffer : memref<4x8xf32>, memref<4x8xf32>
    gpu.dealloc %buffer : memref<4x8xf32>
"""
    driver = FakeDriver()
    function = cuda_function(host_module(ptx_kernel("k", KERNEL_PARAMS), body), driver)
    (y,) = function([np.zeros((4, 8), np.float32)])
    np.testing.assert_array_equal(y, np.full((4, 8), 2.5, np.float32))
    assert not driver.launches
    function.close()
    assert driver.live_allocations == 0


def test_parameter_count_mismatch_raises():
    # The kernel takes bare pointers, but gpu-to-llvm passes whole descriptors.
    params = ".param .u64 in, .param .u64 tmp, .param .f32 scale, .param .u32 smem, .param .u64 n"
    driver = FakeDriver()
    function = cuda_function(host_module(ptx_kernel("k", params), LAUNCH_BODY), driver)
    with pytest.raises(DriverError, match="k takes 5 parameters, the launch passes 17"):
        function([np.zeros((4, 8), np.float32)])
    assert not driver.launches


def test_parameter_size_mismatch_raises():
    # The kernel reads a double where the host passes a float: the i32 after it
    # is then 4 bytes later than where the host put it. (Sizes are seen through
    # offsets: a difference that alignment padding absorbs, or in the last
    # parameter, is not.)
    params = KERNEL_PARAMS.replace(".param .f32 scale", ".param .f64 scale")
    driver = FakeDriver()
    function = cuda_function(host_module(ptx_kernel("k", params), LAUNCH_BODY), driver)
    with pytest.raises(
        DriverError, match=r"before parameter smem \(u32\) take 116 bytes, the kernel's take 120"
    ):
        function([np.zeros((4, 8), np.float32)])
    assert not driver.launches


def test_unknown_kernel_raises_at_the_call():
    driver = FakeDriver()
    code = host_module(ptx_kernel("k", KERNEL_PARAMS), LAUNCH_BODY, kernel="missing")
    function = cuda_function(code, driver)
    with pytest.raises(DriverError, match="no kernel 'missing'"):
        function([np.zeros((4, 8), np.float32)])
    assert not driver.launches


def test_cubin_is_refused_by_the_fake_when_loading():
    cubin = '#gpu.object<#nvvm.target<chip = "sm_80">, bin = "\\7FELF fake cubin">'
    code = host_module("", LAUNCH_BODY, object_attr=cubin)
    with pytest.raises(DriverError, match="PTX text only"):
        cuda_function(code, FakeDriver())


def test_inputs_are_checked_before_the_call():
    driver = FakeDriver()
    function = cuda_function(host_module(ptx_kernel("k", KERNEL_PARAMS), LAUNCH_BODY), driver)
    with pytest.raises(ShloError, match="expected 1 inputs"):
        function([])
    with pytest.raises(ShloError, match=r"input 0 is \(8, 4\) float32"):
        function([np.zeros((8, 4), np.float32)])
    with pytest.raises(ShloError, match="float64"):
        function([np.zeros((4, 8), np.float64)])
    assert not driver.launches and driver.live_allocations == 0


def test_parse_ptx_entries_reads_types_alignment_and_arrays():
    ptx = PTX_HEADER + (
        "// .entry commented(.param .u32 x)\n"
        ".visible .func helper(.param .b32 y) { ret; }\n"
        ".visible .entry first(\n"
        "  .param .u64 .ptr .global .align 16 first_param_0, // a pointer\n"
        "  .param .s32 first_param_1,\n"
        "  .param .align 8 .b8 first_param_2[24],\n"
        "  .param .f16 first_param_3\n"
        ")\n.maxntid 128, 1, 1\n{ ret; }\n"
        ".entry second()\n{ ret; }\n"
    )
    entries = parse_ptx_entries(ptx)
    assert list(entries) == ["first", "second"]
    first = entries["first"]
    assert [(p.name, p.ptx_type, p.size, p.alignment) for p in first.params] == [
        ("first_param_0", "u64", 8, 8),
        ("first_param_1", "s32", 4, 4),
        ("first_param_2", "b8", 24, 8),
        ("first_param_3", "f16", 2, 2),
    ]
    assert first.offsets() == [0, 8, 16, 40]
    assert entries["second"].params == ()


def launch_by_hand(driver: FakeDriver, function: int, fields: list[tuple[str, object]]) -> None:
    """Launch with a void** array pointing into a C struct of ``fields`` (ctypes type code, value)."""
    types = {"q": ctypes.c_int64, "i": ctypes.c_int32, "f": ctypes.c_float}

    class Arguments(ctypes.Structure):
        _fields_ = [(f"f{i}", types[code]) for i, (code, _) in enumerate(fields)]

    arguments = Arguments(*(value for _, value in fields))
    base = ctypes.addressof(arguments)
    pointers = (ctypes.c_void_p * len(fields))(
        *(base + getattr(Arguments, f"f{i}").offset for i in range(len(fields)))
    )
    driver.launch_kernel(
        function, (2, 1, 1), (32, 1, 1), 0, 0, ctypes.addressof(pointers), len(fields)
    )


def test_fake_launch_unpacks_by_signature_and_checks_it():
    driver = FakeDriver()
    ptx = ptx_kernel("s", ".param .u64 p, .param .s32 i, .param .f32 x, .param .u64 n")
    function = driver.get_function(driver.load_module(ptx.encode() + b"\0"), "s")

    launch_by_hand(driver, function, [("q", 0x1234), ("i", -5), ("f", 0.5), ("q", 9)])
    assert driver.launches[-1].params == (0x1234, -5, 0.5, 9)
    assert driver.launches[-1].grid == (2, 1, 1) and driver.launches[-1].block == (32, 1, 1)

    with pytest.raises(DriverError, match="takes 4 parameters, the launch passes 3"):
        launch_by_hand(driver, function, [("q", 1), ("i", 2), ("f", 3.0)])
    with pytest.raises(
        DriverError, match=r"before parameter x \(f32\) take 16 bytes, the kernel's take 12"
    ):
        launch_by_hand(driver, function, [("q", 1), ("q", 2), ("f", 3.0), ("q", 4)])
    assert len(driver.launches) == 1


def test_fake_memory_is_checked():
    driver = FakeDriver()
    pointer = driver.allocate_managed(8)
    driver.memset16(pointer, 0xABCD, 4, 0)
    assert driver.read(pointer, 8) == struct.pack("<4H", *[0xABCD] * 4)
    with pytest.raises(DriverError, match="not in an allocation"):
        driver.memset32(pointer, 0, 3, 0)
    driver.free(pointer)
    with pytest.raises(DriverError, match="not an allocation"):
        driver.free(pointer)


def _libcuda_loads() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(_libcuda_loads(), reason="this machine has a CUDA driver")
def test_available_driver_says_what_is_missing():
    with pytest.raises(ShloError) as raised:
        available_driver()
    message = str(raised.value)
    assert message == (
        "no CUDA driver: libcuda.so.1 could not be loaded; "
        "target='cuda' needs an NVIDIA GPU and its driver"
    )
    assert "\n" not in message


def test_one_driver_per_process_and_device(monkeypatch: pytest.MonkeyPatch) -> None:
    import shlo.backends.cuda.driver as cuda_driver

    made: list[int] = []

    def new_driver(ordinal: int) -> FakeDriver:
        made.append(ordinal)
        if ordinal == 3:
            raise ShloError("no usable CUDA device: ordinal 3")
        return FakeDriver()

    monkeypatch.setattr(cuda_driver, "_drivers", {})
    monkeypatch.setattr(cuda_driver, "_new_driver", new_driver)
    first = cuda_driver.available_driver()
    assert cuda_driver.available_driver() is first
    assert cuda_driver.available_driver(1) is not first
    for _ in range(2):  # a failure is not kept: the next call tries again
        with pytest.raises(ShloError, match="ordinal 3"):
            cuda_driver.available_driver(3)
    assert made == [0, 1, 3, 3]


@pytest.mark.skipif(_libcuda_loads(), reason="the calls would reach a real driver")
def test_cuda_driver_arguments_pass_cuda_python_conversion():
    """Each CudaDriver call gets as far as loading libcuda: cuda-python took its arguments."""
    cuda = pytest.importorskip("cuda.bindings.driver")
    from cuda.pathfinder import DynamicLibNotFoundError

    class ContextAlwaysCurrent:
        def __getattr__(self, name: str) -> object:
            return getattr(cuda, name)

        def cuCtxSetCurrent(self, context: object) -> tuple[object]:
            return (cuda.CUresult.CUDA_SUCCESS,)

    driver = CudaDriver.__new__(CudaDriver)  # no cuInit: there is no driver
    driver._cuda, driver._context = ContextAlwaysCurrent(), cuda.CUcontext(0x10)
    driver._device = cuda.CUdevice(0)
    driver._start_bookkeeping()
    calls = [
        lambda: driver.load_module(b"\x7fELF"),
        lambda: driver.load_module(b".version 8.0", jit_optimization_level=3),
        lambda: driver.unload_module(0x10),
        lambda: driver.get_function(0x10, "k"),
        lambda: driver.launch_kernel(0x10, (1, 2, 3), (4, 5, 6), 64 * 1024, 0, 0x20, 2),
        lambda: driver.launch_kernel(0x10, (1, 2, 3), (4, 5, 6), 0, 0x30, 0x20, 2),
        driver.create_stream,
        lambda: driver.synchronize_stream(0x10),
        lambda: driver.destroy_stream(0x10),
        driver.create_event,
        lambda: driver.record_event(0x10, 0x20),
        lambda: driver.synchronize_event(0x10),
        lambda: driver.destroy_event(0x10),
        lambda: driver.wait_event(0x10, 0x20),
        lambda: driver.allocate_managed(256),
        lambda: driver.free(0x100),
        lambda: driver.memcpy(0x100, 0x200, 16, 0),
        lambda: driver.memset32(0x100, 0xFFFFFFFF, 4, 0),
        lambda: driver.memset16(0x100, 0xFFFF, 4, 0),
        lambda: driver.allocate_device(256),
        lambda: driver.copy_to_host(0x100, 0x200, 16),
        driver.synchronize_context,
        driver.architecture,
    ]
    for call in calls:
        with pytest.raises(DynamicLibNotFoundError):
            call()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (b"not mlir", "does not parse"),
        (b"func.func @main() { return }", "does not translate"),
        (b"llvm.func @other() { llvm.return }", "no function main"),
    ],
)
def test_bad_host_modules_raise_shlo_error(code: bytes, message: str):
    with pytest.raises(ShloError, match=message):
        CudaFunction(code, [], [], FakeDriver())
