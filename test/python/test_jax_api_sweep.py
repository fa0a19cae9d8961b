"""jax.numpy, jax.nn, jax.scipy and lax functions at medium sizes: shlo against jax.jit.

Each case is a function as a user writes it, exported with jax.export (so
the program is jax's own lowering: control flow, gathers and scatters,
reductions with NaN propagation, sorts, FFTs, LAPACK custom calls, random
bits) and compiled by shlo.compile for the CPU. Sizes are odd and larger
than a vector (37 x 53, 4 x 33 x 65) so the vectorized code paths and their
remainders run. Outputs must match jax.jit: integers and booleans exactly,
floats within 1e-4 of each output's largest magnitude (bf16 and f16: 2e-2;
XLA drops the rounding of a bf16 result that is converted back to f32,
StableHLO keeps it, so the bf16 outputs are compared as bf16).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import lax

rng = np.random.default_rng(0)
A = rng.standard_normal((37, 53)).astype(np.float32)
B = rng.standard_normal((53, 29)).astype(np.float32)
P = (np.abs(A) + 0.1).astype(np.float32)  # positive
U = rng.uniform(-0.99, 0.99, (37, 53)).astype(np.float32)  # inside (-1, 1)
INTS = rng.integers(-50, 50, (37, 53)).astype(np.int32)
J = rng.integers(1, 7, (37, 53)).astype(np.int32)  # divisors and shift counts
V = rng.standard_normal(1000).astype(np.float32)
IMG = rng.standard_normal((2, 19, 23, 8)).astype(np.float32)
K = (rng.standard_normal((3, 3, 8, 12)) * 0.2).astype(np.float32)
IDX = rng.integers(0, 37, (64,)).astype(np.int32)
S3 = rng.standard_normal((4, 33, 65)).astype(np.float32)
KEY = jax.random.key_data(jax.random.PRNGKey(3))


def key(data: Any) -> Any:
    return jax.random.wrap_key_data(data)


CASES: dict[str, tuple[Callable[..., Any], ...]] = {
    "sum_axes": (lambda x: (x.sum(0), x.sum(1), x.sum()), A),
    "prod": (lambda x: jnp.prod(x * 0.1 + 1, axis=1), A),
    "max_min": (lambda x: (x.max(0), x.min(1)), A),
    "argmax": (lambda x: (jnp.argmax(x, 0), jnp.argmin(x, 1)), A),
    "mean_var_std": (lambda x: (x.mean(1), x.var(0), x.std()), A),
    "any_all": (lambda x: (jnp.any(x > 2, 1), jnp.all(x > -3, 0)), A),
    "cumsum2d": (lambda x: (jnp.cumsum(x, 0), jnp.cumsum(x, 1)), A),
    "cumprod": (lambda x: jnp.cumprod(x * 0.05 + 1, 1), A),
    "cummax": (lambda x: lax.cummax(x, 1), A),
    "logsumexp": (lambda x: jax.nn.logsumexp(x, 1), A),
    "trig": (lambda x: (jnp.sin(x), jnp.cos(x), jnp.tan(x * 0.3)), A),
    "atrig": (lambda u: (jnp.arcsin(u), jnp.arccos(u), jnp.arctan(u * 5)), U),
    "hyper": (lambda x: (jnp.sinh(x), jnp.cosh(x), jnp.arcsinh(x), jnp.arctanh(x * 0.3)), A),
    "logs": (lambda p: (jnp.log(p), jnp.log1p(p), jnp.log2(p), jnp.log10(p)), P),
    "exps": (lambda x: (jnp.exp2(x), jnp.expm1(x)), A),
    "roots": (lambda p: (jnp.sqrt(p), lax.rsqrt(p), jnp.cbrt(p - 1)), P),
    "power": (lambda p, x: jnp.power(p, x), P, A),
    "rounding": (
        lambda x: (
            jnp.floor(x * 3),
            jnp.ceil(x * 3),
            jnp.round(x * 3),
            jnp.trunc(x * 3),
            jnp.rint(x * 3),
        ),
        A,
    ),
    "sign_abs": (lambda x: (jnp.sign(x), jnp.abs(x), jnp.copysign(x, -x)), A),
    "special": (
        lambda u: (
            jax.scipy.special.erf(u * 3),
            jax.scipy.special.erfinv(u),
            jax.scipy.special.erfc(u * 3),
        ),
        U,
    ),
    "gamma": (
        lambda p: (jax.scipy.special.gammaln(p * 5), jax.scipy.special.digamma(p * 5 + 0.5)),
        P,
    ),
    "activations": (
        lambda x: (
            jax.nn.sigmoid(x),
            jax.nn.softplus(x),
            jax.nn.gelu(x, approximate=False),
            jax.nn.gelu(x),
            jax.nn.silu(x),
            jax.nn.relu6(x * 4),
            jax.nn.elu(x),
            jax.nn.leaky_relu(x),
        ),
        A,
    ),
    "softmax_ax0": (lambda x: jax.nn.softmax(x, axis=0), A),
    "log_softmax": (lambda x: jax.nn.log_softmax(x, axis=1), A),
    "transpose_flip": (
        lambda x: (x.T, jnp.flip(x, 0), jnp.flip(x, 1), jnp.roll(x, 5, 1), jnp.roll(x, -3, 0)),
        A,
    ),
    "pad_modes": (
        lambda x: (
            jnp.pad(x, ((1, 2), (3, 0))),
            jnp.pad(x, 2, mode="reflect"),
            jnp.pad(x, 2, mode="edge"),
            jnp.pad(x, 3, mode="wrap"),
            jnp.pad(x, 2, mode="symmetric"),
        ),
        A,
    ),
    "tile_repeat": (
        lambda x: (jnp.tile(x, (2, 3)), jnp.repeat(x, 3, axis=0), jnp.repeat(x, 2, axis=1)),
        A,
    ),
    "concat_stack_split": (
        lambda x: (jnp.concatenate([x, x * 2], 1), jnp.stack([x, -x], 0), *jnp.split(x[:36], 4, 0)),
        A,
    ),
    "where_clip": (lambda x: (jnp.where(x > 0, x, x * 0.1), jnp.clip(x, -0.5, 0.7)), A),
    "take": (lambda x, i: (jnp.take(x, i, axis=0), x[i, 5:9], x[:, i % 53]), A, IDX),
    "take_along": (lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1), A),
    "sort": (lambda x: (jnp.sort(x, 0), jnp.sort(x, 1), jnp.argsort(x, axis=1)), A),
    "sort_int": (lambda i: (jnp.sort(i, 1), jnp.argsort(i, 0, stable=True)), INTS),
    "top_k": (lambda x: lax.top_k(x, 7), A),
    "searchsorted": (lambda v, x: jnp.searchsorted(jnp.sort(v), x), V, A),
    "diff": (lambda x: (jnp.diff(x, axis=1), jnp.diff(x, n=2, axis=0)), A),
    "convolve": (
        lambda v: (
            jnp.convolve(v, v[:17], mode="same"),
            jnp.correlate(v[:300], v[:31], mode="valid"),
        ),
        V,
    ),
    "outer_kron": (
        lambda v: (jnp.outer(v[:40], v[:50]), jnp.kron(v[:6].reshape(2, 3), v[6:18].reshape(3, 4))),
        V,
    ),
    "einsum": (
        lambda s: (
            jnp.einsum("bij,bkj->bik", s, s),
            jnp.einsum("bij->ji", s),
            jnp.einsum("bij,bij->b", s, s),
        ),
        S3,
    ),
    "tensordot": (lambda s: jnp.tensordot(s, s, axes=([0, 2], [0, 2])), S3),
    "matmul": (lambda a, b: (a @ b, (a @ b).T @ a), A, B),
    "batched_matmul": (lambda s: s @ jnp.swapaxes(s, 1, 2), S3),
    "tri": (lambda x: (jnp.triu(x), jnp.tril(x, -2), jnp.trace(x), jnp.diagonal(x, 3)), A),
    "interp": (
        lambda v: jnp.interp(v * 2, jnp.linspace(-3, 3, 50), jnp.sin(jnp.linspace(-3, 3, 50))),
        V,
    ),
    "histogram": (lambda v: jnp.histogram(v, bins=13, range=(-3, 3))[0], V),
    "bincount": (lambda i: jnp.bincount(i.ravel() + 50, length=100), INTS),
    "segment_sum": (lambda x, i: jax.ops.segment_sum(x, i % 10, num_segments=10), A, IDX[:37]),
    "one_hot": (lambda i: jax.nn.one_hot(i % 10, 10), INTS),
    "random": (
        lambda k: (
            jax.random.uniform(key(k), (33, 65)),
            jax.random.normal(key(k), (100,)),
            jax.random.randint(key(k), (50,), 0, 1000),
            jax.random.permutation(key(k), 40),
        ),
        KEY,
    ),
    "scan": (lambda v: lax.scan(lambda c, x: (c * 0.9 + x, c), 0.0, v)[0:2], V),
    "fori": (lambda x: lax.fori_loop(0, 7, lambda i, y: y * 0.9 + jnp.sin(y) * i, x), A),
    "while": (
        lambda x: lax.while_loop(
            lambda s: s[1] < 100.0,
            lambda s: (s[0] * 1.1, s[1] + jnp.abs(s[0]).sum() * 0.01 + 1),
            (x, 0.0),
        ),
        A,
    ),
    "cond": (lambda x: lax.cond(x.sum() > 0, lambda y: y * 2, lambda y: y - 1, x), A),
    "switch": (lambda x, i: lax.switch(i[0, 0] % 3, [jnp.sin, jnp.cos, jnp.tanh], x), A, J),
    "pools": (
        lambda m: (
            lax.reduce_window(m, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
            lax.reduce_window(m, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4,
        ),
        IMG,
    ),
    "conv_variants": (
        lambda m, k: (
            lax.conv_general_dilated(
                m, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            ),
            lax.conv_general_dilated(
                m,
                k,
                (1, 1),
                "VALID",
                rhs_dilation=(2, 2),
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
            ),
            lax.conv_general_dilated(
                m,
                k[:, :, :2, :],
                (1, 1),
                ((1, 1), (2, 0)),
                feature_group_count=4,
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
            ),
        ),
        IMG,
        K,
    ),
    "conv_transpose": (
        lambda m, k: lax.conv_transpose(
            m, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        ),
        IMG,
        K,
    ),
    "dynamic_slice": (
        lambda x, i: (
            lax.dynamic_slice(x, (i[0, 0], i[1, 1]), (5, 9)),
            lax.dynamic_update_slice(x, jnp.ones((4, 4)), (i[2, 2], i[3, 3])),
        ),
        A,
        J,
    ),
    "scatter": (
        lambda x, i: (
            x.at[i].add(1.0),
            x.at[i, 3].set(-5.0),
            x.at[i].max(0.5),
            x.at[i % 5].multiply(1.1),
        ),
        A,
        IDX,
    ),
    "fft": (
        lambda x: (
            jnp.abs(jnp.fft.fft(x, axis=1)),
            jnp.fft.rfft(x).real,
            jnp.fft.irfft(jnp.fft.rfft(x[:, :52]), n=52),
            jnp.abs(jnp.fft.fft2(x[:32, :48])),
        ),
        A,
    ),
    "polyval": (lambda v: jnp.polyval(jnp.array([0.3, -1.0, 2.0, 0.5]), v), V),
    "nan_funcs": (
        lambda x: (
            jnp.nanmean(jnp.where(x > 1, jnp.nan, x), 1),
            jnp.nanmax(jnp.where(x > 1, jnp.nan, x), 0),
            jnp.nansum(jnp.where(x < 0, jnp.nan, x)),
        ),
        A,
    ),
    "isx": (lambda x: (jnp.isnan(x / (x - x)), jnp.isinf(1 / (x - x)), jnp.isfinite(x)), A),
    "bitwise": (
        lambda i, j: (i & j, i | j, i ^ j, ~i, i << j, i >> j, lax.shift_right_logical(i, j)),
        INTS,
        J,
    ),
    "int_div": (
        lambda i, j: (
            i // j,
            i % j,
            jnp.fmod(i, j),
            lax.div(i, j),
            lax.rem(i, j),
            i * j,
            jnp.power(j, 3),
        ),
        INTS,
        J,
    ),
    "int_misc": (
        lambda i: (
            lax.clz(i),
            lax.population_count(i),
            jnp.abs(i),
            jnp.sign(i),
            jnp.maximum(i, 3),
            i.sum(1),
            i.max(0),
        ),
        INTS,
    ),
    "float_int": (
        lambda x: (
            (x * 100).astype(jnp.int32),
            (x * 1e10).astype(jnp.int32),
            (x * 3).astype(jnp.uint8),
            jnp.int32(7) + x.astype(jnp.int8),
        ),
        A,
    ),
    "bf16_f16": (
        lambda x: (
            x.astype(jnp.bfloat16) * 3,
            jnp.exp(x.astype(jnp.float16)),
            x.astype(jnp.bfloat16) @ x.T.astype(jnp.bfloat16),
        ),
        A,
    ),
    "f64": (
        lambda x: (jnp.exp(x.astype(jnp.float64)), x.astype(jnp.float64) @ x.T.astype(jnp.float64)),
        A,
    ),
    "complex": (
        lambda x: (
            jnp.abs(jnp.exp(1j * x)),
            (x + 1j * x.T[:37, :37].sum()).real,
            jnp.angle(x + 2j),
        ),
        A,
    ),
    "argmax_ties": (lambda i: (jnp.argmax(i % 3, 1), jnp.argmin(i % 3, 0)), INTS),
    "linalg_norms": (
        lambda x: (
            jnp.linalg.norm(x),
            jnp.linalg.norm(x, axis=1),
            jnp.linalg.norm(x, ord=1, axis=0),
            jnp.linalg.norm(x[:20, :20], ord=2),
        ),
        A,
    ),
    "linalg_solve": (
        lambda x: (
            jnp.linalg.solve(x[:20, :20] + 5 * jnp.eye(20), x[:20, :3]),
            jnp.linalg.det(x[:10, :10]),
            jnp.linalg.pinv(x[:12, :15]),
        ),
        A,
    ),
    "meshgrid_arange": (
        lambda x: (
            jnp.meshgrid(jnp.arange(5), jnp.arange(7))[0] + x[0, 0].astype(jnp.int32),
            jnp.linspace(0, 1, 17) * x[0, 0],
        ),
        A,
    ),
    "median_quantile": (
        lambda x: (jnp.median(x, 1), jnp.quantile(x, 0.3, axis=0), jnp.percentile(x, 90)),
        A,
    ),
    "layer_norm_like": (
        lambda s: (s - s.mean(-1, keepdims=True)) * lax.rsqrt(s.var(-1, keepdims=True) + 1e-5),
        S3,
    ),
    "attention_like": (
        lambda s: (
            jax.nn.softmax(
                jnp.einsum("bqd,bkd->bqk", s, s) / 8 + jnp.triu(jnp.full((33, 33), -1e9), 1), -1
            )
            @ s
        ),
        S3,
    ),
    "dot_general_odd": (lambda s: lax.dot_general(s, s, (((1,), (1,)), ((0,), (0,)))), S3),
    "reverse_cumsum": (lambda x: jnp.cumsum(x[:, ::-1], axis=1)[:, ::-1], A),
    "associative_scan": (lambda v: lax.associative_scan(jnp.add, v), V),
    "vmap_grad": (lambda x: jax.vmap(jax.grad(lambda r: jnp.sum(jnp.tanh(r) ** 2)))(x), A),
    "jvp_hessian": (lambda v: jax.hessian(lambda y: jnp.sum(jnp.sin(y) * y[::-1]))(v[:20]), V),
}


def assert_close(got: np.ndarray, want: np.ndarray, where: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{where}: {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"
    )
    if not (np.issubdtype(want.dtype, np.inexact) or want.dtype.name == "bfloat16"):
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    wide = np.complex128 if np.iscomplexobj(want) else np.float64
    got64, want64 = got.astype(wide), want.astype(wide)
    finite = np.isfinite(want64)
    assert np.array_equal(finite, np.isfinite(got64)), f"{where}: non-finite values differ"
    scale = max(float(np.max(np.abs(want64[finite]), initial=0.0)), 1e-6)
    rtol = 2e-2 if want.dtype.name in ("bfloat16", "float16") else 1e-4
    np.testing.assert_allclose(
        got64[finite], want64[finite], rtol=0, atol=rtol * scale, err_msg=where
    )


@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax_jit(name: str) -> None:
    fn, *args = CASES[name]
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    exported = jax.export.export(jax.jit(fn))(*args)
    leaves = jax.tree_util.tree_leaves(args)
    inputs = [np.asarray(leaves[i]) for i in exported.module_kept_var_idx]
    got = jax.tree_util.tree_leaves(shlo.compile(exported.mlir_module_serialized)(*inputs))
    assert len(got) == len(want)
    for index, (g, w) in enumerate(zip(got, want)):
        assert_close(np.asarray(g), np.asarray(w), f"{name} output {index}")
