"""target="cuda" end to end without a GPU: shlo.compile, shlo-compile and the fake driver.

The fake driver runs the host code on host memory and records each kernel
launch; it checks the launch's parameters against the PTX entry signature.
Kernels do not run, so results are not compared here (the GPU runs of
docs/cuda.md do that).
"""

from __future__ import annotations

import ctypes.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo import ShloError

pytest.importorskip("llvmlite")
from shlo.backends.cuda import driver as cuda_driver
from shlo.backends.cuda.ptx import find_ptxas

pytestmark = pytest.mark.skipif(find_ptxas() is None, reason="ptxas (the cuda extra) is missing")

BIN = Path(sys.executable).parent
SOFTMAX_ROWS = """
func.func @main(%x: tensor<6x300xf32>, %b: tensor<300xf32>) -> (tensor<6x300xf32>, tensor<6xf32>) {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<300xf32>) -> tensor<6x300xf32>
  %0 = stablehlo.add %x, %bb : tensor<6x300xf32>
  %1 = stablehlo.exponential %0 : tensor<6x300xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<6x300xf32>, tensor<f32>) -> tensor<6xf32>
  return %1, %s : tensor<6x300xf32>, tensor<6xf32>
}
"""


def has_gpu() -> bool:
    return ctypes.util.find_library("cuda") is not None


@pytest.fixture
def fake_driver(monkeypatch: pytest.MonkeyPatch) -> cuda_driver.FakeDriver:
    driver = cuda_driver.FakeDriver()
    monkeypatch.setattr(cuda_driver, "available_driver", lambda: driver)
    return driver


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_launches_match_the_ptx_entries(fake_driver: cuda_driver.FakeDriver, arch: str) -> None:
    executable = shlo.compile(SOFTMAX_ROWS, target="cuda", arch=arch)
    assert executable.target == "cuda"
    outputs = executable(np.ones((6, 300), np.float32), np.zeros(300, np.float32))
    assert [o.shape for o in outputs] == [(6, 300), (6,)]
    launches = fake_driver.launches
    # One fused add+exp kernel and one for the sum, a block per row, which starts
    # from the init value itself (no kernel fills the result first).
    assert len(launches) == 2
    assert (launches[1].grid, launches[1].block) == ((6, 1, 1), (256, 1, 1))
    entries = {
        name: entry for module in fake_driver.modules.values() for name, entry in module.items()
    }
    assert sorted(entries) == sorted(launch.kernel for launch in launches)
    for launch in launches:
        # The fake refuses a launch whose packing differs from the entry; check the count too.
        assert len(launch.params) == len(entries[launch.kernel].params)
        assert math.prod(launch.block) <= 1024
    # The elementwise kernel covers every element of the 6x300 result, with
    # thread x along the contiguous dimension of 300 (shlo-innermost-parallel-dim-first).
    covered = max(math.prod(launch.grid) * math.prod(launch.block) for launch in launches)
    assert covered >= 6 * 300
    assert (launches[0].grid, launches[0].block) == ((2, 6, 1), (256, 1, 1))
    # Arguments, results and temporaries all live in (fake) device memory.
    pointers = {p for launch in launches for p in launch.params if isinstance(p, int)}
    allocated = {pointer for pointer, _ in fake_driver.allocated}
    assert allocated & pointers


def test_a_second_call_launches_again(fake_driver: cuda_driver.FakeDriver) -> None:
    executable = shlo.compile(SOFTMAX_ROWS, target="cuda")
    executable(np.ones((6, 300), np.float32), np.zeros(300, np.float32))
    executable(np.ones((6, 300), np.float32), np.zeros(300, np.float32))
    assert len(fake_driver.launches) == 4


@pytest.mark.skipif(has_gpu(), reason="a CUDA driver is present")
def test_calling_without_a_gpu_names_the_missing_driver() -> None:
    # Compiling needs no GPU; only the call does.
    executable = shlo.compile(SOFTMAX_ROWS, target="cuda")
    with pytest.raises(ShloError, match=r"^no CUDA driver: libcuda\.so\.1 could not be loaded"):
        executable(np.ones((6, 300), np.float32), np.zeros(300, np.float32))


def test_cuda_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"unknown arch 'sm_70'; expected one of sm_80"):
        shlo.compile(SOFTMAX_ROWS, target="cuda", arch="sm_70")
    with pytest.raises(ValueError, match="threads= is for target='cpu'"):
        shlo.compile(SOFTMAX_ROWS, target="cuda", threads=2)


