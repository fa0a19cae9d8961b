"""Every dot_general becomes a named (batch) matmul, and no contraction recomputes its producers.

shlo-canonicalize-dot-general (before the linalg lowering) and the fences of
shlo-fuse-elementwise-trees (around upstream fusion) checked on the IR after
the stages, and their numerics against jax and the reference interpreter.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import shlo
from jax import export
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, CpuPipeline
from shlo.frontend import FRONTEND
from shlo.interpreter import interpret
from shlo.ir_utils import linalg_generic_parts, ops_named
from shlo.passes.linalg.fuse_elementwise_trees import FENCE_PREFIX

# (lhs shape, rhs shape, (lhs contracting, rhs contracting), (lhs batch, rhs batch))
DIMENSION_NUMBERS = {
    "matmul": ((3, 4), (4, 5), ((1,), (0,)), ((), ())),
    "batch_matmul": ((2, 3, 4), (2, 4, 5), ((2,), (1,)), ((0,), (0,))),
    "rank3_times_matrix": ((2, 3, 5), (5, 4), ((2,), (0,)), ((), ())),
    "attention_bqhd_bkhd": ((2, 3, 2, 4), (2, 5, 2, 4), ((3,), (3,)), ((0, 2), (0, 2))),
    "batch_not_leading": ((5, 2, 3), (2, 4, 5), ((0,), (2,)), ((1,), (0,))),
    "two_contracting": ((3, 4, 5), (4, 5, 6), ((1, 2), (0, 1)), ((), ())),
    "two_contracting_swapped": ((3, 4, 5), (5, 6, 4), ((1, 2), (2, 0)), ((), ())),
    "transposed_rhs": ((3, 4), (5, 4), ((1,), (1,)), ((), ())),
    "free_dims_both_sides": ((2, 3, 4), (4, 5, 2), ((2,), (0,)), ((), ())),
    "mixed_batch_order": ((2, 3, 4, 5), (4, 5, 2, 6), ((3,), (1,)), ((0, 2), (2, 0))),
    "vector_times_matrix": ((4,), (4, 6), ((0,), (0,)), ((), ())),
    "matrix_times_vector": ((3, 4), (4,), ((1,), (0,)), ((), ())),
    "vector_dot": ((4,), (4,), ((0,), (0,)), ((), ())),
    "batched_vector_dot": ((2, 4), (2, 4), ((1,), (1,)), ((0,), (0,))),
    "empty_contraction": ((3, 0), (0, 2), ((1,), (0,)), ((), ())),
    "outer_product": ((3,), (4,), ((), ()), ((), ())),
    "batched_outer_product": ((2, 3), (2, 4), ((), ()), ((0,), (0,))),
}
CONTRACTING = [name for name, (*_, (lc, _), _) in DIMENSION_NUMBERS.items() if lc]

DTYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "i32": np.int32,
    "c64": np.complex64,
}


def dots(names: list[str]) -> Callable[..., tuple[jax.Array, ...]]:
    """A function of (lhs, rhs) pairs returning the dot_general of each case in ``names``."""

    def fn(*args: jax.Array) -> tuple[jax.Array, ...]:
        results = []
        for name, lhs, rhs in zip(names, args[::2], args[1::2]):
            *_, contracting, batch = DIMENSION_NUMBERS[name]
            results.append(jax.lax.dot_general(lhs, rhs, (contracting, batch)))
        return tuple(results)

    return fn


all_dots = dots(list(DIMENSION_NUMBERS))


def dot_inputs(dtype: type, seed: int = 0) -> list[np.ndarray]:
    """Small integers: every product and sum is exact in every dtype, in any order."""
    rng = np.random.default_rng(seed)
    arrays = []
    for lhs_shape, rhs_shape, *_ in DIMENSION_NUMBERS.values():
        for shape in (lhs_shape, rhs_shape):
            values = rng.integers(-3, 4, shape)
            if dtype is np.complex64:
                values = values + 1j * rng.integers(-3, 4, shape)
            arrays.append(values.astype(dtype))
    return arrays


def exported_text(fn: Callable[..., object], args: list[np.ndarray]) -> str:
    return str(export.export(jax.jit(fn), platforms=["cpu"])(*args).mlir_module())


def lowered_through(text: str, stage: str) -> shlo.ir.Module:
    module = shlo.load_module(text)
    shlo.run_pipeline(module, [*FRONTEND, "shlo-remove-dynamism"])
    # The fusion decisions, before any strategy tiles and vectorizes the kernels.
    shlo.run_pipeline(module, CpuPipeline(strategy=SCALAR_LOOPS).elements(through=stage))
    return module


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_dot_general_matches_jax_and_interpreter(dtype: str) -> None:
    args = dot_inputs(DTYPES[dtype])
    text = exported_text(all_dots, args)
    got = shlo.compile(text, isolate=False)(*args)
    want = jax.jit(all_dots)(*args)
    for name, a, b in zip(DIMENSION_NUMBERS, got, want):
        b = np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    if dtype == "c64":
        return  # the interpreter returns no complex values
    # Without the empty contraction, on which the interpreter aborts the process.
    names = [name for name in DIMENSION_NUMBERS if name != "empty_contraction"]
    kept = [i for i, name in enumerate(DIMENSION_NUMBERS) if name in names]
    pairs = [array for i in kept for array in args[2 * i : 2 * i + 2]]
    oracle = interpret(exported_text(dots(names), pairs), "main", pairs)
    for name, a, c in zip(names, [got[i] for i in kept], oracle):
        np.testing.assert_array_equal(a, c, err_msg=name)


def test_every_contraction_is_a_named_matmul_after_legalization() -> None:
    for dtype in (np.float32, np.float16, np.int32, np.complex64):
        module = lowered_through(exported_text(all_dots, dot_inputs(dtype)), "legalize-to-linalg")
        named = ops_named(module.operation, "linalg.matmul", "linalg.batch_matmul")
        # A complex product is four real ones (shlo-split-complex-dots).
        per_dot = 4 if np.issubdtype(dtype, np.complexfloating) else 1
        assert len(named) == per_dot * len(CONTRACTING), dtype
        others = ops_named(
            module.operation, "linalg.matvec", "linalg.vecmat", "linalg.dot", "linalg.reduce"
        )
        assert not others, [op.name for op in others]
        # Outer products stay all-parallel; nothing reduces outside the matmuls.
        for op in ops_named(module.operation, "linalg.generic"):
            assert linalg_generic_parts(op).all_parallel, str(op)


def test_legacy_dot_becomes_a_matmul_and_accumulates_f16_in_f32() -> None:
    source = """
    func.func @main(%a: tensor<2x300xf16>, %b: tensor<300xf16>) -> tensor<2xf16> {
      %0 = stablehlo.dot %a, %b : (tensor<2x300xf16>, tensor<300xf16>) -> tensor<2xf16>
      return %0 : tensor<2xf16>
    }"""
    module = lowered_through(source, "legalize-to-linalg")
    (matmul,) = ops_named(module.operation, "linalg.matmul")
    assert "tensor<2x300xf32>" in str(matmul)
    # 2048 + 1 + 1 + ... rounds to 2048 at every step in f16, not in f32.
    a = np.ones((2, 300), np.float16)
    a[:, 0] = 2048
    b = np.ones(300, np.float16)
    got = shlo.compile(source, isolate=False)(a, b)
    np.testing.assert_array_equal(got, np.full(2, 2048 + 299, np.float32).astype(np.float16))


def _bodies_with_math(module: shlo.ir.Module) -> list[str]:
    """The linalg ops with reduction loops whose body computes a math function."""
    found = []
    for op in ops_named(module.operation):
        is_reduction = op.name in ("linalg.matmul", "linalg.batch_matmul") or (
            op.name == "linalg.generic" and not linalg_generic_parts(op).all_parallel
        )
        if is_reduction and ops_named(op, "math.tanh", "math.exp", "math.erf"):
            found.append(op.name)
    return found


PRODUCER_CASES = {
    "gelu_matmul": (
        lambda x, w: jax.nn.gelu(x) @ w,
        [(2, 16, 512), (512, 128)],
        "linalg.matmul",
    ),
    "attention_exp": (
        lambda q, k: jnp.einsum("bqhd,bkhd->bhqk", jnp.exp(q), k),
        [(2, 8, 4, 16), (2, 6, 4, 16)],
        "linalg.batch_matmul",
    ),
    "softmax_attention": (
        lambda q, k, v: jnp.einsum(
            "bhqk,bkhd->bqhd", jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k)), v
        ),
        [(2, 8, 4, 16), (2, 6, 4, 16), (2, 6, 4, 16)],
        "linalg.batch_matmul",
    ),
}


def test_expensive_producer_is_not_recomputed_by_a_broadcast() -> None:
    # jnp.outer broadcasts both sides and multiplies: exp must run 64 times, not 64 x 32.
    def fn(u: jax.Array, v: jax.Array) -> jax.Array:
        return jnp.outer(jnp.exp(u), v) + 1.0

    rng = np.random.default_rng(2)
    args = [rng.standard_normal(n).astype(np.float32) for n in (64, 32)]
    text = exported_text(fn, args)
    module = lowered_through(text, "tensor-codegen")
    computing_exp = [
        op for op in ops_named(module.operation, "linalg.generic") if ops_named(op, "math.exp")
    ]
    assert computing_exp
    for op in computing_exp:
        assert np.prod(op.results[0].type.shape) == 64, str(op)
    got = shlo.compile(text, isolate=False)(*args)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(*args)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PRODUCER_CASES))
def test_producers_stay_out_of_contractions(name: str) -> None:
    fn, shapes, contraction = PRODUCER_CASES[name]
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    text = exported_text(fn, args)
    module = lowered_through(text, "tensor-codegen")
    assert ops_named(module.operation, contraction)
    assert not _bodies_with_math(module)
    assert FENCE_PREFIX not in str(module)
    got = shlo.compile(text, isolate=False)(*args)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(*args)), rtol=1e-4, atol=1e-4)


def test_a_reshaped_operand_of_the_consumer_leaves_the_matmul_named() -> None:
    """An RNN step, h = tanh(h @ w + xs[t]) in a scan: the slice xs[t] is reshaped
    ([1, 8, 64] -> [8, 64]), and upstream fusion moved that reshape through the add
    onto the matmul, a linalg.generic no recipe tiles (3.4x XLA's time at 1024 wide)."""

    def rnn(w: jax.Array, xs: jax.Array) -> jax.Array:
        def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
            return jnp.tanh(h @ w + x), h

        return jax.lax.scan(step, jnp.zeros(xs.shape[1:]), xs)[1]

    rng = np.random.default_rng(3)
    args = [0.1 * rng.standard_normal(s).astype(np.float32) for s in ((64, 64), (5, 8, 64))]
    text = exported_text(rnn, args)
    module = lowered_through(text, "tensor-codegen")
    assert ops_named(module.operation, "linalg.matmul")
    reductions = [
        op
        for op in ops_named(module.operation, "linalg.generic")
        if not linalg_generic_parts(op).all_parallel
    ]
    assert not reductions, [str(op)[:200] for op in reductions]
    got = shlo.compile(text, isolate=False)(*args)
    np.testing.assert_allclose(got, np.asarray(jax.jit(rnn)(*args)), rtol=1e-5, atol=1e-5)
