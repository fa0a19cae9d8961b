"""f8, f6 and f4 element types on the CPU backend (shlo-expand-small-float-conversions).

Every op computes in f32 and rounds once to the small type, so the reference is
ml_dtypes doing the same; results are compared bit for bit (NaNs included).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.dtypes import EMULATED_FLOATS, numpy_dtype
from shlo.passes.cpu.expand_small_float_conversions import FORMATS, encode_exact

SMALL_FLOATS = list(EMULATED_FLOATS)
F32 = np.float32
N = 64  # elements per elementwise input
ROWS, COLS = 4, 8  # the reduce input
# Integer types of the same width, for bitcast_convert.
SAME_WIDTH_INT = {8: "i8", 4: "i4"}


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


def assert_bits_equal(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, what
    got_bits, want_bits = bits(got).ravel(), bits(want).ravel()
    bad = np.nonzero(got_bits != want_bits)[0]
    assert not len(bad), (
        f"{what}: {len(bad)} mismatches, first at {bad[0]}: "
        f"got {hex(got_bits[bad[0]])}, want {hex(want_bits[bad[0]])}"
    )


def program(t: str) -> tuple[str, list[str]]:
    """One @main exercising most ops on small float type ``t``, and its result names."""
    width = FORMATS[t].width
    v, p = f"tensor<{N}x{t}>", f"tensor<{1 << width}x{t}>"
    r, s = f"tensor<{ROWS}x{COLS}x{t}>", f"tensor<{ROWS}x{t}>"
    i1, f32, i32 = f"tensor<{N}xi1>", f"tensor<{N}xf32>", f"tensor<{N}xi32>"
    f16, bf16, f64 = f"tensor<{N}xf16>", f"tensor<{N}xbf16>", f"tensor<{N}xf64>"
    wide16, wide32 = f"tensor<{1 << width}xf16>", f"tensor<{1 << width}xf32>"
    # (name, op text, result type); results are returned in this order.
    ops = [
        ("add", f"stablehlo.add %a, %b : {v}", v),
        ("mul", f"stablehlo.multiply %a, %b : {v}", v),
        ("lt", f"stablehlo.compare LT, %a, %b : ({v}, {v}) -> {i1}", i1),
        ("sel", f"stablehlo.select %lt, %a, %b : {i1}, {v}", v),
        ("c", f"stablehlo.constant dense<1.5> : {v}", None),
        ("scaled", f"stablehlo.multiply %add, %c : {v}", v),
        ("to32", f"stablehlo.convert %a : ({v}) -> {f32}", f32),
        ("to16", f"stablehlo.convert %a : ({v}) -> {f16}", f16),
        ("tobf", f"stablehlo.convert %a : ({v}) -> {bf16}", bf16),
        ("to64", f"stablehlo.convert %a : ({v}) -> {f64}", f64),
        ("toi", f"stablehlo.convert %a : ({v}) -> {i32}", i32),
        ("from32", f"stablehlo.convert %x32 : ({f32}) -> {v}", v),
        ("from16", f"stablehlo.convert %x16 : ({f16}) -> {v}", v),
        ("frombf", f"stablehlo.convert %xbf : ({bf16}) -> {v}", v),
        ("from64", f"stablehlo.convert %x64 : ({f64}) -> {v}", v),
        ("fromi", f"stablehlo.convert %i : ({i32}) -> {v}", v),
        ("up", f"stablehlo.convert %pat : ({p}) -> {wide32}", None),
        ("trip", f"stablehlo.convert %up : ({wide32}) -> {p}", p),
        ("up16", f"stablehlo.convert %pat : ({p}) -> {wide16}", None),
        ("trip16", f"stablehlo.convert %up16 : ({wide16}) -> {p}", p),
        ("zero", f"stablehlo.constant dense<0.0> : tensor<{t}>", None),
        (
            "sum",
            "stablehlo.reduce(%m init: %zero) applies stablehlo.add across dimensions = [1]"
            f" : ({r}, tensor<{t}>) -> {s}",
            s,
        ),
        ("sqrt", f"stablehlo.sqrt %a : {v}", v),
    ]
    if width in SAME_WIDTH_INT:
        bits_type = f"tensor<{N}x{SAME_WIDTH_INT[width]}>"
        ops.append(("bits", f"stablehlo.bitcast_convert %a : ({v}) -> {bits_type}", bits_type))
    returned = [(name, type_) for name, _, type_ in ops if type_ is not None]
    params = f"%a: {v}, %b: {v}, %pat: {p}, %x32: {f32}, %x16: {f16}, %xbf: {bf16}, "
    params += f"%x64: {f64}, %i: {i32}, %m: {r}"
    types = ", ".join(type_ for _, type_ in returned)
    body = "".join(f"  %{name} = {text}\n" for name, text, _ in ops)
    values = ", ".join(f"%{name}" for name, _ in returned)
    text = f"func.func @main({params}) -> ({types}) {{\n{body}  return {values} : {types}\n}}\n"
    return text, [name for name, _ in returned]


def small_values(dtype: np.dtype, size: int, rng: np.random.Generator, width: int) -> np.ndarray:
    """Random bit patterns of ``dtype``, always including its edge cases."""
    patterns = rng.integers(0, 1 << width, size, dtype=np.uint8)
    finfo = ml_dtypes.finfo(dtype)
    edges = np.array([0.0, -0.0, 1.0, float(finfo.max), float(finfo.smallest_subnormal)], F32)
    patterns[: len(edges)] = edges.astype(dtype).view(np.uint8)
    return patterns.view(dtype)


def wide_values(dtype: type, size: int, rng: np.random.Generator, top: float) -> np.ndarray:
    """Values around ``top``'s range, with ties, overflow, underflow, inf and NaN."""
    limit = float(ml_dtypes.finfo(dtype).max)
    magnitudes = np.minimum(np.exp2(rng.uniform(-140.0, np.log2(top) + 2.0, size)), limit)
    values = (magnitudes * rng.choice([-1.0, 1.0], size)).astype(dtype)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0625, 1.1875, 3.0]
    specials += [min(x, limit) for x in (top, 2 * top)]
    values[: len(specials)] = np.array(specials, dtype)
    return values


