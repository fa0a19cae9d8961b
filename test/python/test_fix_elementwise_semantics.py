"""shlo-fix-elementwise-semantics end to end: boolean add, complex max/min, reduce_precision, log1p/expm1."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import shlo


def _tensor(n: int, element: str) -> str:
    return f"tensor<{n}x{element}>"


def _ordered(array: np.ndarray) -> np.ndarray:
    """Integers whose differences count ULPs between floats of one type."""
    bits = array.view(f"u{array.dtype.itemsize}").astype(np.int64)
    sign = np.int64(1) << (8 * array.dtype.itemsize - 1)
    if array.dtype.itemsize == 8:
        bits = array.view(np.int64)
        return np.where(bits < 0, np.int64(-(2**63)) - bits, bits)
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def _ulps(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    distance = np.abs(_ordered(actual) - _ordered(expected.astype(actual.dtype)))
    both_nan = np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    return np.where(both_nan, 0, distance)


# --- booleans ----------------------------------------------------------------------------

BOOLEAN = """
func.func @main(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<i1>) {
  %0 = stablehlo.add %a, %b : tensor<4xi1>
  %1 = stablehlo.multiply %a, %b : tensor<4xi1>
  %2 = stablehlo.maximum %a, %b : tensor<4xi1>
  %3 = stablehlo.minimum %a, %b : tensor<4xi1>
  %false = stablehlo.constant dense<false> : tensor<i1>
  %4 = stablehlo.reduce(%b init: %false) applies stablehlo.add across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  return %0, %1, %2, %3, %4 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<i1>
}
"""


def test_boolean_arithmetic_is_logical() -> None:
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    add, multiply, maximum, minimum, any_ = shlo.compile(BOOLEAN, isolate=False)(a, b)
    np.testing.assert_array_equal(add, a | b)
    np.testing.assert_array_equal(multiply, a & b)
    np.testing.assert_array_equal(maximum, a | b)
    np.testing.assert_array_equal(minimum, a & b)
    # An add-reduction of two trues stays true (an XOR would give false).
    assert any_


# --- complex maximum / minimum --------------------------------------------------------------


def _lexicographic(a: np.ndarray, b: np.ndarray, greater: bool) -> np.ndarray:
    """The interpreter's rule: compare imaginary parts when real parts are equal; NaN never wins."""
    if greater:
        take_a = np.where(a.real == b.real, a.imag > b.imag, a.real > b.real)
    else:
        take_a = np.where(a.real == b.real, a.imag < b.imag, a.real < b.real)
    return np.where(take_a, a, b)


def test_complex_extrema_are_lexicographic() -> None:
    values = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, np.nan]
    quads = np.array(list(itertools.product(values, repeat=4)))
    # Set the parts directly: arithmetic would turn inf * 1j into NaN.
    a, b = np.empty(len(quads), np.complex128), np.empty(len(quads), np.complex128)
    a.real, a.imag = quads[:, 0], quads[:, 1]
    b.real, b.imag = quads[:, 2], quads[:, 3]
    n = len(a)
    c64, c128 = _tensor(n, "complex<f32>"), _tensor(n, "complex<f64>")
    program = f"""
func.func @main(%a: {c64}, %b: {c64}, %c: {c128}, %d: {c128}) -> ({c64}, {c64}, {c128}, {c128}) {{
  %0 = stablehlo.maximum %a, %b : {c64}
  %1 = stablehlo.minimum %a, %b : {c64}
  %2 = stablehlo.maximum %c, %d : {c128}
  %3 = stablehlo.minimum %c, %d : {c128}
  return %0, %1, %2, %3 : {c64}, {c64}, {c128}, {c128}
}}"""
    a64, b64 = a.astype(np.complex64), b.astype(np.complex64)
    results = shlo.compile(program, isolate=False)(a64, b64, a, b)
    expected = [
        _lexicographic(a64, b64, True),
        _lexicographic(a64, b64, False),
        _lexicographic(a, b, True),
        _lexicographic(a, b, False),
    ]
    for result, want in zip(results, expected):
        # Bit for bit, so the sign of zero and NaN placement count.
        part = np.float32 if result.dtype == np.complex64 else np.float64
        got_bits = result.view(part).view(f"u{np.dtype(part).itemsize}")
        want_bits = want.astype(result.dtype).view(part).view(f"u{np.dtype(part).itemsize}")
        np.testing.assert_array_equal(got_bits, want_bits)


