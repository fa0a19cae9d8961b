"""Compositions that elementwise fusion once got wrong, compared with jax.jit.

A dot_general with batching but no contracting dimensions became an
all-parallel linalg.generic that accumulated into its zero-filled output;
fused into a consuming contraction it was re-accumulated once per index of
the consumer's reduction loop (Flax BERT, RoBERTa and ELECTRA were wrong).
shlo-parallel-inits-to-inputs makes such producers pure before fusion.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo


def compile_with_shlo(fn, *args):
    exported = jax.export.export(jax.jit(fn), platforms=["cpu"])(*args)
    return shlo.compile(exported.mlir_module_serialized, isolate=False)


def head_scaled_attention(w, h, v):
    return jnp.einsum("bhqk,bhkd->bhqd", jnp.einsum("bhqk,h->bhqk", w, h), v)


def outer_product_then_matmul(x, y, z):
    return jnp.einsum("i,j->ij", x, y) @ z


def sum_over_no_axes_then_matmul(x, z):
    # A reduce over no dimensions is all-parallel and reads its init too.
    return jnp.sum(x, axis=()) @ z


CASES = {
    "all_ones_attention": (
        head_scaled_attention,
        [
            np.ones((1, 2, 3, 4), np.float32),
            np.ones(2, np.float32),
            np.ones((1, 2, 4, 5), np.float32),
        ],
    ),
    "random_attention": (
        head_scaled_attention,
        [
            np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32),
            np.random.default_rng(1).standard_normal(3).astype(np.float32),
            np.random.default_rng(2).standard_normal((2, 3, 5, 6)).astype(np.float32),
        ],
    ),
    "outer_product_then_matmul": (
        outer_product_then_matmul,
        [
            np.arange(3, dtype=np.float32),
            np.arange(4, dtype=np.float32),
            np.ones((4, 2), np.float32),
        ],
    ),
    "sum_over_no_axes_then_matmul": (
        sum_over_no_axes_then_matmul,
        [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 4), np.float32)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_composition_matches_jax(name: str) -> None:
    fn, args = CASES[name]
    got = compile_with_shlo(fn, *args)(*args)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(*args)), rtol=1e-5, atol=1e-5)
