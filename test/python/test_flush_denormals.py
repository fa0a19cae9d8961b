"""flush_denormals: subnormal floats computed as zero, as XLA's CPU code computes them.

By default shlo computes with IEEE subnormals, as StableHLO and its reference
interpreter specify. With ``flush_denormals=True`` (the default of
``shlo.jax.jit`` on the CPU) @main sets FTZ and DAZ, so results match
jax.jit's bit for bit on subnormal data, on every OpenMP thread, and the
caller's floating-point mode is left as it was, even when an allocation fails.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
import shlo.jax
from shlo.backends.cpu import runtime
from shlo.backends.cpu.lowering import lower_to_object
from shlo.backends.cpu.pipeline import CpuPipeline

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="MXCSR is x86-64's"
)

TINY = np.float32(1e-39)  # subnormal: below 2^-126, about 1.18e-38


def subnormal_data(shape: tuple[int, ...] = (64, 1000)) -> np.ndarray:
    """Subnormals of both signs, with a few normal values, zeros and an infinity among them."""
    rng = np.random.default_rng(7)
    x = (rng.uniform(0.5, 10, shape) * TINY * rng.choice([-1, 1], shape)).astype(np.float32)
    x.flat[::97] = 1.5
    x.flat[::101] = 0.0
    x.flat[5] = np.inf
    return x


def ops(x: jax.Array) -> tuple[jax.Array, ...]:
    """Ops whose results differ on subnormal operands or results under FTZ and DAZ."""
    return (
        x * 0.5,  # subnormal results
        jnp.log(jnp.abs(x)),  # -inf for a subnormal read as zero
        jnp.sqrt(jnp.abs(x)),
        1.0 / x,  # +-inf
        jnp.sign(x),
        x > 0,
        jnp.exp(x * 1e30 - 95.0),  # normal operands, subnormal results
        jnp.sum(x * 1e10, axis=1),
        jax.nn.softmax(x * 1e38 - 90.0, axis=1),
        jnp.max(x, axis=1),  # a subnormal reads as zero: ties with 0
        jnp.argsort(x[:, :64], axis=1),  # and sorts as zero, stably
    )


def assert_identical(got: object, want: object) -> None:
    for index, (a, b) in enumerate(zip(got, want, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, index
        same = (a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b
        assert same.all(), (
            f"output {index}: {np.count_nonzero(~same)} differ, e.g. {a[~same][:4]} vs {b[~same][:4]}"
        )


@pytest.fixture(scope="module")
def exported() -> jax.export.Exported:
    return jax.export.export(jax.jit(ops), platforms=["cpu"])(subnormal_data())


@pytest.mark.parametrize("threads", [1, 2])
def test_flushed_results_are_jax_jits_bit_for_bit(exported, threads) -> None:
    x = subnormal_data()
    want = jax.jit(ops)(x)
    got = shlo.compile(exported, flush_denormals=True, threads=threads)(x)
    assert_identical(got, want)


def test_every_thread_of_a_parallel_loop_flushes() -> None:
    # The workers run in the mode @main set (OpenMP gives its threads the
    # starting thread's MXCSR), or their part of the loop keeps its subnormals.
    # The program above is too small for threads.
    if runtime.load_openmp() is None:
        pytest.skip("needs intel-openmp")
    x = np.full(1 << 18, 3e-39, np.float32)
    exported = jax.export.export(jax.jit(lambda x: x * 1.5), platforms=["cpu"])(x)
    pipeline = CpuPipeline(threads=2, flush_denormals=True)
    lowered = lower_to_object(exported.mlir_module_serialized, "main", None, pipeline)
    assert runtime._uses_openmp(lowered.object_code)
    got = runtime.LoadedFunction(lowered.object_code, lowered.input_types, lowered.result_types)
    result = got([x])[0]
    assert not np.any(result), np.flatnonzero(result)[:4]
    unflushed = CpuPipeline(threads=2, flush_denormals=False)
    lowered = lower_to_object(exported.mlir_module_serialized, "main", None, unflushed)
    kept = runtime.LoadedFunction(lowered.object_code, lowered.input_types, lowered.result_types)
    assert np.all(kept([x])[0] == x * np.float32(1.5))  # IEEE: subnormal results


def test_default_keeps_ieee_subnormals(exported) -> None:
    x = subnormal_data()
    got = shlo.compile(exported)(x)
    halves, logs = np.asarray(got[0]), np.asarray(got[1])
    subnormal = (x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)
    assert np.array_equal(halves[subnormal], x[subnormal] * np.float32(0.5))
    assert np.isfinite(logs[subnormal]).all()  # log(1e-39) is about -89.8
    assert not np.array_equal(halves, np.asarray(jax.jit(ops)(x)[0]))


def test_the_pipeline_option_and_the_keyword_agree(exported) -> None:
    x = subnormal_data()
    by_pipeline = shlo.compile(exported, pipeline=CpuPipeline(flush_denormals=True))(x)
    assert_identical(by_pipeline, jax.jit(ops)(x))
    # The keyword replaces the pipeline's setting.
    ieee = shlo.compile(
        exported, pipeline=CpuPipeline(flush_denormals=True), flush_denormals=False
    )(x)
    assert_identical(ieee, shlo.compile(exported)(x))


def test_shlo_jax_jit_flushes_as_jax_jit_does() -> None:
    x = subnormal_data()
    assert_identical(shlo.jax.jit(ops)(x), jax.jit(ops)(x))
    ieee = shlo.jax.jit(ops, flush_denormals=False)(x)
    assert x[0, 1] != 0
    assert np.asarray(ieee[0])[0, 1] == x[0, 1] * np.float32(0.5)


def test_callers_floating_point_mode_is_unchanged(exported) -> None:
    shlo.compile(exported, flush_denormals=True)(subnormal_data())
    # numpy runs on this thread's MXCSR: still IEEE after the call.
    assert TINY * np.float32(0.5) != 0
    assert np.log(TINY) > -np.inf


FAILED_ALLOCATION_HOST = """
import resource
import numpy as np, shlo
from test_compile_limits import SORT_OF_A_BIG_BROADCAST
executable = shlo.compile(SORT_OF_A_BIG_BROADCAST, max_bytes=8 << 30, flush_denormals=True)
resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, resource.RLIM_INFINITY))
try:
    executable(np.array(1.0, np.float32))