def test_unsupported_op_is_named_before_code_generation() -> None:
    program = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.custom_call @my_kernel(%x) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    with pytest.raises(ShloError, match="custom call @my_kernel is not supported on target cuda"):
        shlo.compile(program, target="cuda")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_shlo_compile_writes_ptx_and_cubins(tmp_path: Path, arch: str) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(SOFTMAX_ROWS)
    ptx, cubin = tmp_path / "p.ptx", tmp_path / "p.cubin"
    for kind, out in (("ptx", ptx), ("cubin", cubin)):
        result = subprocess.run(
            [
                BIN / "shlo-compile",
                source,
                "--target=cuda",
                f"--arch={arch}",
                f"--emit={kind}",
                "-o",
                out,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
    text = ptx.read_text()
    assert f".target {arch}" in text
    assert text.count(".entry ") == 2
    elf = cubin.read_bytes()
    # An ELF executable for NVIDIA CUDA (EM_CUDA = 190).
    assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == 190


def test_shlo_compile_refines_a_dynamic_program(tmp_path: Path) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(
        """
        func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
          %0 = stablehlo.tanh %x : tensor<?xf32>
          return %0 : tensor<?xf32>
        }
        """
    )
    result = subprocess.run(
        [
            BIN / "shlo-compile",
            source,
            "--target=cuda",
            "--input-types=tensor<1000xf32>",
            "-o",
            "-",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert ".entry main_kernel" in result.stdout
    assert ".target sm_90" in result.stdout  # the default arch
    # tanh came from libdevice, linked in: nothing is left for the driver to resolve.
    assert ".extern" not in result.stdout


# --- on a GPU (skipped without one) -------------------------------------------------------

needs_gpu = pytest.mark.skipif(not has_gpu(), reason="no CUDA driver (libcuda) on this machine")

WHILE_SUM = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c5 = stablehlo.constant dense<5> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<64xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %c5 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %next = stablehlo.add %i, %c1 : tensor<i32>
      %sum = stablehlo.add %acc, %x : tensor<64xf32>
      stablehlo.return %next, %sum : tensor<i32>, tensor<64xf32>
    }
  return %r#1 : tensor<64xf32>
}
"""

MATMUL = """
func.func @main(%a: tensor<64x48xf32>, %b: tensor<48x80xf32>) -> tensor<64x80xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<64x48xf32>, tensor<48x80xf32>) -> tensor<64x80xf32>
  return %0 : tensor<64x80xf32>
}
"""


@needs_gpu
def test_gpu_runs_fused_elementwise_and_a_reduction() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 300)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    got_exp, got_sum = shlo.compile(SOFTMAX_ROWS, target="cuda")(x, b)
    want = np.exp(x + b)
    np.testing.assert_allclose(got_exp, want, rtol=1e-5)
    np.testing.assert_allclose(got_sum, want.sum(axis=1), rtol=1e-4)


@needs_gpu
def test_gpu_runs_a_while_loop_and_a_matmul() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(shlo.compile(WHILE_SUM, target="cuda")(x), 6 * x, rtol=1e-5)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 80)).astype(np.float32)
    got = shlo.compile(MATMUL, target="cuda")(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def _reduce_program(shape: tuple[int, ...], dims: list[int], dtype: str, op: str) -> str:
    out_shape = [s for i, s in enumerate(shape) if i not in dims]
    t_in = f"tensor<{'x'.join(map(str, shape))}x{dtype}>"
    t_out = f"tensor<{'x'.join(map(str, out_shape))}x{dtype}>" if out_shape else f"tensor<{dtype}>"
    init = {"add": "0", "multiply": "1", "maximum": "-100", "minimum": "100", "and": "-1"}[op]
    if dtype.startswith("f"):
        init = f"{float(init)}"
    return f"""
