"""Models made of repeated layers: outlined once by shlo-outline-repeated-layers, still right.

Each model is a jax function whose layers the pass turns into calls of one
function (checked on the module after the pass), compiled by the whole CPU
pipeline and compared with ``jax.jit``: layers that carry one or two values,
read a value every layer shares, end in a reduction, differ from the
others in one place, or each read their own row of one array.
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


def relu_residual(x, w, b):
    for i in range(LAYERS):
        x = jax.nn.relu(jnp.tanh(layer_norm(x) @ w[i][0]) @ w[i][1] + x + b[i][0])
    return x


def rows_of_a_mask(x, w, b):
    """Each layer scales by its own row of one small mask, as Flax BERT's layers
    read their row of the head mask: a slice that differs from layer to layer."""
    mask = jnp.cos(jnp.arange(LAYERS * WIDTH, dtype=jnp.float32)).reshape(LAYERS, WIDTH)
    for i in range(LAYERS):
        x = block(x, w[i], b[i]) * mask[i]
    return x


MODELS: dict[str, Callable] = {
    "residual_stack": residual_stack,
    "two_streams": two_streams,
    "shared_mask": shared_mask,
    "ends_in_a_reduction": ends_in_a_reduction,
    "one_layer_differs": one_layer_differs,
    "relu_residual": relu_residual,
    "rows_of_a_mask": rows_of_a_mask,
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


def outlined(source: bytes):
    module, _, _ = prepare_static(source, "main", None, "<test>", 1 << 30)
    run_pipeline(module, ["shlo-outline-repeated-layers"])
    return module


def layer_calls(source: bytes) -> dict[str, int]:
    """Calls per function that shlo-outline-repeated-layers made of the exported module."""
    module = outlined(source)
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


def test_a_boundary_that_cuts_a_chain_link_costs_more_than_any_store() -> None:
    """Between the residual add and the ReLU, or after the ReLU, the same
    elements cross; but the add's result has one reader that fuses it, so a
    call there would store what fusion keeps in registers (a CNN's blocks
    were not outlined at all while such a boundary was taken first)."""
    from shlo.passes.cpu.outline_repeated_layers import _LINK_COST, _cut_costs

    module = shlo.load_module(
        """
func.func @main(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4x4xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = stablehlo.add %d, %x : tensor<4x4xf32>
  %m = stablehlo.maximum %a, %z : tensor<4x4xf32>
  %e = stablehlo.dot_general %m, %w, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = stablehlo.add %e, %m : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}"""
    )
    (function,) = ops_named(module.operation, "func.func")
    ops = [op.operation for op in function.regions[0].blocks[0].operations]
    costs, link_readers = _cut_costs(ops)
    between_add_and_relu, after_relu = costs[3], costs[4]
    assert between_add_and_relu >= _LINK_COST
    assert after_relu < _LINK_COST
    # The add (op 2) passes its chain link to the ReLU (op 3); nothing else does.
    assert link_readers.tolist() == [-1, -1, 3, -1, -1, -1, -1]


def test_a_long_elementwise_chain_is_refused_without_building_its_copies() -> None:
    """Every copy of a repeat in a chain passes a link on to the next, which
    _keeps_fusions refuses: the copies are not built (a 10,000-op chain
    spent 2.8 s building the copies of 8 candidate repeats)."""
    import shlo.passes.cpu.outline_repeated_layers as outline

    lines = ["func.func @main(%x: tensor<8xf32>, %a: tensor<8xf32>) -> tensor<8xf32> {"]
    previous = "%x"
    for index in range(600):
        op = ("add", "multiply")[index % 2]
        lines.append(f"  %v{index} = stablehlo.{op} {previous}, %a : tensor<8xf32>")
        previous = f"%v{index}"
    lines += [f"  return {previous} : tensor<8xf32>", "}"]
    module = shlo.load_module("\n".join(lines))
    built = []
    original = outline._layer
    outline._layer = lambda *args: built.append(1) or original(*args)
    try:
        shlo.run_pipeline(module, ["shlo-outline-repeated-layers"])
    finally:
        outline._layer = original
    assert not built
    assert not ops_named(module.operation, "func.call")


def test_layers_end_after_the_relu_not_between_the_add_and_it() -> None:
    """The relu_residual model's layers are cut after the ReLU, which the
    next layer reads twice, not before it."""
    args = arguments()
    source = export.export(jax.jit(relu_residual), platforms=["cpu"])(*args)
    module = outlined(source.mlir_module_serialized)
    functions = ops_named(module.operation, "func.func")
    (layer,) = [f for f in functions if "shlo_layer" in str(f.attributes["sym_name"])]
    (returned,) = ops_named(layer, "func.return")
    assert [value.owner.name for value in returned.operands] == ["stablehlo.maximum"]


@pytest.mark.parametrize(("min_layer_ops", "min_saved_ops"), [(24, 200), (3, 3), (1, 1), (2, 7)])
def test_sampled_lengths_find_every_repeat(min_layer_ops: int, min_saved_ops: int) -> None:
    """The lengths sampled at multiples of min_saved_ops // 2 lose no repeat:
    random blocks, with and without repeated layers, few and many op kinds."""
    from shlo.passes.cpu.outline_repeated_layers import _repeats

    rng = np.random.default_rng(0)
    for trial in range(150):
        kinds = int(rng.integers(1, 40))
        layer = rng.integers(0, kinds, int(rng.integers(1, 150)))
        parts = [
            rng.integers(0, kinds, int(rng.integers(0, 80))),
            np.tile(layer, int(rng.integers(0, 10))),
            rng.integers(0, kinds, int(rng.integers(0, 80))),
        ]
        keys = np.concatenate(parts) if trial % 2 else rng.integers(0, kinds, 600)
        if len(keys) < 2:
            continue
        keys[rng.integers(0, len(keys), 2)] = [-1, -2]  # ops that never match
        want = _repeats(keys, min_layer_ops, min_saved_ops, sampled=False)
        assert _repeats(keys, min_layer_ops, min_saved_ops) == want