# --- reduce_precision ----------------------------------------------------------------------

MANTISSA = {np.float16: 10, ml_dtypes.bfloat16: 7, np.float32: 23, np.float64: 52}


def _reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """The reference interpreter's reducePrecision, on the bits."""
    width = x.dtype.itemsize * 8
    unsigned = np.dtype(f"u{width // 8}").type
    src_mantissa = MANTISSA[x.dtype.type]
    src_exponent = width - 1 - src_mantissa
    bits = x.view(unsigned).astype(np.uint64)
    mask = np.uint64((1 << width) - 1)
    with np.errstate(over="ignore"):
        if mantissa_bits < src_mantissa:
            shift = src_mantissa - mantissa_bits
            last = (bits >> np.uint64(shift)) & np.uint64(1)
            bits = (bits + last + np.uint64((1 << (shift - 1)) - 1)) & mask
            bits &= mask ^ np.uint64((1 << shift) - 1)
        if exponent_bits < src_exponent:
            exponent_mask = np.uint64(((1 << src_exponent) - 1) << src_mantissa)
            bias = (1 << (src_exponent - 1)) - 1
            reduced = (1 << (exponent_bits - 1)) - 1
            exponent = bits & exponent_mask
            signed_zero = bits & np.uint64(1 << (width - 1))
            bits = np.where(
                exponent > np.uint64((bias + reduced) << src_mantissa),
                signed_zero | exponent_mask,
                bits,
            )
            bits = np.where(
                exponent <= np.uint64((bias - reduced) << src_mantissa), signed_zero, bits
            )
    result = bits.astype(unsigned).view(x.dtype)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(x)
    return np.where(nan, x if mantissa_bits > 0 else x.dtype.type(np.inf), result)


def _random_floats(dtype: type, n: int, rng: np.random.Generator) -> np.ndarray:
    width = np.dtype(dtype).itemsize * 8
    unsigned = np.dtype(f"u{width // 8}")
    bits = rng.integers(0, 2**width, n, dtype=np.uint64).astype(unsigned)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 65504.0, 65520.0, 1e-8, -3.5])
    with np.errstate(over="ignore"):
        return np.concatenate([bits.view(dtype), specials.astype(dtype)])


