"""stablehlo.cholesky through the CPU pipeline (shlo-lower-cholesky), checked against numpy.

The triangle that the op must not read holds NaNs.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.refine import tensor_type_string


def tensor_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return tensor_type_string((shape, dtype))


def compile_cholesky(shape, dtype, lower):
    t = tensor_type(shape, dtype)
    program = f"""
func.func @main(%a: {t}) -> {t} {{
  %0 = stablehlo.cholesky %a, lower = {str(lower).lower()} : {t}
  return %0 : {t}
}}
"""
    return shlo.compile(program, isolate=False)


def positive_definite(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(shape)
    if np.iscomplexobj(np.zeros(0, dtype)):
        m = m + 1j * rng.standard_normal(shape)
    n = shape[-1]
    return m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)


def factor(a, lower):
    """numpy's factor of the double-precision matrix, in the requested triangle."""
    lower_factor = np.linalg.cholesky(a)
    return lower_factor if lower else np.conj(np.swapaxes(lower_factor, -1, -2))


def with_nans_outside(a, lower):
    n = a.shape[-1]
    outside = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    return np.where(outside, np.nan, a)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize(
    ("shape", "dtype", "tolerance"),
    [
        ((4, 4), np.float64, 1e-13),
        ((2, 3, 5, 5), np.float32, 1e-5),
        ((3, 4, 4), np.complex128, 1e-13),
        ((6, 6), np.complex64, 1e-5),
        # Blocked (lower_cholesky.BLOCK is 32): whole blocks, a narrower last one.
        ((70, 70), np.float64, 1e-12),
        ((33, 33), np.float32, 1e-5),
        ((2, 64, 64), np.complex128, 1e-12),
    ],
)
def test_matches_numpy(shape, dtype, tolerance, lower):
    a = positive_definite(shape, dtype)
    actual = compile_cholesky(shape, dtype, lower)(with_nans_outside(a, lower).astype(dtype))
    expected = factor(a.astype(dtype).astype(a.dtype), lower)
    # The other triangle of the result is zero.
    np.testing.assert_allclose(actual, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("n", [3, 40])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_narrow_floats_factor_in_f32(dtype, n):
    a = positive_definite((n, n), np.float64, seed=1).astype(dtype)
    actual = compile_cholesky((n, n), dtype, True)(a)
    assert actual.dtype == np.dtype(dtype)
    expected = factor(a.astype(np.float64), True)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=1e-2, atol=1e-2 * scale)


@pytest.mark.parametrize("shape", [(1, 1), (0, 0), (0, 3, 3)])
def test_degenerate_sizes(shape):
    a = np.full(shape, 4.0, np.float32)
    actual = compile_cholesky(shape, np.float32, True)(a)
    np.testing.assert_array_equal(actual, np.full(shape, 2.0, np.float32))


def test_not_positive_definite_gives_nan():
    a = np.array([[1.0, 2.0], [2.0, 1.0]], np.float64)
    actual = compile_cholesky((2, 2), np.float64, True)(a)
    assert actual[0, 0] == 1.0 and actual[1, 0] == 2.0 and np.isnan(actual[1, 1])


def test_blocked_factor_of_a_matrix_not_positive_definite_has_nan_on_its_diagonal():
    """A negative pivot in a later block: the columns before it are exact, its pivot NaN."""
    a = positive_definite((50, 50), np.float64, seed=2)
    before = np.linalg.cholesky(a)[:, :45]  # columns that a[45, 45] does not change
    a[45, 45] = -1e3
    actual = compile_cholesky((50, 50), np.float64, True)(a)
    np.testing.assert_allclose(actual[:, :45], before, rtol=1e-12, atol=1e-12)
    assert np.isnan(actual[45, 45])