except MemoryError:
    print("MemoryError; subnormals after it:", np.float32(1e-39) * np.float32(0.5) != 0)
"""


def test_callers_mode_is_restored_when_an_allocation_fails() -> None:
    host = subprocess.run(
        [sys.executable, "-c", FAILED_ALLOCATION_HOST],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=__file__.rsplit("/", 1)[0],
    )
    assert host.returncode == 0, host.stderr[-2000:]
    assert "MemoryError; subnormals after it: True" in host.stdout, host.stdout


def test_disk_cache_keeps_the_two_modes_apart(tmp_path, monkeypatch, exported) -> None:
    monkeypatch.setenv("SHLO_CACHE_DIR", str(tmp_path))
    x = subnormal_data()
    ieee = shlo.compile(exported)(x)
    flushed = shlo.compile(exported, flush_denormals=True)(x)
    assert_identical(flushed, jax.jit(ops)(x))
    assert_identical(shlo.compile(exported)(x), ieee)


def test_cuda_refuses_the_option() -> None:
    with pytest.raises(ValueError, match="flush_denormals= is for target='cpu'"):
        shlo.compile("func.func @main() { return }", target="cuda", flush_denormals=True)


def test_option_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="flush_denormals must be True or False"):
        shlo.compile("func.func @main() { return }", flush_denormals=1)


HALVE = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %h = stablehlo.constant dense<0.5> : tensor<4xf32>
  %0 = stablehlo.multiply %a, %h : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_shlo_run_flag(tmp_path, capsys) -> None:
    from shlo.tools import shlo_run

    source = tmp_path / "halve.mlir"
    source.write_text(HALVE)
    args = [str(source), "--input=4xf32=1e-39 2 -1e-39 4"]
    assert shlo_run.run(args) == 0
    ieee = capsys.readouterr().out
    assert shlo_run.run([*args, "--flush-denormals"]) == 0
    assert capsys.readouterr().out == "result[0]: 4xf32=[0 1 -0 2]\n"
    assert ieee != "result[0]: 4xf32=[0 1 -0 2]\n" and ieee.count("e-40") == 2


def test_shlo_compile_flag_puts_the_mode_in_the_object(tmp_path) -> None:
    from shlo.compiler import emit

    source = tmp_path / "halve.mlir"
    source.write_text(HALVE)
    flushing = emit(source, "cpu", "llvm-mlir", flush_denormals=True).decode()
    assert flushing.count('"llvm.x86.sse.ldmxcsr"') == 2  # set, then restore
    assert "llvm.x86.sse" not in emit(source, "cpu", "llvm-mlir").decode()
    out = tmp_path / "halve.o"
    bin_dir = sys.executable.rsplit("/", 1)[0]
    command = [f"{bin_dir}/shlo-compile", str(source), "--flush-denormals", "-o", str(out)]
    assert subprocess.run(command, capture_output=True, check=False).returncode == 0
    assert out.read_bytes().startswith(b"\x7fELF")
