"""stablehlo.reverse through the CPU pipeline, checked against numpy: large
reverses read their operand by index (shlo-lower-reverse), on threads."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.ir_utils import tensor_type_text


@pytest.mark.parametrize(
    ("shape", "dims", "dtype", "element"),
    [
        ((512, 300), [1], np.float32, "f32"),
        ((300, 513), [0], np.int32, "i32"),
        ((2, 130, 257), [0, 2], np.float32, "f32"),
        ((64, 64, 33), [0, 1, 2], np.int8, "i8"),
        ((5, 3), [1], np.float32, "f32"),  # small: upstream's lowering
    ],
)
def test_reverse_matches_numpy(shape, dims, dtype, element) -> None:
    t = tensor_type_text(shape, element)
    source = f"""
func.func @main(%x: {t}) -> ({t}, {t}) {{
  %r = stablehlo.reverse %x, dims = {dims} : {t}
  %s = stablehlo.add %r, %x : {t}
  return %r, %s : {t}, {t}
}}
"""
    x = (np.random.default_rng(0).standard_normal(shape) * 40).astype(dtype)
    reversed_, summed = shlo.compile(source, isolate=False)(x)
    want = np.flip(x, axis=tuple(dims))
    np.testing.assert_array_equal(reversed_, want)
    np.testing.assert_array_equal(summed, want + x)