def round_f32(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return values.astype(F32).astype(dtype)


@pytest.mark.parametrize("element", SMALL_FLOATS)
def test_small_float_ops(element: str) -> None:
    dtype = numpy_dtype(element)
    width = FORMATS[element].width
    rng = np.random.default_rng(SMALL_FLOATS.index(element))
    top = float(ml_dtypes.finfo(dtype).max)
    a, b = small_values(dtype, N, rng, width), small_values(dtype, N, rng, width)
    pat = np.arange(1 << width, dtype=np.uint8).view(dtype)  # every bit pattern
    x32 = wide_values(np.float32, N, rng, top)
    x16 = wide_values(np.float16, N, rng, top)
    xbf = wide_values(ml_dtypes.bfloat16, N, rng, top)
    x64 = wide_values(np.float64, N, rng, top)
    ints = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int64)
    ints[:8] = [0, 1, -1, 3, 17, 2**24 + 1, -(2**31), 2**31 - 1]
    ints = ints.astype(np.int32)
    m = small_values(dtype, ROWS * COLS, rng, width).reshape(ROWS, COLS)

    text, names = program(element)
    results = shlo.compile(text, isolate=False)(a, b, pat, x32, x16, xbf, x64, ints, m)
    got = {name: np.asarray(value) for name, value in zip(names, results, strict=True)}

    fa, fb = a.astype(F32), b.astype(F32)
    with np.errstate(all="ignore"):
        add = round_f32(fa + fb, dtype)
        lt = fa < fb
        # A sum accumulates in f32 (shlo-accumulate-narrow-floats-as-xla) and rounds
        # once; f32 holds sums of 8 small floats exactly, in any order.
        total = round_f32(m.astype(F32).sum(axis=1), dtype)
        want = {
            "add": add,
            "mul": round_f32(fa * fb, dtype),
            "lt": lt,
            "sel": np.where(lt, a, b),
            "scaled": round_f32(add.astype(F32) * F32(1.5), dtype),
            "to32": a.astype(F32),
            "to16": a.astype(np.float16),
            "tobf": a.astype(ml_dtypes.bfloat16),
            "to64": a.astype(np.float64),
            "from32": x32.astype(dtype),
            "from16": x16.astype(dtype),
            "frombf": xbf.astype(dtype),
            "from64": x64.astype(dtype),
            "fromi": ints.astype(dtype),
            "sum": total,
            "sqrt": round_f32(np.sqrt(fa), dtype),
        }
    for name, expected in want.items():
        assert_bits_equal(got[name], expected, f"{element} {name}")
    # Round trips: canonicalization may fold them away, keeping NaN payloads.
    nan = np.isnan(pat.astype(F32))
    for name, expected in (("trip", pat), ("trip16", pat.astype(np.float16).astype(dtype))):
        assert_bits_equal(got[name][~nan], expected[~nan], f"{element} {name}")
        assert np.isnan(got[name][nan].astype(F32)).all(), f"{element} {name}"
    # Only finite values in range: NaN and saturation are another pass's business.
    finite = np.isfinite(fa) & (np.abs(fa) < 2.0**31)
    assert_bits_equal(got["toi"][finite], fa[finite].astype(np.int32), f"{element} toi")
    if "bits" in got:  # the storage bits, as signed integers of the same width
        raw = a.view(np.uint8).astype(np.int16)
        signed = np.where(raw >= 1 << (width - 1), raw - (1 << width), raw).astype(np.int8)
        assert_bits_equal(got["bits"].astype(np.int8), signed, f"{element} bits")


@pytest.mark.parametrize("element", SMALL_FLOATS)
def test_constant_encoding(element: str) -> None:
    """Constants become the storage bits ml_dtypes uses for every finite value."""
    fmt = FORMATS[element]
    patterns = np.arange(1 << fmt.width, dtype=np.uint8)
    values = patterns.view(numpy_dtype(element)).astype(np.float64)
    for pattern, value in zip(patterns, values, strict=True):
        if np.isfinite(value):
            assert encode_exact(fmt, float(value)) == pattern, (element, value)


def test_loop_carried_small_float() -> None:
    """f8 values in loop-carried block arguments, with math and constants in the body."""
    t = "f8E5M2"
    text = f"""
func.func @main(%x: tensor<{t}>, %n: tensor<i32>) -> tensor<{t}> {{
  %one = stablehlo.constant dense<1> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %half = stablehlo.constant dense<0.5> : tensor<{t}>
  %r:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i32>, tensor<{t}>
  cond {{
    %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %a1 = stablehlo.exponential %acc : tensor<{t}>
    %a2 = stablehlo.multiply %a1, %half : tensor<{t}>
    stablehlo.return %i1, %a2 : tensor<i32>, tensor<{t}>
  }}
  return %r#1 : tensor<{t}>
}}"""
    dtype = ml_dtypes.float8_e5m2
    x = np.array(0.25, dtype)
    got = shlo.compile(text, isolate=False)(x, np.array(3, np.int32))
    acc = x
    for _ in range(3):
        acc = round_f32(np.exp(acc.astype(F32)), dtype)
        acc = round_f32(acc.astype(F32) * F32(0.5), dtype)
    assert_bits_equal(np.asarray(got), np.asarray(acc), "loop")
