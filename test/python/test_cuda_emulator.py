"""The CUDA backend's kernels run on the CPU (shlo.backends.cuda.emulator), against numpy.

Without a GPU this is what checks the values the CUDA-specific stages
compute: tiling and mapping to blocks and threads, bounds checks, the
block-per-row reductions with gpu.all_reduce, copies done by kernels, and
the host code between launches. Every access is bounds-checked.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from shlo import ShloError
from shlo.backends.cuda.emulator import emulate
from test_cuda_backend import (
    LAYERNORM,
    MATMUL,
    REDUCTIONS,
    SOFTMAX_ROWS,
    WHILE_SUM,
    _reduce_program,
)

RNG = np.random.default_rng(7)


def test_fused_elementwise_and_a_row_sum() -> None:
    x = RNG.standard_normal((6, 300)).astype(np.float32)
    b = RNG.standard_normal(300).astype(np.float32)
    exp, total = emulate(SOFTMAX_ROWS, check_bounds=True)(x, b)
    np.testing.assert_allclose(exp, np.exp(x + b), rtol=1e-6)
    np.testing.assert_allclose(total, np.exp(x + b).sum(axis=1), rtol=1e-5)


def test_layernorm_matmul_and_a_while_loop() -> None:
    x = (RNG.standard_normal((64, 1024)) * 3 + 1).astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(emulate(LAYERNORM, check_bounds=True)(x)[0], want, atol=2e-5)
    a = RNG.standard_normal((64, 48)).astype(np.float32)
    b = RNG.standard_normal((48, 80)).astype(np.float32)
    np.testing.assert_allclose(emulate(MATMUL)(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)
    v = RNG.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(emulate(WHILE_SUM)(v)[0], 6 * v, rtol=1e-6)


@pytest.mark.parametrize("shape,dims", REDUCTIONS)
@pytest.mark.parametrize("dtype,op", [("f32", "add"), ("f64", "minimum"), ("i64", "maximum")])
def test_reductions(shape, dims, dtype: str, op: str) -> None:
    numpy_type = {"f32": np.float32, "f64": np.float64, "i64": np.int64}[dtype]
    x = (RNG.standard_normal(shape) * 100).astype(numpy_type)
    (got,) = emulate(_reduce_program(shape, dims, dtype, op), check_bounds=True)(x)
    axis = tuple(dims)
    want = {
        "add": lambda: x.sum(axis=axis, dtype=numpy_type),
        "minimum": lambda: np.minimum(x.min(axis=axis), numpy_type(100)),
        "maximum": lambda: np.maximum(x.max(axis=axis), numpy_type(-100)),
    }[op]()
    if dtype == "f32":  # reassociated: within a few ulps of the sum of magnitudes
        scale = np.abs(x).sum(axis=axis)
        np.testing.assert_array_less(np.abs(got - want), 1e-5 * scale + 1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def test_transposes_slices_and_updates_in_place() -> None:
    # Dimensions reordered for coalescing, strided copies by kernels, and an
    # update of a copy of the input.
    program = """
    func.func @main(%x: tensor<3x5x7xf32>, %u: tensor<2x5x3xf32>) -> (tensor<7x3x5xf32>, tensor<3x5x7xf32>, tensor<2x5x3xf32>) {
      %t = stablehlo.transpose %x, dims = [2, 0, 1] : (tensor<3x5x7xf32>) -> tensor<7x3x5xf32>
      %i = stablehlo.constant dense<1> : tensor<i64>
      %z = stablehlo.constant dense<0> : tensor<i64>
      %w = stablehlo.constant dense<4> : tensor<i64>
      %d = stablehlo.dynamic_update_slice %x, %u, %i, %z, %w : (tensor<3x5x7xf32>, tensor<2x5x3xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3x5x7xf32>
      %s = stablehlo.slice %x [1:3, 0:5, 2:7:2] : (tensor<3x5x7xf32>) -> tensor<2x5x3xf32>
      return %t, %d, %s : tensor<7x3x5xf32>, tensor<3x5x7xf32>, tensor<2x5x3xf32>
    }
    """
    x = RNG.standard_normal((3, 5, 7)).astype(np.float32)
    u = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    transposed, updated, sliced = emulate(program, check_bounds=True)(x, u)
    np.testing.assert_array_equal(transposed, x.transpose(2, 0, 1))
    want = x.copy()
    want[1:3, :, 4:7] = u
    np.testing.assert_array_equal(updated, want)
    np.testing.assert_array_equal(sliced, x[1:3, :, 2:7:2])


def test_an_access_out_of_bounds_aborts_with_its_location() -> None:
    # A kernel that stores one element past its buffer: the check must catch it,
    # or the conformance run of this emulator (--target cuda-emulated) proves nothing.
    script = textwrap.dedent(
        '''
        from shlo._mlir_compat import ir, new_context
        from shlo.backends.cuda.emulator import emulate_kernels
        from shlo.pipeline import run_pipeline
        from shlo.backends.cuda.pipeline import HOST_STAGE
        from shlo.backends.cpu.runtime import LoadedFunction
        from shlo.io import module_to_bytecode
        import numpy as np
        text = """
        module attributes {gpu.container_module} {
          func.func @main(%out: memref<4xf32>) {
            %c1 = arith.constant 1 : index
            %c5 = arith.constant 5 : index
            gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c5, %c1, %c1) args(%out : memref<4xf32>)
            return
          }
          gpu.module @k {
            gpu.func @k(%out: memref<4xf32>) kernel {
              %t = gpu.thread_id x
              %v = arith.constant 1.0 : f32
              memref.store %v, %out[%t] : memref<4xf32>
              gpu.return
            }
          }
        }
        """
        module = ir.Module.parse(text, new_context())
        emulate_kernels(module)
        run_pipeline(module, ["generate-runtime-verification", *HOST_STAGE], "<t>", verify_each=False)
        function = LoadedFunction(module_to_bytecode(module), [], ["tensor<4xf32>"])
        print(function([]))
        '''
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "out-of-bounds access" in output and "memref.store" in output, output


def test_threads_that_synchronize_are_refused() -> None:
    from shlo._mlir_compat import ir, new_context
    from shlo.backends.cuda.emulator import emulate_kernels

    text = """
    module attributes {gpu.container_module} {
      func.func @main(%out: memref<4xf32>) {
        %c1 = arith.constant 1 : index
        gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
        return
      }
      gpu.module @k {
        gpu.func @k(%out: memref<4xf32>) kernel {
          gpu.barrier
          gpu.return
        }
      }
    }
    """
    module = ir.Module.parse(text, new_context())
    with pytest.raises(ShloError, match="threads that synchronize cannot be emulated"):
        emulate_kernels(module)


def _dot(m: int, k: int, n: int, element: str, batch: int | None = None) -> str:
    prefix = f"{batch}x" if batch else ""
    a, b, c = (f"tensor<{prefix}{x}x{y}x{element}>" for x, y in ((m, k), (k, n), (m, n)))
    dims = (
        "batching_dims = [0] x [0], contracting_dims = [2] x [1]"
        if batch
        else "contracting_dims = [1] x [0]"
    )
    return f"""
    func.func @main(%a: {a}, %b: {b}) -> {c} {{
      %0 = stablehlo.dot_general %a, %b, {dims} : ({a}, {b}) -> {c}
      return %0 : {c}
    }}
    """


@pytest.mark.parametrize(
    "m,k,n,element,batch",
    [
        (64, 48, 80, "f32", None),  # whole tiles
        (5, 7, 9, "f32", None),  # edge tiles in both dimensions
        (1, 33, 3, "f64", None),  # smaller than one tile
        (13, 17, 30, "f32", 3),  # batched, edges
    ],
)
def test_register_tiled_matmuls(m: int, k: int, n: int, element: str, batch: int | None) -> None:
    numpy_type = np.float32 if element == "f32" else np.float64
    lead = (batch,) if batch else ()
    a = RNG.standard_normal((*lead, m, k)).astype(numpy_type)
    b = RNG.standard_normal((*lead, k, n)).astype(numpy_type)
    (got,) = emulate(_dot(m, k, n, element, batch), check_bounds=True)(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tolerance = 1e-5 if element == "f32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * np.sqrt(k))