func.func @main(%x: {t_in}) -> {t_out} {{
  %init = stablehlo.constant dense<{init}> : tensor<{dtype}>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.{op} across dimensions = {dims}
      : ({t_in}, tensor<{dtype}>) -> {t_out}
  return %r : {t_out}
}}
"""


REDUCTIONS = [
    # rows, several reduction dims, few columns, a length that is no power of 2
    ((7, 4096), [1]),
    ((3, 5, 300), [1, 2]),
    ((4096, 8), [0]),
    ((33, 100), [1]),
    ((20000,), [0]),
]


@needs_gpu
@pytest.mark.parametrize("shape,dims", REDUCTIONS)
@pytest.mark.parametrize(
    "dtype,op",
    [
        ("f32", "add"),
        ("f32", "maximum"),
        ("f32", "multiply"),
        ("f64", "add"),
        ("f64", "minimum"),
        ("i32", "add"),
        ("i64", "maximum"),
        ("i32", "and"),
    ],
)
def test_gpu_reductions_match_numpy(shape, dims, dtype: str, op: str) -> None:
    rng = np.random.default_rng(len(shape) * 7 + dims[0])
    numpy_type = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[dtype]
    if op == "multiply":  # products of values near 1 stay finite
        x = (1 + rng.uniform(-1e-3, 1e-3, shape)).astype(numpy_type)
    elif dtype.startswith("f"):
        x = rng.standard_normal(shape).astype(numpy_type)
    elif op == "and":
        x = (~(1 << rng.integers(0, 31, shape))).astype(numpy_type)  # one bit cleared each
    else:
        x = rng.integers(-1000, 1000, shape).astype(numpy_type)
    got = shlo.compile(_reduce_program(shape, dims, dtype, op), target="cuda")(x)
    axis = tuple(dims)
    want = {
        "add": lambda: x.sum(axis=axis, dtype=numpy_type),
        "multiply": lambda: x.prod(axis=axis, dtype=numpy_type),
        "maximum": lambda: np.maximum(x.max(axis=axis), numpy_type(-100)),
        "minimum": lambda: np.minimum(x.min(axis=axis), numpy_type(100)),
        "and": lambda: np.bitwise_and.reduce(x, axis=axis),
    }[op]()
    if dtype.startswith("f"):
        tolerance = 1e-4 if dtype == "f32" else 1e-10
        scale = np.abs(x).sum(axis=axis) if op == "add" else np.abs(want)
        np.testing.assert_array_less(np.abs(got - want), tolerance * (scale + 1))
    else:
        np.testing.assert_array_equal(got, want)


LAYERNORM = """
func.func @main(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<1024.0> : tensor<64xf32>
  %eps = stablehlo.constant dense<1.0e-5> : tensor<64xf32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<64x1024xf32>, tensor<f32>) -> tensor<64xf32>
  %mean = stablehlo.divide %s, %n : tensor<64xf32>
  %mb = stablehlo.broadcast_in_dim %mean, dims = [0] : (tensor<64xf32>) -> tensor<64x1024xf32>
  %d = stablehlo.subtract %x, %mb : tensor<64x1024xf32>
  %sq = stablehlo.multiply %d, %d : tensor<64x1024xf32>
  %v = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<64x1024xf32>, tensor<f32>) -> tensor<64xf32>
  %var = stablehlo.divide %v, %n : tensor<64xf32>
  %ve = stablehlo.add %var, %eps : tensor<64xf32>
  %r = stablehlo.rsqrt %ve : tensor<64xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<64xf32>) -> tensor<64x1024xf32>
  %y = stablehlo.multiply %d, %rb : tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
"""


@needs_gpu
def test_gpu_layernorm_with_arrays_that_stay_on_the_gpu() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 1024)) * 3 + 1).astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    executable = shlo.compile(LAYERNORM, target="cuda")
    np.testing.assert_allclose(executable(x), want, rtol=1e-4, atol=1e-4)
    # A GPU array in, a GPU array out, readable by the library that made the input.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    result = executable(torch.from_numpy(x).cuda())
    from shlo.backends.cuda.dlpack import DeviceArray

    assert isinstance(result, DeviceArray)
    back = torch.from_dlpack(result)
    assert back.is_cuda and tuple(back.shape) == (64, 1024)
    np.testing.assert_allclose(back.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(result), want, rtol=1e-4, atol=1e-4)


@needs_gpu
@pytest.mark.parametrize("m,k,n", [(1024, 1024, 1024), (130, 70, 250)])
def test_gpu_register_tiled_matmuls(m: int, k: int, n: int) -> None:
    program = f"""
    func.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
      %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
          : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
      return %0 : tensor<{m}x{n}xf32>
    }}
    """
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = shlo.compile(program, target="cuda")(a, b)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
