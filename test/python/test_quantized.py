"""Quantized programs on the CPU, checked against the same quantized math in numpy.

Quantization follows StableHLO's lowering (stablehlo-legalize-quant-to-math),
in f32: ``q = round_half_even(clamp(x / scale + zero_point, min, max))`` and
``x = (q - zero_point) * scale``; an op on quantized values dequantizes its
operands, computes in f32 and quantizes the result.
"""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.runtime import LoadedFunction

F32 = np.float32


def quantize(x: np.ndarray, scale: float, zero_point: int, low: int, high: int) -> np.ndarray:
    scaled = np.asarray(x, F32) / F32(scale) + F32(zero_point)
    with np.errstate(invalid="ignore"):
        q = np.round(np.clip(scaled, F32(low), F32(high)))
    # NaN has storage value 0, as in the reference interpreter.
    return np.where(np.isnan(q), 0, q).astype(np.int64)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (q - zero_point).astype(F32) * F32(scale)


def qtype(storage: str, scale: float, zero_point: int) -> str:
    return f"!quant.uniform<{storage}:f32, {scale!r}:{zero_point}>"


def test_add_with_different_scales() -> None:
    a, b, out = qtype("i8", 0.05, -3), qtype("i8", 0.1, 7), qtype("i8", 0.125, 0)
    program = f"""
func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>) -> tensor<6xf32> {{
  %qx = stablehlo.uniform_quantize %x : (tensor<6xf32>) -> tensor<6x{a}>
  %qy = stablehlo.uniform_quantize %y : (tensor<6xf32>) -> tensor<6x{b}>
  %s = stablehlo.add %qx, %qy : (tensor<6x{a}>, tensor<6x{b}>) -> tensor<6x{out}>
  %r = stablehlo.uniform_dequantize %s : (tensor<6x{out}>) -> tensor<6xf32>
  return %r : tensor<6xf32>
}}
"""
    x = np.array([0.0, 1.01, -2.33, 6.2, 9.0, -7.1], F32)
    y = np.array([0.3, -1.27, 4.46, 3.9, 10.0, -12.0], F32)
    qx = dequantize(quantize(x, 0.05, -3, -128, 127), 0.05, -3)
    qy = dequantize(quantize(y, 0.1, 7, -128, 127), 0.1, 7)
    expected = dequantize(quantize(qx + qy, 0.125, 0, -128, 127), 0.125, 0)
    np.testing.assert_array_equal(shlo.compile(program, isolate=False)(x, y), expected)


@pytest.mark.parametrize("as_constant", [False, True])
def test_nan_and_infinities_quantize_like_the_interpreter(as_constant: bool) -> None:
    # As a constant, LLVM folds the float-to-integer conversion at compile time.
    q = qtype("i8", 0.5, 3)
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -1e30], F32)
    literal = "0x7FC00000, 0x7F800000, 0xFF800000, 1.0, -1.0e30"
    head, source = (
        ("", f"%x = stablehlo.constant dense<[{literal}]> : tensor<5xf32>")
        if as_constant
        else ("%x: tensor<5xf32>", "")
    )
    program = f"""
func.func @main({head}) -> tensor<5xf32> {{
  {source}
  %q = stablehlo.uniform_quantize %x : (tensor<5xf32>) -> tensor<5x{q}>
  %n = stablehlo.negate %q : tensor<5x{q}>
  %r = stablehlo.uniform_dequantize %n : (tensor<5x{q}>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}}
"""
    dequantized = dequantize(quantize(x, 0.5, 3, -128, 127), 0.5, 3)
    expected = dequantize(quantize(-dequantized, 0.5, 3, -128, 127), 0.5, 3)
    executable = shlo.compile(program, isolate=False)
    np.testing.assert_array_equal(executable() if as_constant else executable(x), expected)
    # NaN -> storage 0 -> (0 - 3) * 0.5 = -1.5, negated: 1.5.
    assert expected[0] == 1.5


def test_unsigned_storage_above_127() -> None:
    q = qtype("u8", 0.5, 10)
    program = f"""
func.func @main(%x: tensor<5xf32>) -> tensor<5xf32> {{
  %q = stablehlo.uniform_quantize %x : (tensor<5xf32>) -> tensor<5x{q}>
  %m = stablehlo.maximum %q, %q : tensor<5x{q}>
  %s = stablehlo.add %m, %q : tensor<5x{q}>
  %r = stablehlo.uniform_dequantize %s : (tensor<5x{q}>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}}
"""
    x = np.array([-10.0, 0.0, 30.0, 60.0, 100.0], F32)
    once = dequantize(quantize(x, 0.5, 10, 0, 255), 0.5, 10)
    expected = dequantize(quantize(once + once, 0.5, 10, 0, 255), 0.5, 10)
    got = shlo.compile(program, isolate=False)(x)
    np.testing.assert_array_equal(got, expected)
    assert got[3] == 120.0  # storage 250


def test_per_axis_quantization() -> None:
    q = "!quant.uniform<i8:f32:1, {0.5:1, 0.25:-2, 2.0:0}>"
    program = f"""
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {{
  %q = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x{q}>
  %r = stablehlo.uniform_dequantize %q : (tensor<2x3x{q}>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}}
"""
    x = np.array([[0.3, -1.1, 7.0], [100.0, 2.6, -300.0]], F32)
    scales, zero_points = [0.5, 0.25, 2.0], [1, -2, 0]
    expected = np.stack(
        [
            dequantize(quantize(x[:, i], s, z, -128, 127), s, z)
            for i, (s, z) in enumerate(zip(scales, zero_points))
        ],
        axis=1,
    )
    np.testing.assert_array_equal(shlo.compile(program, isolate=False)(x), expected)


