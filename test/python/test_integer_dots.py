"""Integer dots into i32 through the CPU pipeline (shlo-widen-integer-dots: exact f32
dots, or operands widened to i32 for the i32 matmul recipe), checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.ir_utils import tensor_type_text

ELEMENTS = {np.int8: "i8", np.uint8: "ui8", np.int16: "i16", np.int32: "i32"}


def matmul_into_i32(lhs, rhs, m: int, k: int, n: int, result: str = "i32") -> str:
    """A [m, k] x [k, n] dot_general of ``lhs`` and ``rhs`` elements into ``result``."""
    a_type = tensor_type_text([m, k], ELEMENTS[lhs])
    b_type = tensor_type_text([k, n], ELEMENTS[rhs])
    out = tensor_type_text([m, n], result)
    return f"""
func.func @main(%a: {a_type}, %b: {b_type}) -> {out} {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({a_type}, {b_type}) -> {out}
  return %0 : {out}
}}
"""


@pytest.mark.parametrize(
    ("lhs", "rhs"), [(np.int8, np.int8), (np.uint8, np.int8), (np.int16, np.uint8)]
)
def test_integer_matmul_into_i32(lhs, rhs) -> None:
    m, k, n = 130, 257, 70
    source = matmul_into_i32(lhs, rhs, m, k, n)
    rng = np.random.default_rng(0)
    a = rng.integers(np.iinfo(lhs).min, np.iinfo(lhs).max, (m, k), endpoint=True).astype(lhs)
    b = rng.integers(np.iinfo(rhs).min, np.iinfo(rhs).max, (k, n), endpoint=True).astype(rhs)
    a[0, :] = np.iinfo(lhs).min  # the extremes: sign- or zero-extended
    b[:, 0] = np.iinfo(rhs).min if rhs is np.int8 else np.iinfo(rhs).max
    got = shlo.compile(source, isolate=False)(a, b)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)  # wraps as i32 does
    np.testing.assert_array_equal(got, want)


def test_batched_int8_dot() -> None:
    t_a, t_b, t_o = "tensor<3x40x64xi8>", "tensor<3x64x50xi8>", "tensor<3x40x50xi32>"
    source = f"""
func.func @main(%a: {t_a}, %b: {t_b}) -> {t_o} {{
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ({t_a}, {t_b}) -> {t_o}
  return %0 : {t_o}
}}
"""
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (3, 40, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (3, 64, 50)).astype(np.int8)
    got = shlo.compile(source, isolate=False)(a, b)
    np.testing.assert_array_equal(got, np.matmul(a.astype(np.int32), b.astype(np.int32)))


@pytest.mark.parametrize(
    ("lhs", "rhs", "k"),
    [(np.int8, np.int8, 3000), (np.uint8, np.uint8, 700), (np.uint8, np.int8, 1100)],
)
def test_long_integer_dot_is_exact(lhs, rhs, k) -> None:
    # Odd products near the types' extremes: a single f32 dot over k would
    # round sums past 2^24; the pass's chunks each stay exact.
    m, n = 5, 33
    source = matmul_into_i32(lhs, rhs, m, k, n)
    rng = np.random.default_rng(3)
    low_a, high_a = np.iinfo(lhs).min, np.iinfo(lhs).max
    low_b, high_b = np.iinfo(rhs).min, np.iinfo(rhs).max
    a = rng.integers(low_a, high_a, (m, k), endpoint=True).astype(lhs)
    b = rng.integers(low_b, high_b, (k, n), endpoint=True).astype(rhs)
    a[:2] = high_a if lhs is np.uint8 else -127
    b[:, :2] = high_b if rhs is np.uint8 else -127
    a[2] = low_a
    b[:, 2] = low_b
    got = shlo.compile(source, isolate=False)(a, b)
    want = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_negative_sums_into_ui32_wrap() -> None:
    # Signed products summed into an unsigned result: modulo 2^32, as the
    # accumulation in ui32 gives, where a float's conversion would saturate.
    k = 2500  # two chunks
    source = matmul_into_i32(np.int8, np.int8, 4, k, 5, result="ui32")
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (4, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, 5)).astype(np.int8)
    a[0], b[:, 0] = -128, 127  # a large negative sum
    got = shlo.compile(source, isolate=False)(a, b)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.uint32)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, want)
