"""Long elementwise chains run in two stages over blocks of values (passes/cpu/chain_stages.py).

Staging moves no arithmetic: every program here must give the bits of the
same program compiled without it, on one thread and on two, and agree with
jax. Programs that cannot be cut (one math function, two values crossing
every cut, no block of 256 values) must compile to the same LLVM either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.pipeline import VECTORIZED, CpuPipeline


def _bench_chain(x):
    y = jnp.tanh(x * 1.5 + 0.25)
    y = jnp.exp(-(y * y)) - 0.5
    return jnp.sqrt(jnp.maximum(y, 0.0) + 1.0)


def _softplus_times(x, y):
    return jnp.log1p(jnp.exp(x)) * y  # y read by the second stage only


def _mish(x):
    return x * jnp.tanh(jnp.log1p(jnp.exp(x)))  # x read by both stages


def _biased(x, b):
    t = jnp.tanh(x + b[None, :])
    return jnp.exp(t * b[None, :]) / (1.0 + b[None, :])  # a broadcast read by both


def _three_inputs(x, y, z):
    return jnp.exp(jnp.tanh(x * y) * z) - y / z  # x, y in the first stage; y, z in the second


def _two_values_cross(x):
    # Every cut between the functions is crossed by two values (a and t, or a and e).
    a = x * 1.5
    return jnp.exp(jnp.tanh(a) * a) * a


def _one_function(x):
    return jnp.sqrt(jnp.exp(x * 0.5) + 1.0) / (x * x + 1.0)


STAGED = [
    ("bench_chain_1d", _bench_chain, [(16384,)]),
    ("bench_chain_2d", _bench_chain, [(64, 1024)]),
    ("bench_chain_3d", _bench_chain, [(2, 16, 512)]),
    ("bench_chain_short_rows", _bench_chain, [(9, 1001)]),
    ("bench_chain_narrow_rows", _bench_chain, [(512, 48)]),
    ("softplus_times", _softplus_times, [(128, 256), (128, 256)]),
    ("mish", _mish, [(32768,)]),
    ("mish_4d", _mish, [(2, 16, 32, 64)]),
    ("biased", _biased, [(256, 128), (128,)]),
    ("three_inputs", _three_inputs, [(64, 256), (64, 256), (64, 256)]),
]

UNCHANGED = [
    ("two_values_cross", _two_values_cross, [(16384,)]),
    ("one_function", _one_function, [(16384,)]),
    ("too_small", _bench_chain, [(4096,)]),
    ("no_block_fits", _bench_chain, [(8209,)]),  # prime: a block is 1 or 8209 values
]

UNSTAGED = dataclasses.replace(VECTORIZED, stage_long_chains=False)


def _inputs(shapes: list[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(shape) * 3).astype(np.float32) for shape in shapes]
    # The functions' edge cases, where the first array has room for them.
    specials = np.array(
        [0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 90.0, -110.0, np.inf, -np.inf, np.nan]
    )
    arrays[0].reshape(-1)[: specials.size] = specials.astype(np.float32)
    return arrays


def _source(fn: Callable, args: list[np.ndarray]) -> bytes:
    return export.export(jax.jit(fn), platforms=["cpu"])(*args).mlir_module_serialized


def _llvm(source: bytes, pipeline: CpuPipeline) -> str:
    lowered = lower_to_llvm(source, "main", None, pipeline)
    return str(ir.Module.parse(lowered.llvm_bytecode, new_context()))


def _run(source: bytes, pipeline: CpuPipeline, args: list[np.ndarray]) -> np.ndarray:
    return np.asarray(shlo.compile(source, pipeline=pipeline, isolate=False)(*args))


def _assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def _assert_close_to_jax(got: np.ndarray, fn: Callable, args: list[np.ndarray]) -> None:
    # Each function is within a few ULP of XLA's; exp of a product of them (up to
    # 15 here) and a division by 1 + b near 0 multiply that error. The bits are
    # what the unstaged code is checked against.
    want = np.asarray(jax.jit(fn)(*args))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("fn", "shapes"), [pytest.param(f, s, id=n) for n, f, s in STAGED])
def test_staged_chain_has_the_unstaged_bits(fn: Callable, shapes: list, threads: int) -> None:
    args = _inputs(shapes, seed=len(shapes) + threads)
    source = _source(fn, args)
    staged = CpuPipeline(strategy=VECTORIZED, threads=threads)
    unstaged = CpuPipeline(strategy=UNSTAGED, threads=threads)
    # Staged, the program is other code: this fails if the chain is not cut.
    assert _llvm(source, staged) != _llvm(source, unstaged)
    got = _run(source, staged, args)
    _assert_same_bits(got, _run(source, unstaged, args))
    _assert_close_to_jax(got, fn, args)


@pytest.mark.parametrize(("fn", "shapes"), [pytest.param(f, s, id=n) for n, f, s in UNCHANGED])
def test_chains_that_are_not_cut(fn: Callable, shapes: list) -> None:
    args = _inputs(shapes, seed=7)
    source = _source(fn, args)
    staged = CpuPipeline(strategy=VECTORIZED, threads=2)
    assert _llvm(source, staged) == _llvm(source, CpuPipeline(strategy=UNSTAGED, threads=2))
    _assert_close_to_jax(_run(source, staged, args), fn, args)