def test_dot_general_accumulates_in_i32() -> None:
    a, b = qtype("i8", 0.05, -3), qtype("i8", 0.1, 0)
    out = "!quant.uniform<i32:f32, 5.000000e-03>"
    program = f"""
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>) -> tensor<2x4xf32> {{
  %qx = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x{a}>
  %qy = stablehlo.uniform_quantize %y : (tensor<3x4xf32>) -> tensor<3x4x{b}>
  %d = stablehlo.dot_general %qx, %qy, contracting_dims = [1] x [0]
      : (tensor<2x3x{a}>, tensor<3x4x{b}>) -> tensor<2x4x{out}>
  %r = stablehlo.uniform_dequantize %d : (tensor<2x4x{out}>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}}
"""
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, (2, 3)).astype(F32)
    y = rng.uniform(-3, 3, (3, 4)).astype(F32)
    qx = quantize(x, 0.05, -3, -128, 127) - (-3)
    qy = quantize(y, 0.1, 0, -128, 127)
    expected = (qx @ qy).astype(F32) * F32(0.005)
    got = shlo.compile(program, isolate=False)(x, y)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0.005)


def test_reduce_with_a_quantized_body() -> None:
    q = qtype("i8", 0.5, 3)
    program = f"""
func.func @main(%x: tensor<4x3xf32>) -> tensor<4xf32> {{
  %q = stablehlo.uniform_quantize %x : (tensor<4x3xf32>) -> tensor<4x3x{q}>
  %init = stablehlo.constant() {{value = dense<3> : tensor<i8>}} : () -> tensor<{q}>
  %m = stablehlo.reduce(%q init: %init) applies stablehlo.maximum across dimensions = [1]
      : (tensor<4x3x{q}>, tensor<{q}>) -> tensor<4x{q}>
  %r = stablehlo.uniform_dequantize %m : (tensor<4x{q}>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}}
"""
    x = np.array([[0.3, -1.0, 2.2], [5.0, 1.0, 1.0], [-3.0, -2.0, -1.0], [0.0, 0.0, 0.4]], F32)
    per_element = dequantize(quantize(x, 0.5, 3, -128, 127), 0.5, 3)
    expected = np.maximum(per_element.max(axis=1), 0.0)  # the init value is 0.0
    np.testing.assert_array_equal(shlo.compile(program, isolate=False)(x), expected)


def test_while_carries_a_quantized_value() -> None:
    q = qtype("i8", 0.5, 3)
    program = f"""
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {{
  %q = stablehlo.uniform_quantize %x : (tensor<4xf32>) -> tensor<4x{q}>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %v = %q) : tensor<i32>, tensor<4x{q}>
    cond {{
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %next = stablehlo.add %i, %one : tensor<i32>
      %w = stablehlo.add %v, %v : tensor<4x{q}>
      stablehlo.return %next, %w : tensor<i32>, tensor<4x{q}>
    }}
  %d = stablehlo.uniform_dequantize %r#1 : (tensor<4x{q}>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}}
"""
    x = np.array([1.0, -0.5, 2.5, 7.0], F32)
    executable = shlo.compile(program, isolate=False)
    for n in (0, 1, 3):
        value = dequantize(quantize(x, 0.5, 3, -128, 127), 0.5, 3)
        for _ in range(n):
            value = dequantize(quantize(value + value, 0.5, 3, -128, 127), 0.5, 3)
        np.testing.assert_array_equal(executable(x, np.array(n, np.int32)), value)


@pytest.mark.parametrize(
    ("storage", "dtype", "low", "high"),
    [("i8", np.int8, -128, 127), ("u8", np.uint8, 0, 255)],
)
def test_quantized_arguments_and_results_are_storage(
    storage: str, dtype: type, low: int, high: int
) -> None:
    q = qtype(storage, 0.5, 10)
    program = f"""
func.func @main(%a: tensor<4x{q}>, %b: tensor<4xf32>) -> (tensor<4x{q}>, tensor<4xf32>) {{
  %c = stablehlo.constant() {{value = dense<[1, 2, 3, 4]> : tensor<4xi8>}} : () -> tensor<4x{q}>
  %qb = stablehlo.uniform_quantize %b : (tensor<4xf32>) -> tensor<4x{q}>
  %s = stablehlo.add %a, %qb : tensor<4x{q}>
  %t = stablehlo.add %s, %c : tensor<4x{q}>
  %d = stablehlo.uniform_dequantize %a : (tensor<4x{q}>) -> tensor<4xf32>
  return %t, %d : tensor<4x{q}>, tensor<4xf32>
}}
"""
    lowered = lower_to_llvm(program, "main", None)
    storage_type = f"tensor<4x{'ui8' if storage == 'u8' else 'i8'}>"
    assert lowered.input_types == (storage_type, "tensor<4xf32>")
    assert lowered.result_types == (storage_type, "tensor<4xf32>")
    function = LoadedFunction(lowered.llvm_bytecode, lowered.input_types, lowered.result_types)
    a = np.array([low, 10, 100, high], dtype)
    b = np.array([1.0, -3.0, 20.0, 0.25], F32)
    total, dequantized_a = function([a, b])
    a_value = dequantize(a.astype(np.int64), 0.5, 10)
    b_value = dequantize(quantize(b, 0.5, 10, low, high), 0.5, 10)
    s = dequantize(quantize(a_value + b_value, 0.5, 10, low, high), 0.5, 10)
    c_value = dequantize(np.array([1, 2, 3, 4]), 0.5, 10)
    expected = quantize(s + c_value, 0.5, 10, low, high)
    np.testing.assert_array_equal(dequantized_a, a_value)
    np.testing.assert_array_equal(total.astype(np.int64), expected)
