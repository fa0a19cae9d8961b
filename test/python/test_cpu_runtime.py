"""Loading CPU code: type parsing and linking (shlo.backends.cpu.runtime)."""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import runtime
from shlo.backends.cpu.lowering import lower_to_object
from shlo.backends.cpu.pipeline import CpuPipeline

TYPES = [
    "tensor<f32>",
    "tensor<2x3xf32>",
    "tensor<0x5xi1>",
    "tensor<4x1x2xcomplex<f64>>",
    "tensor<3xf8E4M3FNUZ>",
    "tensor<7xui4>",
    "tensor<2x!quant.uniform<i8:f32, 1.0>>",
]


@pytest.mark.parametrize("text", TYPES)
def test_array_types_parse_as_mlir_parses_them(text):
    context = new_context()
    tensor_type = ir.RankedTensorType(ir.Type.parse(text, context))
    parsed = runtime.ArrayType.parse(text)
    assert parsed.shape == tuple(tensor_type.shape)
    assert parsed.element_type == str(tensor_type.element_type)


PROGRAM = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %e = stablehlo.exponential %x : tensor<64xf32>
  %s = stablehlo.sine %e : tensor<64xf32>
  return %s : tensor<64xf32>
}
"""


@pytest.fixture(scope="module")
def object_code() -> bytes:
    return lower_to_object(PROGRAM, "main", None, CpuPipeline(threads=1)).object_code


def _run(object_code: bytes) -> np.ndarray:
    function = runtime.LoadedFunction(object_code, ["tensor<64xf32>"], ["tensor<64xf32>"])
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    (result,) = function([x])
    np.testing.assert_allclose(result, np.sin(np.exp(x)), rtol=1e-5, atol=1e-6)
    return result


def _record_links(monkeypatch) -> list[tuple[list[str], int]]:
    """Each command the runtime runs from now on, with its exit status."""
    links = []
    real_run = subprocess.run

    def recording_run(command, *args, **kwargs):
        ran = real_run(command, *args, **kwargs)
        links.append((command, ran.returncode))
        return ran

    monkeypatch.setattr(runtime.subprocess, "run", recording_run)
    return links


def _assert_stub_names(stub: str, library: str) -> None:
    """The stub has no symbols; its name is the real library's path."""
    dynamic = subprocess.run(["readelf", "-d", stub], capture_output=True, text=True)
    if dynamic.returncode == 0:
        assert f"[{library}]" in dynamic.stdout


def test_code_is_linked_by_ld_directly(object_code, monkeypatch):
    monkeypatch.setattr(runtime, "_LOAD_WITHOUT_LINKER", False)
    if runtime._direct_link(runtime.linker()) is None:
        pytest.skip("the C compiler driver does not name its linker")
    runtime._link_commands(runtime.linker(), "a.o", "a.so", None)  # builds its files once
    links = _record_links(monkeypatch)
    _run(object_code)
    assert [command[0] for command, _ in links] == [runtime._direct_link(runtime.linker())[0]]


def test_threaded_code_links_against_a_stub_of_openmp(monkeypatch):
    monkeypatch.setattr(runtime, "_LOAD_WITHOUT_LINKER", False)
    driver = runtime.linker()
    if runtime._direct_link(driver) is None or runtime.load_openmp() is None:
        pytest.skip("needs ld named by the driver and intel-openmp")
    large = PROGRAM.replace("64xf32", "262144xf32")  # large enough for 2 threads
    threaded = lower_to_object(large, "main", None, CpuPipeline(threads=2)).object_code
    assert runtime._uses_openmp(threaded)
    openmp = runtime.load_openmp()
    stub = runtime._needed_stub(driver, openmp)  # built once per process
    runtime._link_commands(driver, "a.o", "a.so", openmp)  # and the link's other files
    links = _record_links(monkeypatch)
    function = runtime.LoadedFunction(threaded, ["tensor<262144xf32>"], ["tensor<262144xf32>"])
    x = np.linspace(-2, 2, 262144, dtype=np.float32)
    (result,) = function([x])  # the loader found OpenMP's functions
    np.testing.assert_allclose(result, np.sin(np.exp(x)), rtol=1e-5, atol=1e-6)
    [(command, returncode)] = links  # the first command linked
    assert returncode == 0 and stub in command and openmp not in command
    _assert_stub_names(stub, openmp)


