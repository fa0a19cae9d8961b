"""f64 -> f16/bf16 and f32 -> bf16 converts on the CPU (shlo-expand-f64-truncation).

Results must be correctly rounded (round to nearest even straight from f64, as
the StableHLO interpreter and numpy's f64 -> f16 do), so the inputs include
values next to f16/bf16 ties that rounding through f32 would get wrong. The
reference is exact rational arithmetic; for f16 numpy's direct conversion is
checked as well. ml_dtypes' f64 -> bf16 rounds through f32 (twice), so it is
not a reference for bf16 ties.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.dtypes import numpy_dtype


@dataclass(frozen=True)
class Target:
    name: str
    dtype: type
    precision: int  # significand bits, the implicit one included
    emin: int  # exponent of the smallest normal number
    emax: int  # exponent of the largest finite number


F16 = Target("f16", np.float16, 11, -14, 15)
BF16 = Target("bf16", ml_dtypes.bfloat16, 8, -126, 127)


def correctly_rounded(values: np.ndarray, t: Target) -> np.ndarray:
    """``values`` rounded to nearest even on ``t``'s grid, with exact arithmetic."""
    out = []
    for value in values.tolist():
        if math.isnan(value) or math.isinf(value) or value == 0:
            out.append(value)
            continue
        _, exponent = math.frexp(abs(value))  # 2**(exponent-1) <= |value| < 2**exponent
        quantum = Fraction(2) ** max(exponent - t.precision, t.emin - t.precision + 1)
        rounded = round(Fraction(abs(value)) / quantum) * quantum  # ties to even
        magnitude = math.inf if rounded >= Fraction(2) ** (t.emax + 1) else float(rounded)
        out.append(math.copysign(magnitude, value))
    # Every entry is now exactly representable, so any conversion is exact.
    return np.array(out, dtype=np.float64).astype(t.dtype)


def interesting_values(t: Target, rng: np.random.Generator) -> np.ndarray:
    p, emin, emax = t.precision, t.emin, t.emax
    largest = (2 - 2.0 ** (1 - p)) * 2.0**emax
    overflow_tie = (2 - 2.0**-p) * 2.0**emax
    tiniest = 2.0 ** (emin - p + 1)
    special = [
        0.0,
        np.inf,
        largest,
        overflow_tie,  # ties to even: inf
        1e300,
        np.finfo(np.float64).max,
        2.0**emin,
        tiniest,
        tiniest / 2,  # ties to even: zero
        tiniest * 1.5,
        np.finfo(np.float64).smallest_subnormal,
        1e-300,
        2.0**-149,  # f32's smallest subnormal
        2.0**-150,
        2.0**-126,
        float(np.finfo(np.float32).max),
        1.0,
        1 / 3,
    ]
    # Ties between neighbours on the grid, normal and subnormal.
    count = 300
    exponents = rng.integers(emin, emax + 1, count)
    mantissas = rng.integers(1 << (p - 1), 1 << p, count)
    ties = list(np.ldexp(mantissas + 0.5, exponents - p + 1))
    ties += list(np.ldexp(rng.integers(0, 1 << (p - 1), 100) + 0.5, emin - p + 1))
    ties += [overflow_tie, tiniest / 2, tiniest * 1.5]
    ties_array = np.array(ties)
    near = [
        ties_array,
        ties_array * (1 + 2.0**-40),  # f32 cannot tell these from the tie
        ties_array * (1 - 2.0**-40),
        np.nextafter(ties_array, np.inf),
        np.nextafter(ties_array, 0),
    ]
    spread = np.ldexp(1 + rng.random(2000), rng.integers(emin - p - 3, emax + 3, 2000))
    magnitudes = np.concatenate([np.array(special), *near, spread])
    return np.concatenate([magnitudes, -magnitudes])


NANS = np.array(
    [
        0x7FF8000000000000,
        0xFFF8000000000000,
        0x7FF0000000000001,
        0xFFF4000000000000,
        0x7FF8000000000123,
    ],
    dtype=np.uint64,
).view(np.float64)


def convert(values: np.ndarray, source: str, target: str) -> np.ndarray:
    n = values.size
    text = f"""
    func.func @main(%x: tensor<{n}x{source}>) -> tensor<{n}x{target}> {{
      %0 = stablehlo.convert %x : (tensor<{n}x{source}>) -> tensor<{n}x{target}>
      return %0 : tensor<{n}x{target}>
    }}"""
    return shlo.compile(text, isolate=False)(values)


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint16)


