"""Fused f32 elementwise ops as calls of the kernel built once per machine
(shlo_elementwise_f32: kernels/elementwise_f32.c, shlo-mark-precompiled-elementwise),
which the fast-compile strategy makes.

The kernel must give the generated code's bits: each case compiles the same
program twice, with the kernel (fast-compile) and with the op vectorized and
compiled by LLVM (the default), and compares the two bit for bit (NaN with NaN).
``SHLO_ELEMENTWISE_CASES`` sets the number of random programs (default 40).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import precompiled, runtime
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.pipeline import FAST_COMPILE, VECTORIZED, CpuPipeline
from shlo.tools.measure_ulp import function_source
from test_approximate_math import dense_sample
from test_precompiled_matmuls import object_symbol_kinds

pytestmark = pytest.mark.skipif(not precompiled.enabled(), reason="no C compiler")

KERNEL = "shlo_elementwise_f32"


# The default strategy without its kernel calls beside contractions: every
# elementwise op generated, the reference for the kernel's bits.
GENERATED = dataclasses.replace(VECTORIZED, math_kernel_beside_contractions=0)


def _pipeline(kernel: bool = True, threads: int = 2) -> CpuPipeline:
    return CpuPipeline(strategy=FAST_COMPILE if kernel else GENERATED, threads=threads)


def _source(fn: Callable, args: list[np.ndarray]) -> bytes:
    return export.export(jax.jit(fn, keep_unused=True), platforms=["cpu"])(
        *args
    ).mlir_module_serialized


def _calls_kernel(source: bytes, pipeline: CpuPipeline) -> bool:
    lowered = lower_to_llvm(source, "main", None, pipeline)
    return f"llvm.call @{KERNEL}" in str(ir.Module.parse(lowered.llvm_bytecode, new_context()))


def _run(source: bytes, pipeline: CpuPipeline, args: list[np.ndarray]) -> list[np.ndarray]:
    results = shlo.compile(source, pipeline=pipeline, isolate=False)(*args)
    return [np.asarray(r) for r in jax.tree.leaves(results)]


def _assert_same_bits(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        nan = np.isnan(w)
        np.testing.assert_array_equal(np.isnan(g), nan)
        np.testing.assert_array_equal(g[~nan].view(np.uint32), w[~nan].view(np.uint32))


def _special(shape: tuple[int, ...], seed: int, huge: bool = True) -> np.ndarray:
    """Normal values with the exp, tanh and division edge cases sprinkled in; ``huge``:
    infinities and values near the largest float too."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    specials = np.array(
        [0.0, -0.0, np.nan, 1e-40, -1e-40, 88.5, -87.0, -104.5, 9.0, 8.7, 1e-3,
         *([np.inf, -np.inf, 3e38, -3e38, 1e30] if huge else [])],
        np.float32,
    )  # fmt: skip
    flat = x.reshape(-1)
    where = rng.random(flat.size) < 0.1
    flat[where] = rng.choice(specials, int(where.sum()))
    return x


def _compare(
    fn: Callable,
    shapes: list[tuple[int, ...]],
    threads: int = 2,
    seed: int = 0,
    huge: bool = True,
):
    args = [_special(shape, seed + i, huge) for i, shape in enumerate(shapes)]
    source = _source(fn, args)
    kernel = _pipeline(True, threads)
    generated = _pipeline(False, threads)
    _assert_same_bits(_run(source, kernel, args), _run(source, generated, args))
    return source, kernel


