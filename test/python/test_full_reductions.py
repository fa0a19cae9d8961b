"""Reductions over every dimension through the CPU pipeline: split into a
threaded reduction of each row and one of the rows' results
(shlo-split-full-reductions), checked against numpy."""

from __future__ import annotations

import numpy as np
import shlo


def test_sum_max_and_integer_sum_of_everything() -> None:
    source = """
func.func @main(%x: tensor<700x300xf32>, %n: tensor<3x200x150xi32>) -> (tensor<f32>, tensor<f32>, tensor<i32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zi = stablehlo.constant dense<0> : tensor<i32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<700x300xf32>, tensor<f32>) -> tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1, 0] : (tensor<700x300xf32>, tensor<f32>) -> tensor<f32>
  %t = stablehlo.reduce(%n init: %zi) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<3x200x150xi32>, tensor<i32>) -> tensor<i32>
  return %s, %m, %t : tensor<f32>, tensor<f32>, tensor<i32>
}
"""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((700, 300)).astype(np.float32)
    n = rng.integers(-1000, 1000, (3, 200, 150)).astype(np.int32)
    total, largest, integers = shlo.compile(source, isolate=False)(x, n)
    np.testing.assert_allclose(total, x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    assert largest == x.max()
    assert integers == n.sum()


def test_argmax_of_everything_takes_the_first_of_equals() -> None:
    # A two-operand reduction (value, flat index) whose body keeps the larger
    # value and, among equals, the smaller index: split, the answer is the same.
    source = """
func.func @main(%x: tensor<512x256xf32>, %i: tensor<512x256xi32>) -> (tensor<f32>, tensor<i32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %ninf), (%i init: %zero) across dimensions = [0, 1]
      : (tensor<512x256xf32>, tensor<512x256xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>) {
      %gt = stablehlo.compare GT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %bi, %ai : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %take = stablehlo.or %gt, %tie : tensor<i1>
      %v = stablehlo.select %take, %b, %a : tensor<i1>, tensor<f32>
      %w = stablehlo.select %take, %bi, %ai : tensor<i1>, tensor<i32>
      stablehlo.return %v, %w : tensor<f32>, tensor<i32>
    }
  return %r#0, %r#1 : tensor<f32>, tensor<i32>
}
"""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 50, (512, 256)).astype(np.float32)  # the maximum appears many times
    flat = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    value, index = shlo.compile(source, isolate=False)(x, flat)
    assert value == x.max()
    assert index == np.argmax(x)