def test_reduce_precision_matches_interpreter_and_ml_dtypes() -> None:
    rng = np.random.default_rng(0)
    n = 510
    f16, bf16 = _random_floats(np.float16, n, rng), _random_floats(ml_dtypes.bfloat16, n, rng)
    f32, f64 = _random_floats(np.float32, n, rng), _random_floats(np.float64, n, rng)
    m = n + 10
    formats = [
        ("f32", "e8m7"),
        ("f32", "e5m10"),
        ("f32", "e5m2"),
        ("f64", "e5m10"),
        ("f64", "e5m0"),
        ("f64", "e11m52"),
        ("f16", "e4m3"),
        ("f16", "e1m0"),
        ("bf16", "e5m2"),
    ]
    lines = [
        f"  %r{i} = stablehlo.reduce_precision %{t}, format = {fmt} : {_tensor(m, t)}"
        for i, (t, fmt) in enumerate(formats)
    ]
    types = [_tensor(m, t) for t, _ in formats]
    program = (
        f"func.func @main(%f16: {_tensor(m, 'f16')}, %bf16: {_tensor(m, 'bf16')}, "
        f"%f32: {_tensor(m, 'f32')}, %f64: {_tensor(m, 'f64')}) -> ({', '.join(types)}) {{\n"
        + "\n".join(lines)
        + f"\n  return {', '.join(f'%r{i}' for i in range(len(formats)))} : {', '.join(types)}\n}}"
    )
    inputs = {"f16": f16, "bf16": bf16, "f32": f32, "f64": f64}
    results = shlo.compile(program, isolate=False)(f16, bf16, f32, f64)
    for result, (t, fmt) in zip(results, formats):
        exponent, mantissa = (int(v) for v in fmt[1:].split("m"))
        want = _reduce_precision(inputs[t], exponent, mantissa)
        unsigned = f"u{result.dtype.itemsize}"
        np.testing.assert_array_equal(result.view(unsigned), want.view(unsigned), f"{t} {fmt}")
    # Against ml_dtypes: e8m7 is bfloat16 rounding (denormals included); e5m10 is
    # float16 rounding wherever float16 is normal.
    e8m7, e5m10 = results[0], results[1]
    finite = ~np.isnan(f32)
    np.testing.assert_array_equal(
        e8m7[finite], f32[finite].astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    normal = finite & (np.abs(f32) >= 2.0**-14) & (np.abs(f32) < 65504.0)
    np.testing.assert_array_equal(e5m10[normal], f32[normal].astype(np.float16).astype(np.float32))
    # NaN stays NaN, and with no mantissa bit it becomes +infinity (as the interpreter).
    assert np.all(np.isnan(e5m10[np.isnan(f32)]))
    assert np.all(results[4][np.isnan(f64)] == np.inf)


# --- log_plus_one / exponential_minus_one ---------------------------------------------------


def test_log1p_and_expm1_are_accurate() -> None:
    rng = np.random.default_rng(1)
    scales = [1e-30, 1e-8, 1e-4, 1e-2, 0.3, 3, 30, 300]
    edges = [0.0, -0.0, -1.0, -1.5, np.inf, -np.inf, np.nan, 88.7, 709.7, 710.0, -745.0, -0.9999999]
    base = np.concatenate([rng.standard_normal(500) * s for s in scales] + [np.array(edges)])
    n = len(base)
    dtypes = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
    with np.errstate(over="ignore"):
        inputs = {t: base.astype(d) for t, d in dtypes.items()}
    z = (rng.standard_normal(n) * 0.5 - 0.2) + 1j * rng.standard_normal(n) * 0.5
    z[:4] = [-1, -2 + 0.001j, -1 + 1e-5j, 1j]
    c64 = _tensor(n, "complex<f32>")
    types = [_tensor(n, t) for t in dtypes for _ in range(2)] + [c64]
    lines = []
    for t in dtypes:
        lines.append(f"  %{t}_l = stablehlo.log_plus_one %{t} : {_tensor(n, t)}")
        lines.append(f"  %{t}_e = stablehlo.exponential_minus_one %{t} : {_tensor(n, t)}")
    names = [f"%{t}_{k}" for t in dtypes for k in "le"] + ["%z_l"]
    program = (
        "func.func @main("
        + ", ".join(f"%{t}: {_tensor(n, t)}" for t in dtypes)
        + f", %z: {c64}) -> ({', '.join(types)}) {{\n"
        + "\n".join(lines)
        + f"\n  %z_l = stablehlo.log_plus_one %z : {c64}"
        + f"\n  return {', '.join(names)} : {', '.join(types)}\n}}"
    )
    results = shlo.compile(program, isolate=False)(*inputs.values(), z.astype(np.complex64))
    for i, (t, dtype) in enumerate(dtypes.items()):
        wide = inputs[t].astype(np.longdouble)
        with np.errstate(all="ignore"):
            for result, reference in zip(
                results[2 * i : 2 * i + 2], (np.log1p(wide), np.expm1(wide))
            ):
                want = reference.astype(np.float64).astype(dtype)
                worst = _ulps(result, want).max()
                assert worst <= (2 if t == "f64" else 1), (t, worst)
    # Complex: log|1 + z| = log1p(x (2 + x) + y^2) / 2 and arg(1 + z), against long double.
    z64 = z.astype(np.complex64).astype(np.clongdouble)
    x, y = z64.real, z64.imag
    with np.errstate(all="ignore"):
        real = (0.5 * np.log1p(x * (2 + x) + y * y)).astype(np.float64).astype(np.float32)
        imag = np.arctan2(y, 1 + x).astype(np.float64).astype(np.float32)
    log1p_z = results[-1]
    assert log1p_z.real[0] == -np.inf and log1p_z.imag[0] == 0
    assert _ulps(np.ascontiguousarray(log1p_z.real), real).max() <= 2
    assert _ulps(np.ascontiguousarray(log1p_z.imag), imag).max() <= 2
