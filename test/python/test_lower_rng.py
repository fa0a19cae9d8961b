"""shlo-lower-rng end to end: rng_bit_generator bit for bit as XLA:CPU, and stablehlo.rng."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import shlo
from jax import lax

# --- a numpy port of XLA's prng.cc, for what jax cannot produce without x64 --------------

M32 = np.uint64(0xFFFFFFFF)


def _rotl(v: np.ndarray, d: int) -> np.ndarray:
    return (v << np.uint32(d)) | (v >> np.uint32(32 - d))


def _threefry2x32(x0: np.ndarray, x1: np.ndarray, key: np.uint64) -> list[np.ndarray]:
    k0, k1 = np.uint32(key & M32), np.uint32(key >> np.uint64(32))
    ks = [k0, k1, np.uint32(0x1BD11BDA) ^ k0 ^ k1]
    x = [x0 + ks[0], x1 + ks[1]]
    for block in range(5):
        for r in (13, 15, 26, 6) if block % 2 == 0 else (17, 29, 16, 24):
            x[0] = x[0] + x[1]
            x[1] = x[0] ^ _rotl(x[1], r)
        x[0] = x[0] + ks[(block + 1) % 3]
        x[1] = x[1] + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x


def threefry_u64(state: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """64-bit outputs: element i (row-major) uses counter state[1] + i."""
    n = math.prod(shape)
    with np.errstate(over="ignore"):
        counters = state[1] + np.arange(n, dtype=np.uint64)
        lo, hi = _threefry2x32(
            (counters & M32).astype(np.uint32),
            (counters >> np.uint64(32)).astype(np.uint32),
            state[0],
        )
        bits = lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))
        return np.array([state[0], state[1] + np.uint64(n)], np.uint64), bits.reshape(shape)


def _philox4x32(words: list[np.ndarray], key: np.uint64) -> list[np.ndarray]:
    k0, k1 = np.uint32(key & M32), np.uint32(key >> np.uint64(32))
    for _ in range(10):
        p0 = words[0].astype(np.uint64) * np.uint64(0xD2511F53)
        p1 = words[2].astype(np.uint64) * np.uint64(0xCD9E8D57)
        words = [
            (p1 >> np.uint64(32)).astype(np.uint32) ^ words[1] ^ k0,
            (p1 & M32).astype(np.uint32),
            (p0 >> np.uint64(32)).astype(np.uint32) ^ words[3] ^ k1,
            (p0 & M32).astype(np.uint32),
        ]
        k0, k1 = k0 + np.uint32(0x9E3779B9), k1 + np.uint32(0xBB67AE85)
    return words


def philox(state: np.ndarray, shape: tuple[int, ...], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """XLA's PhiloxRngBit32/64; a 2-element state is (key, counter low), the key the high word."""
    key = state[0]
    low, high = (state[1], state[2]) if len(state) == 3 else (state[1], state[0])
    n = math.prod(shape)
    blocks = (n * (bits // 32) + 3) // 4
    with np.errstate(over="ignore"):
        counter_low = low + np.arange(blocks, dtype=np.uint64)
        counter_high = np.where(counter_low < low, high + np.uint64(1), high)
        words = [
            (counter_low & M32).astype(np.uint32),
            (counter_low >> np.uint64(32)).astype(np.uint32),
            (counter_high & M32).astype(np.uint32),
            (counter_high >> np.uint64(32)).astype(np.uint32),
        ]
        words = _philox4x32(words, key)
        if bits == 64:
            words = [
                w0.astype(np.uint64) | (w1.astype(np.uint64) << np.uint64(32))
                for w0, w1 in ((words[0], words[1]), (words[2], words[3]))
            ]
        out = np.stack(words, axis=1).reshape(-1)[:n].reshape(shape)
        next_low = low + np.uint64(blocks)
        next_high = high + np.uint64(1) if next_low < low else high
    new_state = [key, next_low, next_high] if len(state) == 3 else [key, next_low]
    return np.array(new_state, np.uint64), out


def _tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def _generators(state_type: str, cases: list[tuple[str, tuple[int, ...], str]]) -> str:
    """@main(state) returning (new_state, bits) of each (algorithm, shape, element) case."""
    lines, results, types = [], [], []
    for i, (algorithm, shape, element) in enumerate(cases):
        out = _tensor(shape, element)
        lines.append(
            f"  %r{i}:2 = stablehlo.rng_bit_generator %s, algorithm = {algorithm} "
            f": ({state_type}) -> ({state_type}, {out})"
        )
        results += [f"%r{i}#0", f"%r{i}#1"]
        types += [state_type, out]
    return (
        f"func.func @main(%s: {state_type}) -> ({', '.join(types)}) {{\n"
        + "\n".join(lines)
        + f"\n  return {', '.join(results)} : {', '.join(types)}\n}}"
    )


SHAPES = [(), (3,), (5, 3), (3, 1, 7), (0,)]
ALGORITHMS = {
    "THREE_FRY": lax.RandomAlgorithm.RNG_THREE_FRY,
    "PHILOX": lax.RandomAlgorithm.RNG_PHILOX,
    "DEFAULT": lax.RandomAlgorithm.RNG_DEFAULT,
}
NARROW = {"ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32}


def test_matches_xla_up_to_32_bits() -> None:
    # Every shape and every width, under each algorithm (jax compiles one program per case).
    widths = list(NARROW)
    cases = [(a, s, widths[i % 3]) for a in ("THREE_FRY", "PHILOX") for i, s in enumerate(SHAPES)]
    cases += [("PHILOX", (2, 3), "ui8"), ("THREE_FRY", (2, 3), "ui16"), ("DEFAULT", (5, 3), "ui32")]
    generate = shlo.compile(_generators("tensor<2xui64>", cases), isolate=False)
    # The low counter word is close to wrapping: Philox's 128-bit carry happens.
    key32 = np.array([0x9E3779B9, 7, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)
    results = generate(key32.view(np.uint64))
    for i, (algorithm, shape, element) in enumerate(cases):
        state, bits = lax.rng_bit_generator(
            key32, shape, dtype=NARROW[element], algorithm=ALGORITHMS[algorithm]
        )
        case = f"{algorithm} {shape} {element}"
        np.testing.assert_array_equal(results[2 * i], np.asarray(state).view(np.uint64), case)
        np.testing.assert_array_equal(results[2 * i + 1], np.asarray(bits), case)


def test_64_bit_outputs_and_three_element_states() -> None:
    cases = [(a, s, "ui64") for a in ("THREE_FRY", "PHILOX") for s in [(), (3,), (2, 3)]]
    three = [("PHILOX", s, e) for s, e in [((), "ui16"), ((5,), "ui32"), ((2, 3), "ui64")]]
    state = np.array([0x0123456789ABCDEF, 0xFFFFFFFFFFFFFFFE], np.uint64)
    # The middle word wraps, so the carry reaches state[2].
    state3 = np.array([42, 0xFFFFFFFFFFFFFFFF, 7], np.uint64)
    results = shlo.compile(_generators("tensor<2xui64>", cases), isolate=False)(state)
    for i, (algorithm, shape, _) in enumerate(cases):
        reference = (
            threefry_u64(state, shape) if algorithm == "THREE_FRY" else philox(state, shape, 64)
        )
        np.testing.assert_array_equal(results[2 * i], reference[0], f"{algorithm} {shape}")
        np.testing.assert_array_equal(results[2 * i + 1], reference[1], f"{algorithm} {shape}")
    results = shlo.compile(_generators("tensor<3xui64>", three), isolate=False)(state3)
    for i, (_, shape, element) in enumerate(three):
        width = int(element[2:])
        new_state, bits = philox(state3, shape, max(width, 32))
        np.testing.assert_array_equal(results[2 * i], new_state, f"{shape} {element}")
        np.testing.assert_array_equal(results[2 * i + 1], bits.astype(f"u{width // 8}"))


def test_float_signed_and_sub_byte_outputs_are_bitcast() -> None:
    elements = ["f32", "bf16", "i64", "f8E4M3FN", "i4"]
    state = np.array([3, 3], np.uint64)
    results = shlo.compile(
        _generators("tensor<2xui64>", [("THREE_FRY", (4,), e) for e in elements]), isolate=False
    )(state)
    f32, bf16, i64, f8, i4 = results[1::2]
    assert (bf16.dtype, f8.dtype, i4.dtype) == (
        ml_dtypes.bfloat16,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.int4,
    )

    def xla(dtype: type) -> np.ndarray:
        _, bits = lax.rng_bit_generator(
            state.view(np.uint32), (4,), dtype=dtype, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY
        )
        return np.asarray(bits)

    np.testing.assert_array_equal(f32.view(np.uint32), xla(np.uint32))
    np.testing.assert_array_equal(bf16.view(np.uint16), xla(np.uint16))
    np.testing.assert_array_equal(f8.view(np.uint8), xla(np.uint8))
    np.testing.assert_array_equal(i4.astype(np.int8).view(np.uint8) & 0xF, xla(np.uint8) & 0xF)
    np.testing.assert_array_equal(i64.view(np.uint64), threefry_u64(state, (4,))[1])
    # The StableHLO conformance value for this state (rng_bit_generator_uint64_2).
    assert threefry_u64(state, ())[1] == np.uint64(3349939604322698703)


RNG = """
func.func @main(%fa: tensor<f32>, %fb: tensor<f32>, %ha: tensor<f16>, %hb: tensor<f16>,
                %ia: tensor<i32>, %ib: tensor<i32>, %ua: tensor<ui8>, %ub: tensor<ui8>)
    -> (tensor<40x50xf32>, tensor<7xf32>, tensor<1000xf16>, tensor<40x50xi32>,
        tensor<1000xui8>, tensor<2001xf32>, tensor<7xi32>) {
  %s2 = stablehlo.constant dense<[40, 50]> : tensor<2xi64>
  %s1 = stablehlo.constant dense<1000> : tensor<1xi64>
  %s3 = stablehlo.constant dense<2001> : tensor<1xi64>
  %s4 = stablehlo.constant dense<7> : tensor<1xi64>
  %0 = stablehlo.rng %fa, %fb, %s2, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<40x50xf32>
  %1 = stablehlo.rng %fa, %fb, %s4, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<7xf32>
  %2 = stablehlo.rng %ha, %hb, %s1, distribution = UNIFORM : (tensor<f16>, tensor<f16>, tensor<1xi64>) -> tensor<1000xf16>
  %3 = stablehlo.rng %ia, %ib, %s2, distribution = UNIFORM : (tensor<i32>, tensor<i32>, tensor<2xi64>) -> tensor<40x50xi32>
  %4 = stablehlo.rng %ua, %ub, %s1, distribution = UNIFORM : (tensor<ui8>, tensor<ui8>, tensor<1xi64>) -> tensor<1000xui8>
  %5 = stablehlo.rng %fa, %fb, %s3, distribution = NORMAL : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<2001xf32>
  %6 = stablehlo.rng %ib, %ib, %s4, distribution = UNIFORM : (tensor<i32>, tensor<i32>, tensor<1xi64>) -> tensor<7xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<40x50xf32>, tensor<7xf32>, tensor<1000xf16>, tensor<40x50xi32>, tensor<1000xui8>, tensor<2001xf32>, tensor<7xi32>
}
"""


@pytest.fixture(scope="module")
def rng() -> shlo.Executable:
    return shlo.compile(RNG, isolate=False)


def _rng_args(a: float, b: float) -> list[np.ndarray]:
    return [
        np.array(a, np.float32),
        np.array(b, np.float32),
        np.array(0, np.float16),
        np.array(1, np.float16),
        np.array(-5, np.int32),
        np.array(7, np.int32),
        np.array(3, np.uint8),
        np.array(250, np.uint8),
    ]


def test_rng_uniform_ranges(rng: shlo.Executable) -> None:
    uniform, again, half, ints, bytes_, _, empty_range = rng(*_rng_args(-2.0, 3.0))
    assert uniform.min() >= -2.0 and uniform.max() < 3.0
    assert abs(uniform.mean() - 0.5) < 0.1
    # Each op has a key of its own: the same counters give other values.
    assert not np.array_equal(uniform.reshape(-1)[:7], again)
    # f16 draws keep f16's mantissa, so rounding never reaches b.
    assert half.dtype == np.float16 and half.min() >= 0 and half.max() < 1
    assert set(np.unique(ints)) == set(range(-5, 7))
    assert bytes_.min() >= 3 and bytes_.max() < 250 and len(np.unique(bytes_)) > 200
    # b == a gives a instead of dividing by zero.
    assert np.all(empty_range == 7)


def test_rng_normal_and_determinism(rng: shlo.Executable) -> None:
    first = rng(*_rng_args(1.0, 2.0))
    normal = first[5]
    assert np.all(np.isfinite(normal))
    assert abs(normal.mean() - 1.0) < 0.15 and abs(normal.std() - 2.0) < 0.15
    second = rng(*_rng_args(1.0, 2.0))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
