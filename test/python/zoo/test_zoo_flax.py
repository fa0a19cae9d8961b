"""Flax models (linen and nnx), random kernels, and gather-heavy programs.

Parameters and batch statistics are arguments of the exported function.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flax")

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import nnx
from zoo_harness import check

# The pre-norm block is the bench's (bench/ is a package at the repository root).
sys.path.insert(0, str(Path(__file__).parents[3]))
from bench.zoo import pre_norm_block

KEY = jax.random.PRNGKey(0)


def normal(shape: tuple[int, ...], seed: int = 0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


class Mlp(nn.Module):
    features: tuple[int, ...] = (64, 64, 10)
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x):
        for width in self.features[:-1]:
            x = nn.gelu(nn.Dense(width, dtype=self.dtype, param_dtype=self.dtype)(x))
        return nn.Dense(self.features[-1], dtype=self.dtype, param_dtype=self.dtype)(x)


class Cnn(nn.Module):
    """Convolutions with BatchNorm, pooling and a dense head."""

    @nn.compact
    def __call__(self, x, train: bool = False):
        for width in (8, 16):
            # No bias before BatchNorm: its gradient is zero, only rounding noise.
            x = nn.Conv(width, (3, 3), use_bias=False)(x)
            x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
            x = nn.relu(x)
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(10)(x)


class Lstm(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.RNN(nn.OptimizedLSTMCell(16))(x)
        return nn.RNN(nn.LSTMCell(16), reverse=True, keep_order=True)(x)


class Gru(nn.Module):
    """A GRU over time with nn.scan, returning the final carry and all outputs."""

    @nn.compact
    def __call__(self, x):
        cell = nn.scan(
            nn.GRUCell,
            variable_broadcast="params",
            split_rngs={"params": False},
            in_axes=1,
            out_axes=1,
        )(features=16)
        carry = jnp.zeros((x.shape[0], 16), x.dtype)
        return cell(carry, x)


class ConvZoo(nn.Module):
    """One of each kind of convolution flax offers, summed into one output each."""

    @nn.compact
    def __call__(self, image, sequence, volume):
        dilated = nn.Conv(4, (3, 3), kernel_dilation=(2, 2))(image)
        grouped = nn.Conv(8, (3, 3), feature_group_count=4)(image)
        transposed = nn.ConvTranspose(4, (3, 3), strides=(2, 2))(image)
        strided = nn.Conv(4, (3, 3), strides=(2, 2), padding="VALID")(image)
        causal = nn.Conv(4, (3,), padding="CAUSAL", kernel_dilation=(2,))(sequence)
        volumetric = nn.Conv(4, (2, 3, 3), strides=(1, 2, 2))(volume)
        return dilated, grouped, transposed, strided, causal, volumetric


def init_and_apply(module: nn.Module, *inputs):
    variables = module.init(KEY, *inputs)
    return (lambda variables, *xs: module.apply(variables, *xs)), (variables, *inputs)


def test_mlp() -> None:
    check("linen_mlp", *init_and_apply(Mlp(), normal((4, 32))))


def test_mlp_bf16() -> None:
    # bf16 has 8 bits of mantissa: compare to a few units in its last place.
    fn, args = init_and_apply(Mlp(dtype=jnp.bfloat16), normal((4, 32)).astype(jnp.bfloat16))
    check("linen_mlp_bf16", fn, args, rtol=2e-2)


def test_cnn_batchnorm_inference() -> None:
    check("linen_cnn_batchnorm", *init_and_apply(Cnn(), normal((2, 16, 16, 3))))


def test_lstm() -> None:
    check("linen_lstm", *init_and_apply(Lstm(), normal((2, 10, 8))))


def test_gru_scan() -> None:
    check("linen_gru_scan", *init_and_apply(Gru(), normal((2, 10, 8))))


def test_conv_zoo() -> None:
    fn, args = init_and_apply(
        ConvZoo(), normal((2, 12, 12, 8)), normal((2, 16, 4), 1), normal((1, 4, 8, 8, 2), 2)
    )
    check("linen_conv_zoo", fn, args)


def test_nnx_transformer_block() -> None:
    graphdef, state = nnx.split(pre_norm_block(32, 4, nnx.Rngs(0)))

    def forward(state, x):
        return nnx.merge(graphdef, state)(x)

    check("nnx_transformer_block", forward, (state, normal((2, 8, 32))))


def test_dropout_with_key_argument() -> None:
    class DropoutMlp(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dropout(0.5, deterministic=False)(x)
            return Mlp()(x)

    x = normal((4, 32))
    module = DropoutMlp()
    variables = module.init({"params": KEY, "dropout": KEY}, x)

    def forward(variables, x, key):
        return module.apply(variables, x, rngs={"dropout": key})

    check("linen_dropout_key", forward, (variables, x, jax.random.PRNGKey(42)))


def test_random_normal_inside() -> None:
    # A VAE-style reparameterization: the key is an argument, the noise is drawn inside.
    def sample(mean, log_var, key):
        noise = jax.random.normal(key, mean.shape)
        bits = jax.random.bits(jax.random.fold_in(key, 1), (4,))
        pick = jax.random.categorical(jax.random.fold_in(key, 2), mean, axis=-1)
        return mean + jnp.exp(0.5 * log_var) * noise, bits, pick

    check(
        "random_normal_inside",
        sample,
        (normal((4, 16)), normal((4, 16), 1), jax.random.PRNGKey(7)),
    )


def test_gather_heavy() -> None:
    # Embedding lookups, take_along_axis and top-k selection by indexing.
    def retrieve(table, ids, queries):
        embedded = table[ids]  # (batch, seq, dim)
        scores = jnp.einsum("bsd,bd->bs", embedded, queries)
        order = jnp.argsort(-scores, axis=-1)
        top_ids = jnp.take_along_axis(ids, order[:, :3], axis=-1)
        top_vectors = jnp.take(table, top_ids, axis=0)
        values, indices = jax.lax.top_k(scores, 2)
        gathered = embedded[jnp.arange(ids.shape[0])[:, None], indices]
        return top_ids, top_vectors.sum(-1), values, gathered

    ids = np.random.default_rng(0).integers(0, 50, (3, 10), dtype=np.int32)
    check("gather_heavy", retrieve, (normal((50, 16)), ids, normal((3, 16), 1)))