def assert_bits_equal(got: np.ndarray, want: np.ndarray, inputs: np.ndarray, what: str) -> None:
    bad = np.nonzero(bits(got) != bits(want))[0]
    assert not len(bad), (
        f"{what}: {len(bad)} mismatches, first {float(inputs[bad[0]]).hex()}: "
        f"got {hex(bits(got)[bad[0]])}, want {hex(bits(want)[bad[0]])}"
    )


def assert_nans(got: np.ndarray, inputs: np.ndarray) -> None:
    """NaNs stay NaNs of the same sign and become quiet (payloads may differ)."""
    wide = got.astype(np.float32)
    assert np.isnan(wide).all()
    assert (np.signbit(wide) == np.signbit(inputs)).all()
    quiet = 0x0200 if got.dtype == np.float16 else 0x0040
    assert (bits(got) & quiet).all()


@pytest.mark.parametrize("target", [F16, BF16], ids=lambda t: t.name)
def test_f64_truncation_is_correctly_rounded(target: Target) -> None:
    values = interesting_values(target, np.random.default_rng(0))
    got = convert(np.concatenate([values, NANS]), "f64", target.name)
    want = correctly_rounded(values, target)
    assert got.dtype == target.dtype
    assert_bits_equal(got[: values.size], want, values, f"f64 -> {target.name}")
    assert_nans(got[values.size :], NANS)
    # The inputs do catch rounding twice through f32.
    with np.errstate(over="ignore"):
        twice = values.astype(np.float32).astype(target.dtype)
    assert (bits(twice) != bits(want)).sum() > 100


def test_f64_to_f16_matches_numpy() -> None:
    values = interesting_values(F16, np.random.default_rng(1))
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    assert_bits_equal(convert(values, "f64", "f16"), want, values, "f64 -> f16 vs numpy")


def test_f32_to_bf16_keeps_subnormals() -> None:
    # AVX512-BF16's conversion flushes f32 subnormals to zero; ml_dtypes does not.
    rng = np.random.default_rng(2)
    words = np.concatenate(
        [
            rng.integers(0, 1 << 32, 4000, dtype=np.uint64),  # every class of f32
            rng.integers(0, 1 << 23, 1000, dtype=np.uint64),  # subnormals
            np.array([0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000, 0x7F800000]),
        ]
    ).astype(np.uint32)
    words = np.concatenate([words, words | 0x80000000])
    values = words.view(np.float32)
    got = convert(values, "f32", "bf16")
    finite = ~np.isnan(values)
    want = values[finite].astype(ml_dtypes.bfloat16)
    assert_bits_equal(got[finite], want, values[finite], "f32 -> bf16")
    assert_nans(got[~finite], values[~finite])


FLOATS = ["f16", "bf16", "f32", "f64"]
INTEGERS = ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64"]
SMALL_FLOATS = ["f8E4M3FN", "f8E5M2"]


def test_every_conversion_compiles() -> None:
    """All converts among f16, bf16, f32, f64, the integers and two f8 types (those
    only to and from f64), in one program, on values that every type holds."""
    types = FLOATS + INTEGERS + SMALL_FLOATS
    pairs = [
        (a, b)
        for a in types
        for b in types
        if a != b and not ({a, b} & set(SMALL_FLOATS) and "f64" not in (a, b))
    ]
    values = np.array([0, 1, 2, 3, 4, 6, 8, 12])
    n = values.size
    args = ", ".join(f"%{t}: tensor<{n}x{t}>" for t in types)
    lines = [
        f"%{a}_{b} = stablehlo.convert %{a} : (tensor<{n}x{a}>) -> tensor<{n}x{b}>"
        for a, b in pairs
    ]
    results = ", ".join(f"%{a}_{b}" for a, b in pairs)
    result_types = ", ".join(f"tensor<{n}x{b}>" for _, b in pairs)
    text = f"""
    func.func @main({args}) -> ({result_types}) {{
      {chr(10).join(lines)}
      return {results} : {result_types}
    }}"""

    def held(t: str) -> np.ndarray:
        return (values != 0) if t == "i1" else values.astype(numpy_dtype(t))

    outputs = shlo.compile(text, isolate=False)(*[held(t) for t in types])
    for (a, b), got in zip(pairs, outputs, strict=True):
        want = held(a).astype(numpy_dtype(b)) if a == "i1" else held(b)
        assert got.dtype == want.dtype, (a, b)
        assert (got.astype(np.float64) == want.astype(np.float64)).all(), (a, b, got)
