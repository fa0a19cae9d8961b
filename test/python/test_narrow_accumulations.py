"""Sums, cumsums and convolutions of bf16 and f16 accumulate as jax.jit accumulates them.

Ones make the loss plain: in bf16 (8 bits) 256 + 1 rounds to 256, so a sum of
4096 ones accumulated in bf16 stops at 256. shlo-accumulate-narrow-floats-as-xla
computes sums and convolutions in f32 and rounds once, and cuts cumsums into
blocks of 16 as XLA does; before it, the bias gradient of a bf16 layer and a
bf16 convolution over 1024 channels were 16x and 36x too small, and a bf16
cumsum stopped growing at 256.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import shlo
from jax import lax

BF16 = ml_dtypes.bfloat16


def bias_gradient(x, b):
    # The transpose of the bias's broadcast is a bf16 reduce that jax emits itself.
    return jax.grad(lambda b: jnp.sum((x + b) * x))(b)


def convolution(x, w):
    return lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def column_sum(x):
    return lax.reduce(x, jnp.zeros((), x.dtype), lax.add, (0,))


CASES = {
    "bias_gradient": (bias_gradient, [np.ones((4096, 4), BF16), np.zeros(4, BF16)]),
    "convolution": (convolution, [np.ones((1, 8, 8, 1024), BF16), np.ones((3, 3, 1024, 4), BF16)]),
    "cumsum": (jnp.cumsum, [np.ones(4096, BF16)]),
    "reverse_cumsum": (lambda x: jnp.cumsum(x[::-1])[::-1], [np.ones(4096, BF16)]),
    "f16_column_sum": (column_sum, [np.ones((4096, 3), np.float16)]),
}


def compiled_and_jax(fn, args):
    exported = jax.export.export(jax.jit(fn), platforms=["cpu"])(*args)
    kept = [args[i] for i in sorted(exported.module_kept_var_idx)]
    ours = shlo.compile(exported.mlir_module_serialized, isolate=False)(*kept)
    return np.asarray(ours, np.float64), np.asarray(jax.jit(fn)(*args), np.float64)


@pytest.mark.parametrize("name", CASES)
def test_narrow_accumulations_match_jax(name: str) -> None:
    fn, args = CASES[name]
    ours, theirs = compiled_and_jax(fn, args)
    np.testing.assert_allclose(ours, theirs, rtol=1e-2)


def test_the_ones_reach_their_count() -> None:
    ours, _ = compiled_and_jax(*CASES["bias_gradient"])
    # d/db sum((x + b) x) = sum over the rows of x: 4096 ones.
    assert list(ours) == [4096.0] * 4
    ours, _ = compiled_and_jax(*CASES["convolution"])
    assert ours[0, 4, 4, 0] == 9 * 1024


def test_a_sum_pool_keeps_its_element_type_as_xla_does() -> None:
    """Pooling windows are not widened: XLA adds them in bf16 too (1024 ones: 256)."""
    x = np.ones(4096, BF16)

    def pool(x):
        return lax.reduce_window(x, jnp.zeros((), x.dtype), lax.add, (1024,), (1024,), "VALID")

    ours, theirs = compiled_and_jax(pool, [x])
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [BF16, np.float16])
@pytest.mark.parametrize(
    ("shape", "axis"), [((17,), 0), ((100,), 0), ((5000,), 0), ((300, 3), 0), ((2, 257), 1)]
)
def test_forward_cumsums_are_xlas_bit_for_bit(dtype, shape, axis) -> None:
    """Blocks of 16, scanned, then their totals: the same roundings as XLA's."""
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ours, theirs = compiled_and_jax(lambda x: jnp.cumsum(x, axis=axis), [x])
    np.testing.assert_array_equal(ours, theirs)