def test_code_needs_the_math_library_through_a_stub(monkeypatch):
    monkeypatch.setattr(runtime, "_LOAD_WITHOUT_LINKER", False)
    driver = runtime.linker()
    direct = runtime._direct_link(driver)
    if direct is None:
        pytest.skip("the C compiler driver does not name its linker")
    math = runtime._shared_library_behind(direct[1][0])
    if math is None:
        pytest.skip("the C library's libm.so names no shared library")
    program = """
func.func @main(%x: tensor<8xf64>) -> tensor<8xf64> {
  %s = stablehlo.sine %x : tensor<8xf64>
  return %s : tensor<8xf64>
}"""
    code = lower_to_object(program, "main", None, CpuPipeline(threads=1)).object_code
    assert b"sin" in code  # f64 sine is the C library's
    stub = runtime._needed_stub(driver, math)  # built once per process
    links = _record_links(monkeypatch)
    function = runtime.LoadedFunction(code, ["tensor<8xf64>"], ["tensor<8xf64>"])
    x = np.linspace(-3, 3, 8)
    (result,) = function([x])  # the loader found sin in the real library
    np.testing.assert_allclose(result, np.sin(x), rtol=1e-15)
    [(command, returncode)] = links  # the first command linked
    assert returncode == 0 and stub in command and direct[1][0] not in command
    _assert_stub_names(stub, math)


def test_a_failing_direct_link_falls_back_to_the_driver(object_code, monkeypatch):
    monkeypatch.setattr(runtime, "_LOAD_WITHOUT_LINKER", False)
    driver = runtime.linker()
    monkeypatch.setattr(runtime, "_direct_link", lambda _: ("false", []))
    assert [command[0] for command in runtime._link_commands(driver, "a.o", "a.so", None)] == [
        "false",
        driver,
    ]
    _run(object_code)


# Runs a threaded program in a fresh process, where the OpenMP runtime starts;
# KMP_SETTINGS=1 makes the runtime print its settings to stderr.
THREADED = """
import numpy as np, shlo
exe = shlo.compile('''
func.func @main(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %e = stablehlo.exponential %x : tensor<256x1024xf32>
  return %e : tensor<256x1024xf32>
}''', threads=2, isolate=False)
x = np.ones((256, 1024), np.float32)
np.testing.assert_allclose(exe(x), np.exp(x), rtol=1e-6)
"""


@pytest.mark.parametrize(("environment", "expected"), [({}, "2"), ({"KMP_USE_YIELD": "1"}, "1")])
def test_openmp_threads_yield_only_when_oversubscribed(environment, expected):
    if runtime.openmp_library() is None:
        pytest.skip("intel-openmp is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KMP_")}
    env.update(environment, KMP_SETTINGS="1")
    ran = subprocess.run(
        [sys.executable, "-c", THREADED], env=env, capture_output=True, text=True, check=True
    )
    settings = [
        line.split("=")[1] for line in ran.stderr.split() if line.startswith("KMP_USE_YIELD=")
    ]
    # The last print is the one in force; the user's setting wins over shlo's default.
    assert settings and settings[-1] == expected, ran.stderr[-2000:]


def _arrays_of_every_layout() -> list[np.ndarray]:
    base = np.arange(60, dtype=np.float64).reshape(6, 10)
    read_only = np.ones((3, 4), np.int8)
    read_only.flags.writeable = False
    return [
        base,
        base[2:, 3:],  # a view: its data starts inside base's
        base.T,
        base[::2, ::3],
        read_only,  # as numpy arrays of jax arrays are
        np.array(7, np.int32),
        np.empty((0, 5), np.float32),
        np.ones(1 << 20, np.float32),  # mmap'd memory
        runtime.aligned_empty((5, 3), np.dtype(np.float32), 60),
    ]