PROGRAMS = [
    # (name, function, input shapes)
    (
        "the bench chain",
        lambda x: jnp.sqrt(
            jnp.maximum(jnp.exp(-jnp.square(jnp.tanh(x * 1.5 + 0.25))) - 0.5, 0) + 1
        ),
        [(5000,)],
    ),
    (
        "tanh gelu with a bias",
        lambda x, b: jax.nn.gelu(x + b, approximate=True),
        [(24, 300), (300,)],
    ),
    ("divided elementwise", lambda x, y: x / y, [(3, 5, 7), (3, 5, 7)]),
    (
        "max, min, abs, neg",
        lambda x, y: jnp.minimum(jnp.maximum(x, -y), jnp.abs(y)) - x,
        [(2, 3, 64), (2, 3, 64)],
    ),
    ("broadcast over heads", lambda x, b: jnp.exp(x + b), [(2, 3, 17, 40), (2, 1, 17, 40)]),
    ("a scalar", lambda x: jnp.tanh(x), [()]),
    ("rows of one", lambda x, y: x * y + x, [(300, 1), (300, 1)]),
    ("one long row", lambda x: jnp.exp(x) * 0.5, [(1, 1, 70001)]),
]
# A division by a value a row shares takes its reciprocal (as XLA does); where a
# product reaches the largest float (an infinity does), the generated code divides
# its whole vector (64 or 128 lanes), the kernel that lane: their bits agree
# without such values.
SHARED_DIVISORS = [
    (
        "a per-row value",
        lambda x, m: (x - m) * jax.lax.rsqrt(m * m + 1e-5) / m,
        [(37, 128), (37, 1)],
    ),
    ("divided by a per-row value", lambda x, s: x / s, [(9, 1024), (9, 1)]),
    ("divided by a constant", lambda x: x / 3.0, [(1024,)]),
]


@pytest.mark.parametrize(
    ("fn", "shapes", "huge"),
    [pytest.param(fn, shapes, True, id=name) for name, fn, shapes in PROGRAMS]
    + [pytest.param(fn, shapes, False, id=name) for name, fn, shapes in SHARED_DIVISORS],
)
def test_the_kernel_has_the_generated_codes_bits(fn, shapes, huge) -> None:
    source, kernel = _compare(fn, shapes, huge=huge)
    assert _calls_kernel(source, kernel)


@pytest.mark.parametrize("name", ["exp", "tanh", "sqrt", "rsqrt", "absf"])
def test_math_functions_have_the_generated_codes_bits_on_a_dense_sample(name) -> None:
    # Every 4099th f32 and dense ranges around exp's and tanh's thresholds.
    x = dense_sample()
    source = function_source(name, x.size)
    assert _calls_kernel(source, _pipeline())
    got = _run(source, _pipeline(), [x])
    _assert_same_bits(got, _run(source, _pipeline(kernel=False), [x]))


def test_threads_change_no_bit() -> None:
    fn = lambda x, b: jnp.tanh(x * 2.0 + b)  # noqa: E731
    args = [_special((64, 1000), 1), _special((1000,), 2)]
    source = _source(fn, args)
    one, two = (_run(source, _pipeline(threads=threads), args) for threads in (1, 2))
    _assert_same_bits(one, two)


LEFT_TO_GENERATED_CODE = [
    ("a transposed input", lambda x: jnp.exp(x.T) + 1.0, [(40, 30)]),
    ("a conversion to integers", lambda x: (x * 3).astype(jnp.int32) + 1, [(100,)]),
    ("a select", lambda x: jnp.where(x > 0, x, 0.1 * x), [(100,)]),
    ("bf16 rounding", lambda x: (x.astype(jnp.bfloat16) * 2).astype(jnp.float32), [(100,)]),
    # A layer norm's normalization stays in shlo-fuse-rows' blocks of rows.
    ("layer norm", lambda x: jax.nn.standardize(x, axis=-1), [(512, 1024)]),
]


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [pytest.param(fn, shapes, id=name) for name, fn, shapes in LEFT_TO_GENERATED_CODE],
)
def test_what_the_kernel_cannot_compute_keeps_its_generated_code(fn, shapes) -> None:
    args = [np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in shapes]
    source = _source(fn, args)
    assert not _calls_kernel(source, _pipeline())
    got = _run(source, _pipeline(), args)
    want = [np.asarray(w) for w in jax.tree.leaves(jax.jit(fn)(*args))]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def _gelu_after_matmul(x, w):
    return jax.nn.gelu(x @ w, approximate=True)


