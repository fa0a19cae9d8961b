"""Reductions upstream's linalg lowering refused: over no dimensions and over empty ones.

Each program runs compiled by shlo and in the reference interpreter.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from shlo.interpreter import interpret

PROGRAMS = {
    "no_dimensions": (
        """
func.func @main(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %c = stablehlo.constant dense<1.5> : tensor<f32>
  %ci = stablehlo.constant dense<7> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %c), (%i init: %ci) across dimensions = [] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ia: tensor<i32>, %ib: tensor<i32>) {
    %s = stablehlo.multiply %a, %b : tensor<f32>
    %t = stablehlo.subtract %ia, %ib : tensor<i32>
    stablehlo.return %s, %t : tensor<f32>, tensor<i32>
  }
  return %r#0, %r#1 : tensor<2x3xf32>, tensor<2x3xi32>
}""",
        [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, dtype=np.int32).reshape(2, 3)],
    ),
    "empty_dimension": (
        """
func.func @main(%x: tensor<2x0x3xf32>, %init: tensor<f32>) -> tensor<2x3xf32> {
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<2x0x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %e = stablehlo.exponential %r : tensor<2x3xf32>
  return %e : tensor<2x3xf32>
}""",
        [np.zeros((2, 0, 3), np.float32), np.array(0.5, np.float32)],
    ),
    "empty_slice_reduced": (
        """
func.func @main(%x: tensor<4x3xf32>) -> (tensor<4xf32>, tensor<0x3xf32>) {
  %s = stablehlo.slice %x [0:4, 1:1] : (tensor<4x3xf32>) -> tensor<4x0xf32>
  %c = stablehlo.constant dense<2.0> : tensor<f32>
  %r = stablehlo.reduce(%s init: %c) applies stablehlo.add across dimensions = [1] : (tensor<4x0xf32>, tensor<f32>) -> tensor<4xf32>
  %e = stablehlo.slice %x [2:2, 0:3] : (tensor<4x3xf32>) -> tensor<0x3xf32>
  %n = stablehlo.negate %e : tensor<0x3xf32>
  return %r, %n : tensor<4xf32>, tensor<0x3xf32>
}""",
        [np.ones((4, 3), np.float32)],
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_interpreter(name: str) -> None:
    source, args = PROGRAMS[name]
    got = shlo.compile(source, isolate=False)(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    want = interpret(source, "main", args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_unique_with_size_matches_jax() -> None:
    # jnp.unique(size=...) exports a reduce over no dimensions.
    fn = lambda x: jnp.unique(x, size=4, fill_value=0)  # noqa: E731
    x = np.array([3, 1, 3, 2, 1], np.int32)
    exported = jax.export.export(jax.jit(fn), platforms=["cpu"])(x)
    got = shlo.compile(exported.mlir_module_serialized, isolate=False)(x)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(fn)(x)))