def test_data_pointer_is_the_address_numpy_reports():
    for array in _arrays_of_every_layout():
        assert runtime.data_pointer(array) == array.__array_interface__["data"][0]


def test_data_pointers_are_read_without_array_interface():
    # __array_interface__ builds a dict per array (1 us): a small Flax BERT
    # with 43 arrays a call spent longer there than in its compiled code.
    assert runtime.data_pointer is not runtime._interface_data_pointer


def test_results_start_on_a_cache_line():
    for shape in [(), (1,), (3, 5), (1000,)]:
        nbytes = int(np.prod(shape)) * 4
        array = runtime.aligned_empty(shape, np.dtype(np.float32), nbytes)
        assert array.shape == shape and array.dtype == np.float32
        assert array.__array_interface__["data"][0] % runtime.RESULT_ALIGNMENT == 0


DOUBLE_LARGE = """
func.func @main(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<4xf32>) {
  %0 = stablehlo.add %x, %x : tensor<65536xf32>
  %1 = stablehlo.slice %x [0:4] : (tensor<65536xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<65536xf32>, tensor<4xf32>
}
"""


def test_a_large_result_reuses_a_buffer_only_once_nothing_refers_to_it():
    # Fresh memory for each result page-faults on its first write; a buffer
    # is handed out again only when no array (slice, memoryview, DLPack
    # consumer) still reads it, so no caller ever sees its data overwritten.
    import shlo

    f = shlo.compile(DOUBLE_LARGE, threads=1)
    x = np.arange(65536, dtype=np.float32)

    def address(array: np.ndarray) -> int:
        return array.__array_interface__["data"][0]

    first, small = f(x)
    second, _ = f(x)  # the first is held: another buffer
    kept = {address(first), address(second)}
    assert len(kept) == 2
    third, _ = f(x)  # both held: a buffer that is not kept
    assert address(third) not in kept
    del first, second, third, small
    holders = {
        "slice": lambda a: a[10:],
        "memoryview": memoryview,
        "dlpack": np.from_dlpack,
        "reshape": lambda a: a.reshape(256, 256),
    }
    for name, hold in holders.items():
        result, _ = f(x)
        held_address = address(result)
        assert held_address in kept, name  # released by the step before
        held = hold(result)
        expected = np.array(held, copy=True)
        del result
        for _ in range(3):  # neither kept buffer is this one's while it is held
            other, _ = f(x + 1)
            assert address(other) != held_address, name
            del other
        np.testing.assert_array_equal(np.asarray(held), expected, err_msg=name)
        del held
    assert runtime.ResultBuffers.reused(65536 * 4) and not runtime.ResultBuffers.reused(16)


# Loading without a linker (object_loader): the host places the object code in
# memory itself; what it cannot load goes to ld.

SHARDED = """
func.func @main(%x: tensor<64x96xf32>, %w: tensor<96x32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>) {
  %t = stablehlo.tanh %x : tensor<64x96xf32>
  %m = stablehlo.dot_general %t, %w, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %e = stablehlo.exponential %m : tensor<64x32xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<64x96xf32>, tensor<f32>) -> tensor<64xf32>
  return %e, %s : tensor<64x32xf32>, tensor<64xf32>
}
"""

# (program, threads, inputs): one object; OpenMP's calls; the C library's
# sin for f64; an archive of shards that call each other.
LOADABLE = {
    "elementwise": (PROGRAM, 1, [np.linspace(-2, 2, 64, dtype=np.float32)]),
    "threaded": (
        PROGRAM.replace("64xf32", "262144xf32"),
        2,
        [np.linspace(-2, 2, 262144, dtype=np.float32)],
    ),
    "f64 sine": (
        PROGRAM.replace("64xf32", "8xf64").replace(
            "%e = stablehlo.exponential %x", "%e = stablehlo.negate %x"
        ),
        1,
        [np.linspace(-3, 3, 8)],
    ),
    "shards": (
        SHARDED,
        2,
        [
            np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32),
            np.random.default_rng(1).standard_normal((96, 32)).astype(np.float32) / 16,
        ],
    ),
}


