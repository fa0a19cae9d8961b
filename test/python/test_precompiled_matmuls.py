"""f32 matmuls as calls of the kernel built once per machine (shlo-call-precompiled-kernels)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import precompiled, runtime
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.pipeline import CpuPipeline

pytestmark = pytest.mark.skipif(not precompiled.enabled(), reason="no C compiler")


def dot_source(lhs: tuple[int, ...], rhs: tuple[int, ...], transpose: str = "") -> str:
    """``lhs @ rhs`` (batched when rank 3); ``transpose`` "a" or "b": that operand is
    given transposed and transposed back first, as jax exports ``x.T @ w``."""
    batch = list(range(len(lhs) - 2))
    shapes = {"a": lhs, "b": rhs}
    stored = {
        name: (*shape[:-2], shape[-1], shape[-2]) if name in transpose else shape
        for name, shape in shapes.items()
    }
    out = (*lhs[:-1], rhs[-1])

    def tensor(shape: tuple[int, ...]) -> str:
        return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}f32>"

    lines = []
    operands = {}
    for name in "ab":
        operands[name] = f"%{name}"
        if name in transpose:
            swap = [*batch, len(lhs) - 1, len(lhs) - 2]
            lines.append(
                f"%{name}t = stablehlo.transpose %{name}, dims = {swap} : "
                f"({tensor(stored[name])}) -> {tensor(shapes[name])}"
            )
            operands[name] = f"%{name}t"
    dims = f"batching_dims = {batch} x {batch}, " if batch else ""
    lines.append(
        f"%r = stablehlo.dot_general {operands['a']}, {operands['b']}, {dims}"
        f"contracting_dims = [{len(lhs) - 1}] x [{len(rhs) - 2}] : "
        f"({tensor(lhs)}, {tensor(rhs)}) -> {tensor(out)}"
    )
    body = "\n  ".join(lines)
    return (
        f"func.func @main(%a: {tensor(stored['a'])}, %b: {tensor(stored['b'])}) -> {tensor(out)} {{\n"
        f"  {body}\n  return %r : {tensor(out)}\n}}\n"
    )


def stored_inputs(lhs, rhs, transpose="", seed=0) -> tuple[list[np.ndarray], np.ndarray]:
    """The arguments as the program takes them, and the product in float64."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(lhs).astype(np.float32)
    b = rng.standard_normal(rhs).astype(np.float32)
    args = [
        np.ascontiguousarray(np.swapaxes(x, -1, -2)) if n in transpose else x
        for n, x in (("a", a), ("b", b))
    ]
    return args, a.astype(np.float64) @ b.astype(np.float64)


SHAPES = [
    ((1, 1), (1, 1), ""),
    ((7, 5), (5, 3), ""),
    ((8, 16), (16, 32), ""),  # whole register tiles
    ((9, 17), (17, 33), "b"),  # one row and one column past them
    ((129, 300), (300, 257), ""),  # k past one block of 256
    ((67, 129), (129, 300), "a"),
    ((2, 40), (40, 1000), "b"),  # few rows: the columns are split over threads
    ((1, 300), (300, 70), ""),  # a row or a few: b read in place, row by row
    ((6, 300), (300, 100), ""),  # up to a register tile of rows: tiles reading b in place
    # 7 and 8 rows: AVX-512's tiles; AVX2's are 6 rows, so one vector of columns
    ((7, 300), (300, 70), ""),
    ((8, 300), (300, 100), ""),
    ((3, 513), (513, 40), "b"),  # a few rows by the columns of a transposed b
    ((300, 40), (40, 2), ""),
    ((3, 33, 17), (3, 17, 65), "b"),  # batches
    ((8, 64, 24), (8, 24, 40), "ab"),
    ((4, 0), (0, 5), ""),  # nothing to sum: zeros
    ((0, 3), (3, 4), ""),
]