def test_tanh_beside_a_large_matmul_calls_the_kernel_by_default() -> None:
    # The MLP's shape of program: 2 * 1024 flops per value of the gelu, and nothing
    # else generated.
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((64, 1024), (1024, 128))]
    source = _source(_gelu_after_matmul, args)
    default = CpuPipeline(threads=2)
    assert _calls_kernel(source, default)
    _assert_same_bits(_run(source, default, args), _run(source, _pipeline(kernel=False), args))


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        # 2 * 256 flops per value.
        pytest.param(_gelu_after_matmul, [(64, 256), (256, 128)], id="a small matmul"),
        pytest.param(lambda x: jnp.tanh(x * 1.5) + 1.0, [(256, 512)], id="no matmul"),
        pytest.param(
            lambda x, w: jax.nn.relu(x @ w + 1.0), [(64, 1024), (1024, 128)], id="no exp or tanh"
        ),
        # Other generated code beside it (a row's sums): the program is not glue anyway.
        pytest.param(
            lambda x, w: jax.nn.gelu(x @ w, approximate=True) + (x @ w).sum(axis=1, keepdims=True),
            [(64, 1024), (1024, 128)],
            id="beside other generated code",
        ),
    ],
)
def test_the_default_strategy_keeps_other_elementwise_ops_generated(fn, shapes) -> None:
    args = [np.random.default_rng(6).standard_normal(s).astype(np.float32) for s in shapes]
    assert not _calls_kernel(_source(fn, args), CpuPipeline(threads=2))


_UNARY = [
    lambda a: -a,
    jnp.abs,
    jnp.exp,
    jnp.tanh,
    lambda a: jnp.sqrt(jnp.abs(a)),
    lambda a: jax.lax.rsqrt(jnp.abs(a) + 0.5),
]
_BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.divide, jnp.maximum, jnp.minimum]


def _random_program(rng: np.random.Generator) -> tuple[Callable, list[tuple[int, ...]]]:
    """An expression of up to 12 ops on 1-4 inputs broadcast to one shape, and constants."""
    rank = int(rng.integers(1, 4))
    shape = tuple(int(s) for s in rng.choice([1, 2, 3, 16, 17, 64, 100, 257], rank))
    shapes = [shape]
    for _ in range(int(rng.integers(0, 4))):
        # Each dimension kept or broadcast (size 1), or the leading ones dropped.
        kept = tuple(s if rng.random() < 0.6 else 1 for s in shape)
        shapes.append(kept[int(rng.integers(0, rank)) :] if rng.random() < 0.3 else kept)
    plan = []
    values = len(shapes)
    for _ in range(int(rng.integers(1, 13))):
        if rng.random() < 0.4:
            plan.append(("unary", int(rng.integers(len(_UNARY))), int(rng.integers(values)), None))
        else:
            op = int(rng.integers(len(_BINARY)))
            other = (
                float(np.float32(rng.standard_normal() * 4))
                if rng.random() < 0.3 and _BINARY[op] is not jnp.divide
                else int(rng.integers(values))
            )
            plan.append(("binary", op, int(rng.integers(values)), other))
        values += 1

    def fn(*inputs):
        computed = list(inputs)
        for kind, op, a, b in plan:
            if kind == "unary":
                computed.append(_UNARY[op](computed[a]))
            else:
                other = b if isinstance(b, float) else computed[b]
                if _BINARY[op] is jnp.divide and jnp.shape(other) != shape:
                    # Divided by a value its row shares: SHARED_DIVISORS' case.
                    other = jnp.broadcast_to(other, shape) + computed[0]
                computed.append(_BINARY[op](computed[a], other))
        return jnp.broadcast_to(computed[-1], shape)

    return fn, shapes


CASES = int(os.environ.get("SHLO_ELEMENTWISE_CASES", "40"))


@pytest.mark.parametrize("case", range(CASES))
def test_random_programs_have_the_generated_codes_bits(case) -> None:
    fn, shapes = _random_program(np.random.default_rng(1000 + case))
    _compare(fn, shapes, seed=case)


def test_llvm_code_run_by_the_jit_finds_the_kernel() -> None:
    # The conformance runner's path: LLVM-dialect bytecode compiled in this process.
    x = _special((30, 50), 3)
    source = _source(lambda x: jnp.tanh(x) * 2.0, [x])
    lowered = lower_to_llvm(source, "main", None, _pipeline())
    assert KERNEL.encode() in lowered.llvm_bytecode
    function = runtime.LoadedFunction(
        lowered.llvm_bytecode, lowered.input_types, lowered.result_types
    )
    want = _run(source, _pipeline(kernel=False), [x])
    _assert_same_bits(function([x]), want)


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
def test_code_compiled_ahead_of_time_carries_the_kernel(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SHLO_CODEGEN_STRATEGY", "fast-compile")  # for shlo-compile
    exported = export.export(jax.jit(lambda x: jnp.exp(x) + 1.0), platforms=["cpu"])(
        np.zeros((20, 30), np.float32)
    )
    assert object_symbol_kinds(tmp_path, exported.mlir_module())[KERNEL] == "W"
