"""Float-to-integer stablehlo.convert on the CPU (shlo-saturate-float-to-int).

The expected values follow the reference interpreter (APFloat's
convertToInteger): truncate toward zero, saturate to the integer range, and
give 0 for NaN. Each case runs with the values as an argument and as a
constant, which LLVM folds at compile time.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import shlo

INTEGERS = {
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "ui32": np.uint32,
    "ui64": np.uint64,
}
FLOATS = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}


def reference(values: np.ndarray, integer: str) -> np.ndarray:
    info = np.iinfo(INTEGERS[integer])
    out = []
    for value in values.astype(np.float64):
        if math.isnan(value):
            out.append(0)
        elif math.isinf(value):
            out.append(info.max if value > 0 else info.min)
        else:
            out.append(min(max(math.trunc(value), int(info.min)), int(info.max)))
    return np.array(out, dtype=INTEGERS[integer])


def special_values(floating: str, integer: str) -> np.ndarray:
    info = np.iinfo(INTEGERS[integer])
    candidates = [
        math.nan,
        math.inf,
        -math.inf,
        0.0,
        -0.0,
        0.9,
        -0.9,
        1.5,
        -1.5,
        -2.7,
        float(info.min),
        float(info.min) - 1,
        float(info.max),
        float(info.max) + 1,
        1e30,
        -1e30,
    ]
    # Values beyond the float type's range become infinities.
    with np.errstate(over="ignore"):
        return np.array(candidates, dtype=np.float64).astype(FLOATS[floating])


def program(values: np.ndarray, floating: str, integer: str, as_constant: bool) -> str:
    n = values.size
    if as_constant:
        data = np.ascontiguousarray(values).tobytes().hex().upper()
        head = ""
        source = f'%x = stablehlo.constant dense<"0x{data}"> : tensor<{n}x{floating}>'
    else:
        head, source = f"%x: tensor<{n}x{floating}>", ""
    return f"""
func.func @main({head}) -> tensor<{n}x{integer}> {{
  {source}
  %r = stablehlo.convert %x : (tensor<{n}x{floating}>) -> tensor<{n}x{integer}>
  return %r : tensor<{n}x{integer}>
}}
"""


@pytest.mark.parametrize(
    ("floating", "integer"),
    [
        ("f32", "i8"),
        ("f32", "i32"),
        ("f64", "i64"),
        ("f32", "ui8"),
        ("f32", "ui32"),
        ("f64", "ui64"),
        ("f16", "i16"),
        ("f16", "i64"),
        ("bf16", "i32"),
    ],
)
@pytest.mark.parametrize("as_constant", [False, True])
def test_convert_saturates(floating: str, integer: str, as_constant: bool) -> None:
    values = special_values(floating, integer)
    executable = shlo.compile(program(values, floating, integer, as_constant), isolate=False)
    got = executable() if as_constant else executable(values)
    np.testing.assert_array_equal(got, reference(values, integer))
