"""stablehlo.pad through the CPU pipeline, checked against numpy: a pad by a
value becomes a fill and a copy into its slice (shlo-copy-into-slices), both
threaded."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.ir_utils import tensor_type_text


def pad_program(shape, low, high, interior=None) -> str:
    interior = interior or [0] * len(shape)
    out = [lo + s + (s - 1) * i + hi for s, lo, hi, i in zip(shape, low, high, interior)]
    t, o = tensor_type_text(shape, "f32"), tensor_type_text(out, "f32")
    return f"""
func.func @main(%x: {t}, %v: tensor<f32>) -> {o} {{
  %r = stablehlo.pad %x, %v, low = {low}, high = {high}, interior = {interior} : ({t}, tensor<f32>) -> {o}
  return %r : {o}
}}
"""


@pytest.mark.parametrize(
    ("shape", "low", "high"),
    [
        ((300, 257), [1, 2], [3, 0]),
        ((2, 56, 56, 64), [0, 1, 1, 0], [0, 1, 1, 0]),
        ((4096,), [0], [5]),
        ((70, 3, 90), [2, 0, 7], [0, 4, 1]),
    ],
)
def test_pad_matches_numpy(shape, low, high) -> None:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    value = np.array(-2.5, np.float32)  # an argument: not folded into a constant
    got = shlo.compile(pad_program(shape, low, high), isolate=False)(x, value)
    want = np.pad(x, list(zip(low, high)), constant_values=value)
    np.testing.assert_array_equal(got, want)


def test_negative_and_interior_padding() -> None:
    # Not a tensor.pad of a value: upstream's lowering, unchanged.
    shape, low, high, interior = (64, 80), [-1, 2], [3, -2], [1, 0]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = shlo.compile(pad_program(shape, low, high, interior), isolate=False)(
        x, np.array(7.0, np.float32)
    )
    spread = np.full((2 * 64 - 1, 80), 7.0, np.float32)
    spread[::2] = x
    want = np.pad(spread, [(0, 3), (2, 0)], constant_values=7.0)[1:, :-2]
    np.testing.assert_array_equal(got, want)
