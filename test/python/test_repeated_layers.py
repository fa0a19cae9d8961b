"""Models made of repeated layers: outlined once by shlo-outline-repeated-layers, still right.

Each model is a jax function whose layers the pass turns into calls of one
function (checked on the module after the pass), compiled by the whole CPU
pipeline and compared with ``jax.jit``: layers that carry one or two values,
read a value every layer shares, end in a reduction, or differ from the
others in one place.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo.frontend import prepare_static
from shlo.ir_utils import ops_named
from shlo.pipeline import run_pipeline

WIDTH = 16
LAYERS = 12


def layer_norm(x: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(variance + 1e-5)


def block(x: jax.Array, w: jax.Array, b: jax.Array, activation=jax.nn.gelu) -> jax.Array:
    h = activation(layer_norm(x) @ w[0] + b[0])
    return x + jnp.tanh(h @ w[1] + b[1]) * 0.5


def residual_stack(x, w, b):
    for i in range(LAYERS):
        x = block(x, w[i], b[i])
    return x


def two_streams(x, w, b):
    y = x
    for i in range(LAYERS):
        x, y = block(x, w[i], b[i]) + 0.25 * y, jnp.maximum(y, x)
    return x - y


def shared_mask(x, w, b):
    rows = jnp.arange(x.shape[0])
    mask = rows[:, None] >= jnp.arange(WIDTH)[None, :]
    for i in range(LAYERS):
        x = jnp.where(mask, block(x, w[i], b[i]), x * 0.5)
    return x


def ends_in_a_reduction(x, w, b):
    for i in range(LAYERS):
        x = block(x, w[i], b[i])
        x = x / (1.0 + jnp.abs(x).sum(-1, keepdims=True))
    return x.sum(0)


def one_layer_differs(x, w, b):
    for i in range(LAYERS):
        x = block(x, w[i], b[i], jax.nn.relu if i == 7 else jax.nn.gelu)
    return x


MODELS: dict[str, Callable] = {
    "residual_stack": residual_stack,
    "two_streams": two_streams,
    "shared_mask": shared_mask,
    "ends_in_a_reduction": ends_in_a_reduction,
    "one_layer_differs": one_layer_differs,
}


def arguments() -> tuple:
    """The input and each layer's own weights, as separate arrays (as Flax
    passes parameters; slices of one stacked array differ per layer, and
    stay where they are)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, WIDTH), dtype=np.float32)
    w = [rng.standard_normal((2, WIDTH, WIDTH), dtype=np.float32) / 4 for _ in range(LAYERS)]
    b = [rng.standard_normal((2, WIDTH), dtype=np.float32) / 4 for _ in range(LAYERS)]
    return x, w, b


def layer_calls(source: bytes) -> dict[str, int]:
    """Calls per function that shlo-outline-repeated-layers made of the exported module."""
    module, _, _ = prepare_static(source, "main", None, "<test>", 1 << 30)
    run_pipeline(module, ["shlo-outline-repeated-layers"])
    calls: dict[str, int] = {}
    for call in ops_named(module.operation, "func.call"):
        callee = str(call.attributes["callee"]).lstrip("@")
        calls[callee] = calls.get(callee, 0) + 1
    return calls


@pytest.mark.parametrize("name", list(MODELS))
def test_repeated_layers_match_jax(name: str) -> None:
    fn = MODELS[name]
    args = arguments()
    source = export.export(jax.jit(fn), platforms=["cpu"])(*args).mlir_module_serialized
    calls = layer_calls(source)
    # At least most of the layers became calls of one function.
    assert calls and max(calls.values()) >= LAYERS // 2 - 1, calls
    expected = np.asarray(jax.jit(fn)(*args))
    actual = np.asarray(shlo.compile(source)(*jax.tree_util.tree_leaves(args)))
    scale = float(np.max(np.abs(expected)))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=2e-5 * scale)


def test_layers_are_outlined_once_per_kind() -> None:
    """Identical layers: one function, a call per layer (or one less, when the best
    boundary between them leaves the first layer's start in place)."""
    args = arguments()
    source = export.export(jax.jit(residual_stack), platforms=["cpu"])(*args)
    calls = layer_calls(source.mlir_module_serialized)
    assert list(calls) == ["shlo_layer_0"]
    assert calls["shlo_layer_0"] in (LAYERS - 1, LAYERS)