def _lowered(program: str, threads: int, monkeypatch):
    from shlo.backends.cpu import parallel_codegen

    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    monkeypatch.setenv("SHLO_THREADS", str(threads))
    return lower_to_object(program, "main", None, CpuPipeline(threads=threads))


@pytest.mark.parametrize("name", LOADABLE)
def test_code_loaded_without_a_linker_computes_what_linked_code_does(name, monkeypatch):
    program, threads, inputs = LOADABLE[name]
    lowered = _lowered(program, threads, monkeypatch)
    if name == "threaded":
        assert runtime._uses_openmp(lowered.object_code)
    if name == "shards":
        assert lowered.object_code.startswith(runtime._ARCHIVE_MAGIC)
    links = _record_links(monkeypatch)
    loaded = runtime.LoadedFunction(lowered.object_code, lowered.input_types, lowered.result_types)
    got = loaded(inputs)
    assert links == []  # nothing was linked
    monkeypatch.setattr(runtime, "_LOAD_WITHOUT_LINKER", False)
    linked = runtime.LoadedFunction(lowered.object_code, lowered.input_types, lowered.result_types)
    want = linked(inputs)
    assert [command[0] for command, _ in links][:1] != []  # this one was
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


FOREIGN_OBJECT = r"""
#include <math.h>
float scale = 3.0f;
void _mlir_main(void **arguments) {
  float **buffers = *(float ***)arguments[0];
  for (int i = 0; i < 4; ++i) buffers[1][i] = sinf(buffers[0][i]) * scale;
}
"""


def test_an_object_the_loader_does_not_handle_is_linked(tmp_path, monkeypatch):
    # Compiled as position-independent code, the object refers to sinf and
    # scale through the PLT and the GOT, which only a linker makes.
    from shlo.backends.cpu import object_loader

    driver = runtime.linker()
    if driver is None:
        pytest.skip("needs a C compiler")
    path = tmp_path / "foreign.o"
    subprocess.run(
        [driver, "-c", "-O1", "-fPIC", "-x", "c", "-", "-o", str(path)],
        input=FOREIGN_OBJECT.encode(),
        check=True,
    )
    code = path.read_bytes()
    assert object_loader.load(code, lambda name: None) is None
    links = _record_links(monkeypatch)
    function = runtime.LoadedFunction(code, ["tensor<4xf32>"], ["tensor<4xf32>"])
    x = np.array([0.0, 0.5, 1.0, 2.0], np.float32)
    (result,) = function([x])
    np.testing.assert_allclose(result, np.sin(x) * 3, rtol=1e-6)
    assert len(links) >= 1 and links[0][1] == 0


def test_unloading_code_returns_the_blocks_the_shared_guard_kept(object_code, monkeypatch):
    driver = runtime.linker()
    if driver is None:
        pytest.skip("needs a C compiler")
    guard = runtime._shared_guard(driver)
    guard.shlo_kept_bytes.restype = ctypes.c_size_t
    guard._mlir_memref_to_llvm_alloc.restype = ctypes.c_void_p
    guard._mlir_memref_to_llvm_free.argtypes = [ctypes.c_void_p]
    links = _record_links(monkeypatch)
    function = runtime.LoadedFunction(object_code, ["tensor<64xf32>"], ["tensor<64xf32>"])
    assert links == []  # loaded without a linker, so through the shared guard
    guard._mlir_memref_to_llvm_free(guard._mlir_memref_to_llvm_alloc(ctypes.c_size_t(1 << 20)))
    assert guard.shlo_kept_bytes() >= 1 << 20  # kept for the next allocation of its size
    del function
    gc.collect()
    assert guard.shlo_kept_bytes() == 0