@pytest.mark.parametrize(("lhs", "rhs", "transpose"), SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_products_match_numpy(lhs, rhs, transpose, threads) -> None:
    args, want = stored_inputs(lhs, rhs, transpose)
    got = shlo.compile(dot_source(lhs, rhs, transpose), threads=threads, isolate=False)(*args)
    depth = max(lhs[-1], 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * depth**0.5 * 4)


def test_threads_change_no_bit() -> None:
    # Each result is summed by one thread, in the same order, however the work is split.
    lhs, rhs = (200, 300), (300, 190)
    args, _ = stored_inputs(lhs, rhs, "b", seed=1)
    source = dot_source(lhs, rhs, "b")
    one = shlo.compile(source, threads=1, isolate=False)(*args)
    for threads in (2, 3):
        np.testing.assert_array_equal(
            shlo.compile(source, threads=threads, isolate=False)(*args), one
        )


def test_a_rows_results_do_not_depend_on_how_many_rows_there_are() -> None:
    # Few rows read b in place; more go through the panels: the same sums either way.
    args, _ = stored_inputs((20, 300), (300, 100), seed=2)
    a, b = args
    many = shlo.compile(dot_source((20, 300), (300, 100)), isolate=False)(a, b)
    for rows in (1, 2, 4, 6, 8):
        few = shlo.compile(dot_source((rows, 300), (300, 100)), isolate=False)(a[:rows], b)
        np.testing.assert_array_equal(few, many[:rows])


def _llvm_text(source: str, pipeline: CpuPipeline) -> str:
    lowered = lower_to_llvm(source, "main", None, pipeline)
    return str(ir.Module.parse(lowered.llvm_bytecode, new_context()))


def test_the_program_calls_the_kernel_and_has_no_matmul_code_of_its_own() -> None:
    # A transpose only the matmul reads is no copy either: no loop is left at all.
    source = dot_source((64, 96), (96, 128), "b")
    text = _llvm_text(source, CpuPipeline(threads=2))
    assert "llvm.call @shlo_matmul_f32" in text
    assert "llvm.intr.fmuladd" not in text and "vector<" not in text and "llvm.cond_br" not in text
    generated = _llvm_text(source, CpuPipeline(threads=2, precompiled_kernels=False))
    assert "shlo_matmul_f32" not in generated and "llvm.intr.fmuladd" in generated


def test_not_taken_where_the_kernel_does_not_compute_the_same() -> None:
    # f64, and accumulation into a value: generated.
    f64 = """
func.func @main(%a: tensor<4x3xf64>, %b: tensor<3x5xf64>) -> tensor<4x5xf64> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
  return %r : tensor<4x5xf64>
}
"""
    assert "shlo_matmul_f32" not in _llvm_text(f64, CpuPipeline())


def test_off_by_the_environment_or_without_a_c_compiler(monkeypatch) -> None:
    assert CpuPipeline().calls_precompiled_kernels
    monkeypatch.setenv("SHLO_PRECOMPILED_KERNELS", "0")
    assert not CpuPipeline().calls_precompiled_kernels
    assert CpuPipeline(precompiled_kernels=True).calls_precompiled_kernels
    monkeypatch.delenv("SHLO_PRECOMPILED_KERNELS")
    monkeypatch.setattr(runtime, "linker", lambda: None)
    assert not CpuPipeline().calls_precompiled_kernels


def test_llvm_code_run_by_the_jit_finds_the_kernel() -> None:
    # The conformance runner's path: LLVM-dialect bytecode compiled in this process.
    lhs, rhs = (33, 20), (20, 70)
    args, want = stored_inputs(lhs, rhs)
    lowered = lower_to_llvm(dot_source(lhs, rhs), "main", None, CpuPipeline(threads=2))
    function = runtime.LoadedFunction(
        lowered.llvm_bytecode, lowered.input_types, lowered.result_types
    )
    np.testing.assert_allclose(function(args)[0], want, rtol=1e-5, atol=1e-5)


def object_symbol_kinds(tmp_path: Path, program: str) -> dict[str, str]:
    """Each symbol of the object ``shlo-compile --emit object`` makes of ``program``, with
    its kind as ``nm`` prints it."""
    output = tmp_path / "program.o"
    source = tmp_path / "program.mlir"
    source.write_text(program)
    shlo_compile = Path(sys.executable).parent / "shlo-compile"
    subprocess.run(
        [str(shlo_compile), str(source), "--emit", "object", "-o", str(output)], check=True
    )
    symbols = subprocess.run(["nm", str(output)], capture_output=True, text=True, check=True)
    return {line.split()[-1]: line.split()[-2] for line in symbols.stdout.splitlines()}


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
def test_code_compiled_ahead_of_time_carries_the_kernel(tmp_path) -> None:
    kinds = object_symbol_kinds(tmp_path, dot_source((16, 8), (8, 32)))
    assert kinds["shlo_matmul_f32"] == "W"  # defined, weak


def test_the_kernels_use_the_generated_codes_openmp_runtime() -> None:
    # By address, not by name: a process with torch loaded has libgomp too.
    openmp = runtime.load_openmp()
    if openmp is None:
        pytest.skip("no OpenMP runtime")
    kernels = precompiled.library()
    kernels.shlo_kernels_parallel_entry.restype = ctypes.c_void_p
    want = ctypes.cast(ctypes.CDLL(openmp).GOMP_parallel, ctypes.c_void_p).value
    assert kernels.shlo_kernels_parallel_entry() == want


@pytest.mark.parametrize(
    ("lhs", "rhs", "transpose"), [((4, 3), (3, 6), ""), ((20, 100), (100, 70), "b")]
)
def test_small_products_round_as_xlas_loops(lhs, rhs, transpose) -> None:
    # Each product rounded, then added in k order: bit for bit, however a sum cancels
    # (StableHLO's conformance data for complex products comes from XLA's loops).
    args, _ = stored_inputs(lhs, rhs, transpose, seed=2)
    a, b = (np.swapaxes(x, -1, -2) if n in transpose else x for n, x in zip("ab", args))
    want = np.zeros((lhs[0], rhs[1]), np.float32)
    for p in range(lhs[1]):
        want = want + a[:, p : p + 1] * b[p : p + 1, :]
    got = shlo.compile(dot_source(lhs, rhs, transpose), threads=2, isolate=False)(*args)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", [673, 729, 1017])
def test_attention_gradients_whose_calls_read_one_operand(seed) -> None:
    # Blocks of the random campaign whose gradients have two products reading q.
    # Expanded into calls before the tensor stage's CSE and canonicalization, the
    # two calls shared one to_buffer, and bufferization let an op overwrite q's
    # buffer between them: error 1.3-1.5 of the largest value.
    from test_random_blocks import check_block

    check_block(seed)
