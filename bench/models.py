"""The issue-10 models: JAX functions, their inputs, numpy versions and work counts.

Each builder takes ``quick``: full sizes are the issue's; quick sizes (for CI,
where only correctness is checked) are small enough that today's scalar-loop
code runs all twelve in about a minute. Flax, optax and transformers are
imported by the builders that need them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclass
class Model:
    name: str
    shapes: str  # what the sizes are, for the table and the JSON
    fn: Callable[..., Any]  # the JAX function that is exported and jitted
    args: tuple[Any, ...]  # its arguments, pytrees of arrays
    # flops (unit "flop") or bytes moved (unit "byte") per call; None: XLA's cost analysis.
    work: float | None
    unit: str
    numpy_fn: Callable[..., Any] | None = None  # same arguments as fn, numpy arrays
    # Tolerance relative to each output's largest magnitude (bench.compare).
    rtol: float = 1e-4
    work_note: str = ""


def normal(shape: tuple[int, ...], seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def matmul(quick: bool) -> Model:
    n = 128 if quick else 1024
    return Model(
        "matmul",
        f"{n}x{n}x{n} f32",
        lambda a, b: a @ b,
        (normal((n, n)), normal((n, n), 1)),
        work=2.0 * n**3,
        unit="flop",
        numpy_fn=lambda a, b: a @ b,
    )


def _gelu_tanh_numpy(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (x + 0.044715 * x**3)))


def mlp(quick: bool) -> Model:
    m, k, n = (32, 128, 512) if quick else (256, 1024, 4096)
    return Model(
        "mlp",
        f"gelu_tanh(x[{m},{k}] @ w[{k},{n}] + b)",
        lambda x, w, b: jax.nn.gelu(x @ w + b, approximate=True),
        (normal((m, k)), normal((k, n), 1, 1 / math.sqrt(k)), normal((n,), 2)),
        work=2.0 * m * k * n,
        unit="flop",
        numpy_fn=lambda x, w, b: _gelu_tanh_numpy(x @ w + b),
        work_note="matmul flops only",
    )


def _softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax(quick: bool) -> Model:
    rows, cols = (64, 512) if quick else (512, 4096)
    return Model(
        "softmax",
        f"[{rows},{cols}] f32, last axis",
        lambda x: jax.nn.softmax(x, axis=-1),
        (normal((rows, cols)),),
        work=2.0 * rows * cols * 4,
        unit="byte",
        numpy_fn=_softmax_numpy,
    )


def conv2d(quick: bool) -> Model:
    size, channels = (16, 16) if quick else (56, 64)

    def conv(x, w):
        return jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    return Model(
        "conv2d",
        f"NHWC 1x{size}x{size}x{channels} * HWIO 3x3x{channels}x{channels}, SAME",
        conv,
        (normal((1, size, size, channels)), normal((3, 3, channels, channels), 1, 0.1)),
        work=2.0 * size * size * channels * 9 * channels,
        unit="flop",
    )


def _chain(xp: Any) -> Callable[[Any], Any]:
    """The 8-op elementwise chain, in jax.numpy or numpy."""

    def chain(x):
        y = x * 1.5
        y = y + 0.25
        y = xp.tanh(y)
        y = y * y
        y = xp.exp(-y)
        y = y - 0.5
        y = xp.maximum(y, 0)
        return xp.sqrt(y + 1)

    return chain


def elementwise(quick: bool) -> Model:
    n = 1 << 16 if quick else 1 << 22
    return Model(
        "elementwise",
        f"8 ops on {n // 1024}K f32",
        _chain(jnp),
        (normal((n,)),),
        work=2.0 * n * 4,
        unit="byte",
        numpy_fn=_chain(np),
    )


def _layernorm(xp: Any) -> Callable[..., Any]:
    def layernorm(x, scale, bias):
        mean = x.mean(axis=-1, keepdims=True)
        centered = x - mean
        var = (centered * centered).mean(axis=-1, keepdims=True)
        return centered / xp.sqrt(var + 1e-5) * scale + bias

    return layernorm


def layernorm(quick: bool) -> Model:
    rows, cols = (128, 256) if quick else (1024, 1024)
    return Model(
        "layernorm",
        f"[{rows},{cols}] f32, last axis, scale and bias",
        _layernorm(jnp),
        (normal((rows, cols)), normal((cols,), 1), normal((cols,), 2)),
        work=(2.0 * rows * cols + 2 * cols) * 4,
        unit="byte",
        numpy_fn=_layernorm(np),
    )


def reduce_sum(quick: bool) -> Model:
    rows, cols = (256, 512) if quick else (4096, 4096)
    return Model(
        "reduce_sum",
        f"[{rows},{cols}] f32, axis 1",
        lambda x: x.sum(axis=1),
        (normal((rows, cols)),),
        work=(rows * cols + rows) * 4.0,
        unit="byte",
        numpy_fn=lambda x: x.sum(axis=1),
    )


def _attention(xp: Any, softmax_fn: Callable[[Any], Any]) -> Callable[..., Any]:
    def attention(q, k, v):
        scores = (q @ xp.swapaxes(k, -1, -2)) / math.sqrt(q.shape[-1])
        return softmax_fn(scores) @ v

    return attention


def attention(quick: bool) -> Model:
    heads, seq, dim = (2, 64, 16) if quick else (8, 512, 64)
    shape = (heads, seq, dim)
    return Model(
        "attention",
        f"{heads} heads, seq {seq}, head dim {dim}",
        _attention(jnp, lambda s: jax.nn.softmax(s, axis=-1)),
        (normal(shape), normal(shape, 1), normal(shape, 2)),
        work=4.0 * heads * seq * seq * dim,
        unit="flop",
        numpy_fn=_attention(np, _softmax_numpy),
        work_note="QK^T and PV flops",
    )


def cumsum(quick: bool) -> Model:
    n = 1024 if quick else 4096
    return Model(
        "cumsum",
        f"{n} f32 (reduce_window)",
        jnp.cumsum,
        (normal((n,)),),
        work=2.0 * n * 4,
        unit="byte",
        numpy_fn=np.cumsum,
    )


def gpt2(quick: bool) -> Model:
    import transformers

    # Quick: 2 layers, n_embd 128, a small vocabulary, seq 32.
    layers, embd, heads, vocab, seq = (2, 128, 2, 1000, 32) if quick else (12, 768, 12, 50257, 128)
    config = transformers.GPT2Config(
        vocab_size=vocab, n_positions=max(seq, 128), n_embd=embd, n_layer=layers, n_head=heads
    )
    model = transformers.FlaxGPT2Model(config, seed=0)
    ids = np.random.default_rng(0).integers(0, vocab, (1, seq), dtype=np.int32)

    def forward(params, ids):
        return model(ids, params=params).last_hidden_state

    return Model(
        "gpt2",
        f"FlaxGPT2Model {layers} layers, n_embd {embd}, {heads} heads, vocab {vocab}, 1x{seq}",
        forward,
        (model.params, ids),
        work=None,
        unit="flop",
    )


def resnet(quick: bool) -> Model:
    import flax.linen as nn

    size, channels = (16, 8) if quick else (56, 64)

    class Block(nn.Module):
        features: int
        stride: int = 1

        @nn.compact
        def __call__(self, x):
            residual = x
            y = nn.Conv(self.features, (3, 3), (self.stride, self.stride), use_bias=False)(x)
            y = nn.relu(nn.BatchNorm(use_running_average=True)(y))
            y = nn.Conv(self.features, (3, 3), use_bias=False)(y)
            y = nn.BatchNorm(use_running_average=True)(y)
            if residual.shape != y.shape:
                residual = nn.Conv(self.features, (1, 1), (self.stride, self.stride))(residual)
            return nn.relu(y + residual)

    class ResNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = Block(channels)(x)
            x = Block(channels)(x)
            x = Block(2 * channels, stride=2)(x)
            x = Block(2 * channels)(x)
            return nn.Dense(10)(x.mean(axis=(1, 2)))

    net = ResNet()
    x = normal((1, size, size, channels))
    variables = net.init(jax.random.PRNGKey(0), x)
    # Non-trivial running statistics, as a trained network has: means of both
    # signs (all-positive ones would make every relu output zero) and
    # variances around 1.
    leaves, tree = jax.tree_util.tree_flatten_with_path(variables["batch_stats"])
    stats = jax.tree_util.tree_unflatten(
        tree,
        [
            normal(leaf.shape, seed, 0.1)
            if path[-1].key == "mean"
            else 1 + 0.5 * np.abs(normal(leaf.shape, seed))
            for seed, (path, leaf) in enumerate(leaves)
        ],
    )
    variables = {"params": variables["params"], "batch_stats": stats}
    return Model(
        "resnet",
        f"4 residual blocks (conv3x3+batchnorm+relu), 1x{size}x{size}x{channels}",
        lambda variables, x: net.apply(variables, x),
        (variables, x),
        work=None,
        unit="flop",
    )


def train_step(quick: bool) -> Model:
    import flax.linen as nn
    import optax

    layers, dim, heads, vocab, batch, seq = (
        (1, 32, 2, 64, 2, 16) if quick else (2, 256, 4, 512, 4, 128)
    )

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, mask):
            # No projection biases: the key bias's gradient is exactly zero
            # (softmax ignores a constant shift), so that leaf would be pure
            # rounding noise scaled up by Adam, different in every system.
            attend = nn.SelfAttention(num_heads=heads, use_bias=False, deterministic=True)
            h = attend(nn.LayerNorm()(x), mask)
            x = x + h
            h = nn.Dense(4 * dim)(nn.LayerNorm()(x))
            return x + nn.Dense(dim)(nn.gelu(h))

    class Transformer(nn.Module):
        @nn.compact
        def __call__(self, ids):
            x = nn.Embed(vocab, dim)(ids)
            x = x + self.param("position", nn.initializers.normal(0.02), (seq, dim))
            mask = nn.make_causal_mask(ids)
            for _ in range(layers):
                x = Block()(x, mask)
            return nn.Dense(vocab)(nn.LayerNorm()(x))

    net = Transformer()
    ids = np.random.default_rng(0).integers(0, vocab, (batch, seq + 1), dtype=np.int32)
    params = net.init(jax.random.PRNGKey(0), ids[:, :-1])["params"]
    # eps=1e-5, not 1e-8: Adam's first step moves every weight by about lr *
    # sign(gradient), so a gradient at rounding-noise level would flip sign
    # between systems; eps scales such updates down with the gradient.
    optimizer = optax.adamw(1e-3, eps=1e-5, weight_decay=0.01)

    def step(params, opt_state, ids):
        def loss_fn(params):
            logits = net.apply({"params": params}, ids[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return Model(
        "train_step",
        f"transformer {layers} layers, dim {dim}, {heads} heads, vocab {vocab}, "
        f"batch {batch}x{seq}, adamw",
        step,
        (params, optimizer.init(params), ids),
        work=None,
        unit="flop",
        # Adam divides each gradient element by its own magnitude, so where a
        # gradient is mostly cancellation (a layernorm bias, summed over the
        # batch) float32 rounding shows at 1e-4 of that leaf's largest value:
        # IREE's full-size result is 2.5e-4 off jax's, shlo's 1e-4.
        rtol=1e-3,
    )


BUILDERS: dict[str, Callable[[bool], Model]] = {
    "matmul": matmul,
    "mlp": mlp,
    "softmax": softmax,
    "conv2d": conv2d,
    "elementwise": elementwise,
    "layernorm": layernorm,
    "reduce_sum": reduce_sum,
    "attention": attention,
    "cumsum": cumsum,
    "gpt2": gpt2,
    "resnet": resnet,
    "train_step": train_step,
}
# The models whose work is bytes moved (unit "byte"): memory-bound, if their
# arithmetic keeps up (bench/compute_floor.py).
BYTE_MODELS = ("softmax", "elementwise", "layernorm", "reduce_sum", "cumsum")
