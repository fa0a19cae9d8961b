"""shlo-reciprocal-division: compiled rows divided by a shared divisor, against numpy's division."""

from __future__ import annotations

import numpy as np
import shlo
from shlo.tools.measure_ulp import measure_division

ROWS, COLUMNS = 24, 1024

PROGRAM = f"""
func.func @main(%x: tensor<{ROWS}x{COLUMNS}xf32>, %s: tensor<{ROWS}xf32>) -> tensor<{ROWS}x{COLUMNS}xf32> {{
  %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<{ROWS}xf32>) -> tensor<{ROWS}x{COLUMNS}xf32>
  %q = stablehlo.divide %x, %b : tensor<{ROWS}x{COLUMNS}xf32>
  return %q : tensor<{ROWS}x{COLUMNS}xf32>
}}
"""

# Divisors outside [2^-126, 2^126] (zeros, infinities, NaN, subnormals, the
# largest floats) are divided by, exactly; the rest are multiplied by 1 / s.
EXACT_DIVISORS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 3e38, -1.7e38]
RECIPROCAL_DIVISORS = [2.0**-126, -(2.0**126), 1.5, -3.7, 7.0, 1e-30, 6e37]
# Quotients that round to the largest float while x * (1 / b) rounds to
# infinity: (b, x) pairs found by a numpy search near the overflow threshold.
OVERFLOW_EDGE = [(0.93969005, 3.1975994e38), (-0.7903067, 2.689274e38)]


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    # Random bit patterns over every finite magnitude, then special values.
    bits = rng.integers(0, 0x7F800000, (ROWS, COLUMNS), dtype=np.uint32)
    bits |= rng.integers(0, 2, (ROWS, COLUMNS), dtype=np.uint32) << 31
    x = bits.view(np.float32).copy()
    x[:, :8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1.0]
    edge_divisors = [b for b, _ in OVERFLOW_EDGE]
    s = np.array(EXACT_DIVISORS + RECIPROCAL_DIVISORS + edge_divisors, np.float32)
    for row, (_, numerator) in enumerate(OVERFLOW_EDGE, len(s) - len(OVERFLOW_EDGE)):
        x[row, 8] = numerator
    random_rows = ROWS - len(s)
    s = np.concatenate([s, rng.uniform(-100.0, 100.0, random_rows).astype(np.float32)])
    return x, s


def _floats_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many floats lie between a and b (same sign assumed); NaN pairs are 0 apart."""
    distance = np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))
    return np.where(np.isnan(a) & np.isnan(b), 0, distance)


def test_rows_divided_by_a_shared_divisor_are_within_one_float_of_division() -> None:
    x, s = _inputs()
    got = shlo.compile(PROGRAM)(x, s)
    with np.errstate(all="ignore"):
        want = x / s[:, None]
    exact_rows = len(EXACT_DIVISORS)
    # Out-of-range divisors divide: bit for bit, signs of zeros and NaNs included.
    same = (got[:exact_rows] == want[:exact_rows]) & (
        np.signbit(got[:exact_rows]) == np.signbit(want[:exact_rows])
    )
    same |= np.isnan(got[:exact_rows]) & np.isnan(want[:exact_rows])
    assert same.all()
    # The others are at most one float away, with the same special values.
    reciprocal = got[exact_rows:]
    expected = want[exact_rows:]
    np.testing.assert_array_equal(np.isnan(reciprocal), np.isnan(expected))
    # Near the overflow threshold too (the largest float, not an infinity).
    np.testing.assert_array_equal(np.isinf(reciprocal), np.isinf(expected))
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(reciprocal[numbers]), np.signbit(expected[numbers]))
    apart = _floats_apart(reciprocal, expected)
    assert apart.max() <= 1
    # And the reciprocal was used: about a quarter of the quotients differ.
    assert 0.1 < np.mean(apart == 1) < 0.5


def test_measure_ulp_division_stays_within_one_and_a_half_ulp() -> None:
    """The tool's random quotients (docs/cpu.md quotes its 151 million): 256K here."""
    worst = measure_division(1 << 18, 1 << 16, seed=1)
    assert worst.count == 1 << 18
    assert worst.ulps < 1.5
    assert 0 < worst.misrounded < worst.count // 2
