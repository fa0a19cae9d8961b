"""shlo-simplify's integer folding agrees with exact integer arithmetic at the type's extremes."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.dtypes import numpy_dtype
from shlo.ir_utils import constant_array

ELEMENTS = ["i8", "i16", "i32", "i64", "ui8", "ui32", "ui64"]


def truncated(lhs: int, rhs: int) -> tuple[int, int]:
    """C's quotient and remainder, on Python's unbounded integers."""
    quotient = abs(lhs) // abs(rhs) * (-1 if (lhs < 0) != (rhs < 0) else 1)
    return quotient, lhs - quotient * rhs


def operand_pairs(dtype: type[np.integer]) -> list[tuple[int, int]]:
    info = np.iinfo(dtype)
    values = sorted({info.min, info.min + 1, -7, -3, -1, 1, 2, 3, 7, info.max - 1, info.max})
    values = [v for v in values if info.min <= v <= info.max]
    # Division by zero and min / -1 overflow: the folder leaves or wraps them.
    return [(a, b) for a in values for b in values if b != 0 and not (a == info.min and b == -1)]


@pytest.mark.parametrize("op", ["divide", "remainder"])
@pytest.mark.parametrize("element", ELEMENTS)
def test_folded_division_is_truncated(op: str, element: str) -> None:
    dtype = numpy_dtype(element)
    pairs = operand_pairs(dtype)
    lhs = ", ".join(str(a) for a, _ in pairs)
    rhs = ", ".join(str(b) for _, b in pairs)
    n = len(pairs)
    module = shlo.load_module(
        f"""
func.func @main() -> tensor<{n}x{element}> {{
  %a = stablehlo.constant dense<[{lhs}]> : tensor<{n}x{element}>
  %b = stablehlo.constant dense<[{rhs}]> : tensor<{n}x{element}>
  %r = stablehlo.{op} %a, %b : tensor<{n}x{element}>
  return %r : tensor<{n}x{element}>
}}"""
    )
    shlo.run_pipeline(module, ["shlo-simplify"])
    returned = module.body.operations[0].regions[0].blocks[0].operations[-1].operands[0]
    folded = constant_array(returned)
    assert folded is not None, "the division was not folded"
    want = [truncated(a, b)[0 if op == "divide" else 1] for a, b in pairs]
    assert [int(v) for v in folded] == want


def folded_result(source: str) -> np.ndarray | None:
    module = shlo.load_module(source)
    shlo.run_pipeline(module, ["shlo-simplify"])
    returned = module.body.operations[0].regions[0].blocks[0].operations[-1].operands[0]
    return constant_array(returned)


def test_scalar_float_size_arithmetic_folds() -> None:
    # torch's arange(n) size, ceil((n - 0) / 1) in f64, once left dynamic_iota dynamic.
    folded = folded_result(
        """
func.func @main() -> tensor<i64> {
  %n = stablehlo.constant dense<7> : tensor<i64>
  %step = stablehlo.constant dense<2.0> : tensor<f64>
  %0 = stablehlo.convert %n : (tensor<i64>) -> tensor<f64>
  %1 = stablehlo.divide %0, %step : tensor<f64>
  %2 = stablehlo.ceil %1 : tensor<f64>
  %3 = stablehlo.convert %2 : (tensor<f64>) -> tensor<i64>
  return %3 : tensor<i64>
}"""
    )
    assert folded is not None and int(folded) == 4


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("stablehlo.divide %a, %b : tensor<2xf32>", "only scalars fold"),
        ("stablehlo.exponential %a : tensor<2xf32>", "not correctly rounded in numpy"),
    ],
)
def test_float_vectors_and_transcendentals_stay(body: str, why: str) -> None:
    folded = folded_result(
        f"""
func.func @main() -> tensor<2xf32> {{
  %a = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[3.0, 7.0]> : tensor<2xf32>
  %r = {body}
  return %r : tensor<2xf32>
}}"""
    )
    assert folded is None, why


def test_out_of_range_float_to_integer_stays() -> None:
    folded = folded_result(
        """
func.func @main() -> tensor<i32> {
  %a = stablehlo.constant dense<1.0e10> : tensor<f64>
  %r = stablehlo.convert %a : (tensor<f64>) -> tensor<i32>
  return %r : tensor<i32>
}"""
    )
    assert folded is None
