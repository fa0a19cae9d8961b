"""shlo-min-max-as-select: max and min with a constant keep IEEE's results, NaN and zeros included."""

from __future__ import annotations

import numpy as np
import pytest
import shlo

# Special values first, then enough ordinary ones for full vectors and a tail.
SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-45, -1e-45]


def _inputs(dtype: str) -> np.ndarray:
    rest = np.random.default_rng(0).standard_normal(1000)
    return np.concatenate([SPECIALS * 3, rest]).astype(
        {"f32": np.float32, "f64": np.float64}[dtype]
    )


def _ieee(kind: str, x: np.ndarray, c: float) -> np.ndarray:
    """IEEE 754 maximum or minimum of x and c: NaN propagates, +0 > -0."""
    c_array = np.full_like(x, c)
    if kind == "maximum":
        larger = (x > c_array) | ((x == c_array) & ~np.signbit(x))
    else:
        larger = (x < c_array) | ((x == c_array) & np.signbit(x))
    return np.where(np.isnan(x) | larger, x, c_array)


def _literal(value: float, dtype: str) -> str:
    if np.isinf(value):  # MLIR spells infinities by their bits
        bits = {"f32": 0x7F800000, "f64": 0x7FF0000000000000}[dtype]
        sign = {"f32": 1 << 31, "f64": 1 << 63}[dtype] if value < 0 else 0
        return hex(bits | sign)
    return repr(value)


def _program(kind: str, c: float, dtype: str, then_add: float | None) -> str:
    n = len(_inputs(dtype))
    t = f"tensor<{n}x{dtype}>"
    tail = ""
    result = "%m"
    if then_add is not None:
        tail = (
            f"    %a = stablehlo.constant dense<{then_add!r}> : {t}\n"
            f"    %s = stablehlo.add %m, %a : {t}\n"
        )
        result = "%s"
    return (
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"    %c = stablehlo.constant dense<{_literal(c, dtype)}> : {t}\n"
        f"    %m = stablehlo.{kind} %x, %c : {t}\n"
        f"{tail}"
        f"    return {result} : {t}\n"
        "}\n"
    )


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["maximum", "minimum"])
@pytest.mark.parametrize("c", [0.0, -0.0, 1.0, -2.5, np.inf])
def test_min_max_with_a_constant_are_ieee(kind: str, c: float, dtype: str) -> None:
    x = _inputs(dtype)
    got = np.asarray(shlo.compile(_program(kind, c, dtype, None), isolate=False)(x))
    expected = _ieee(kind, x, c)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("then_add", [1.0, -0.5, 0.0])
def test_relu_then_add_is_exact(then_add: float) -> None:
    # An add of a nonzero constant cannot tell -0 from +0, so the pass drops
    # its own +0.0 there; an add of 0.0 can, so it keeps it.
    x = _inputs("f32")
    got = np.asarray(shlo.compile(_program("maximum", 0.0, "f32", then_add), isolate=False)(x))
    expected = _ieee("maximum", x, 0.0) + np.float32(then_add)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