def test_damaged_object_code_is_declined_or_loaded_never_a_crash(object_code):
    # The loader writes only inside its own mapping: each bounds check it
    # misses is an IndexError from numpy, never a write elsewhere.
    from shlo.backends.cpu import object_loader

    resolve = functools.partial(runtime._symbol_address, ctypes.CDLL(None))
    rng = np.random.default_rng(0)
    declined = 0
    for _ in range(300):
        damaged = bytearray(object_code)
        for at in rng.integers(0, len(damaged), size=int(rng.integers(1, 4))):
            damaged[at] = int(rng.integers(0, 256))
        image = object_loader.load(bytes(damaged), resolve)
        if image is None:
            declined += 1
        else:
            image.release()
    assert declined > 0


@pytest.mark.skipif(runtime.linker() is None, reason="no C compiler")
def test_linking_is_prepared_with_the_kernels_loaded() -> None:
    # In a fresh process: the thread a compilation starts leaves the kernels (and
    # OpenMP) loaded, which the first program calling a kernel loaded before.
    script = (
        "from shlo.backends.cpu import precompiled, runtime\n"
        "assert precompiled.library.cache_info().currsize == 0\n"
        "runtime.prepare_linking_in_background()\n"
        "runtime._link_setup.join()\n"
        "assert precompiled.library.cache_info().currsize == 1\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)


# Rows normalized in a loop: code whose loops LLVM's strength reduction rewrites.
_ROW_LOOPS = """
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1]
    : (tensor<64x256xf32>, tensor<f32>) -> tensor<64xf32>
  %b = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<64xf32>) -> tensor<64x256xf32>
  %r = stablehlo.subtract %x, %b : tensor<64x256xf32>
  return %r : tensor<64x256xf32>
}
"""


def _object_code_with_options(options: str) -> str:
    """The digests of the code for _ROW_LOOPS, compiled twice in a new process
    whose LLVM gets ``options`` (a tuple's repr)."""
    compile_twice = f"(lower_to_object({_ROW_LOOPS!r}, 'main', None) for _ in range(2))"
    script = (
        "import hashlib\n"
        "from shlo import _mlir_compat\n"
        f"_mlir_compat.LLVM_OPTIONS = {options}\n"
        "from shlo.backends.cpu.lowering import lower_to_object\n"
        f"print(*{{hashlib.sha256(low.object_code).hexdigest() for low in {compile_twice}}})\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    return ran.stdout.strip()


def test_llvm_options_reach_the_code_generator():
    """LLVM reads ``LLVM_OPTIONS`` before it generates code: without loop strength
    reduction the same module gives other object code (LLVM drops an option
    it does not know without a word), and a process's second compile the same."""
    from shlo._mlir_compat import LLVM_OPTIONS

    assert "-disable-lsr" in LLVM_OPTIONS
    default = _object_code_with_options(repr(LLVM_OPTIONS))
    assert len(default.split()) == 1  # compiled twice in one process, the same code
    assert default != _object_code_with_options("()")


def test_the_guards_bf16_rounding_is_ml_dtypes():
    # LLVM calls __truncsfbf2 on hosts without AVX512-BF16 (the guard defines it).
    driver = runtime.linker()
    if driver is None:
        pytest.skip("needs a C compiler")
    truncate = runtime._shared_guard(driver).__truncsfbf2
    truncate.restype, truncate.argtypes = ctypes.c_float, [ctypes.c_float]
    rng = np.random.default_rng(0)
    bits = np.concatenate(
        [
            rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32),
            # ties to even, both ways; the largest finite; inf; quiet and signalling NaNs
            np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F800000, 0xFFC00001, 0x7F800001],
                     np.uint32),
        ]
    )  # fmt: skip
    values = bits.view(np.float32)
    got = np.array(
        [np.float32(truncate(v)).view(np.uint32) & 0xFFFF for v in values], np.uint32
    ).astype(np.uint16)
    want = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    nan = np.isnan(values)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    # NaNs keep their sign and upper payload, and are quiet.
    np.testing.assert_array_equal(got[nan], ((bits[nan] >> 16) | 0x40).astype(np.uint16))
