"""Integer division by zero and MIN / -1: the interpreter agrees with the compiled code.

The reference interpreter divided with the host's instruction and died of
SIGFPE (found by the fuzzer); shlo-guard-integer-division gives it XLA's
results, which the CPU backend computes.
"""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.interpreter import interpret

TYPES = {"i8": np.int8, "i32": np.int32, "i64": np.int64, "ui16": np.uint16, "ui64": np.uint64}


@pytest.mark.parametrize("element", sorted(TYPES))
def test_interpreter_divides_by_zero_and_overflows_like_the_compiled_code(element: str) -> None:
    dtype = TYPES[element]
    info = np.iinfo(dtype)
    source = f"""
func.func @main(%a: tensor<4x{element}>, %b: tensor<4x{element}>) -> (tensor<4x{element}>, tensor<4x{element}>) {{
  %0 = stablehlo.divide %a, %b : tensor<4x{element}>
  %1 = stablehlo.remainder %a, %b : tensor<4x{element}>
  return %0, %1 : tensor<4x{element}>, tensor<4x{element}>
}}"""
    minus_one = -1 if info.min < 0 else 3
    a = np.array([info.min, 5, 7, info.max], dtype)
    b = np.array([minus_one, 0, 2, 0], dtype)
    compiled = shlo.compile(source, isolate=False)(a, b)
    interpreted = interpret(source, "main", [a, b])
    for got, want in zip(interpreted, compiled):
        np.testing.assert_array_equal(got, want)
    # XLA's results: x / 0 is all ones, x % 0 is x, MIN / -1 is MIN.
    quotient, remainder = interpreted
    assert quotient[1] == dtype(info.max if info.min == 0 else -1)
    assert remainder[1] == 5 and remainder[3] == info.max
    if info.min < 0:
        assert quotient[0] == info.min and remainder[0] == 0
