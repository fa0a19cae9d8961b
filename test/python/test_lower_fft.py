"""stablehlo.fft through the CPU pipeline (shlo-lower-fft), checked against numpy.fft."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.conformance import compare
from shlo.passes.decompose.lower_fft import unit_roots
from shlo.refine import tensor_type_string

# The real type of each complex type and the complex type of each real one.
PARTNER = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64),
}


def tensor_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return tensor_type_string((shape, dtype))


def reference(kind: str, x: np.ndarray, lengths: list[int]) -> np.ndarray:
    """numpy's transform computed in double precision."""
    axes = tuple(range(-len(lengths), 0))
    wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    if kind == "FFT":
        return np.fft.fftn(wide, axes=axes)
    if kind == "IFFT":
        return np.fft.ifftn(wide, axes=axes)
    if kind == "RFFT":
        return np.fft.rfftn(wide, lengths, axes=axes)
    return np.fft.irfftn(wide, lengths, axes=axes)


def run_fft(kind: str, x: np.ndarray, lengths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    expected = reference(kind, x, lengths)
    out_dtype = PARTNER[x.dtype] if kind in ("RFFT", "IRFFT") else x.dtype
    operand, result = tensor_type(x.shape, x.dtype), tensor_type(expected.shape, out_dtype)
    program = f"""
func.func @main(%x: {operand}) -> {result} {{
  %0 = stablehlo.fft %x, type = {kind}, length = {lengths} : ({operand}) -> {result}
  return %0 : {result}
}}
"""
    actual = shlo.compile(program, isolate=False)(x)
    return actual, expected.astype(out_dtype)


def random(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.iscomplexobj(np.zeros(0, dtype)):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize(
    ("kind", "shape", "lengths", "dtype"),
    [
        ("FFT", (3, 6, 5), [6, 5], np.complex128),
        ("IFFT", (2, 4, 3), [2, 4, 3], np.complex64),
        ("RFFT", (5, 17), [17], np.float32),
        ("RFFT", (3, 4, 6), [4, 6], np.float64),
        ("RFFT", (2, 3, 8), [2, 3, 8], np.float32),
        ("IRFFT", (4, 9), [16], np.complex64),
        ("IRFFT", (3, 9), [17], np.complex128),
        ("IRFFT", (2, 3, 5), [2, 3, 8], np.complex128),
        ("FFT", (1,), [1], np.complex64),
        # Longer than 128 and composite: split Cooley-Tukey style.
        ("FFT", (2, 256), [256], np.complex128),
        ("RFFT", (3, 150), [150], np.float32),
        ("IRFFT", (2, 66), [130], np.complex128),
        ("IRFFT", (2, 68), [135], np.complex64),
        ("RFFT", (2,), [2], np.float64),
    ],
)
def test_fft_matches_numpy(kind, shape, lengths, dtype):
    x = random(shape, dtype)
    actual, expected = run_fft(kind, x, lengths)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    tolerance = 1e-5 if expected.real.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(actual, expected, rtol=tolerance, atol=tolerance * np.sqrt(x.size))


def test_single_precision_is_computed_in_double():
    """f32 results are the double-precision ones rounded once: within 1 ULP."""
    x = random((6, 33), np.float32, seed=3)
    actual, expected = run_fft("RFFT", x, [33])
    assert compare("expect_close", actual, expected, None, 1) == ""


def test_inverse_round_trip():
    x = random((3, 10), np.float64, seed=5)
    spectrum, _ = run_fft("RFFT", x, [10])
    back, _ = run_fft("IRFFT", spectrum, [10])
    np.testing.assert_allclose(back, x, atol=1e-13)


def test_zero_sized_batch():
    x = np.zeros((0, 4), np.complex64)
    actual, _ = run_fft("FFT", x, [4])
    assert actual.shape == (0, 4)


def test_unit_roots_are_exact_at_multiples_of_pi_over_4():
    cos, sin = unit_roots(8)
    half = np.sqrt(0.5)
    np.testing.assert_array_equal(cos, [1, half, 0, -half, -1, -half, 0, half])
    np.testing.assert_array_equal(sin, [0, half, 1, half, 0, -half, -1, -half])
    cos, sin = unit_roots(12)
    np.testing.assert_allclose(cos + 1j * sin, np.exp(2j * np.pi * np.arange(12) / 12), atol=1e-16)
