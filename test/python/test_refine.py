"""shlo.refine: argument type forms, copies and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo.refine import tensor_type_string

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "add_one_dynamic.mlir"


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("tensor<16xf32>", "tensor<16xf32>"),
        (np.zeros((2, 3), np.int32), "tensor<2x3xi32>"),
        (((), np.float64), "tensor<f64>"),
        (((4,), np.uint8), "tensor<4xui8>"),
        (((1, 2), np.bool_), "tensor<1x2xi1>"),
        (((5,), np.complex64), "tensor<5xcomplex<f32>>"),
        (((5,), "bfloat16"), "tensor<5xbf16>"),
    ],
)
def test_argument_type_forms(arg, expected):
    assert tensor_type_string(arg) == expected


def test_refine_returns_a_static_copy():
    context = shlo.new_context()
    module = shlo.load_module(EXAMPLE, context)
    refined = shlo.refine(module, [np.ones(16, np.float32)])
    assert "tensor<?xf32>" in str(module), "the input module must not change"
    text = str(refined)
    assert "?" not in text
    assert "stablehlo.constant dense<1.000000e+00> : tensor<16xf32>" in text
    assert "broadcast" not in text


def test_refine_reports_the_dynamic_value():
    with pytest.raises(shlo.ShloError) as caught:
        shlo.refine(str(EXAMPLE), [])
    assert caught.value.diagnostics[0].where == f"{EXAMPLE}:1:1"
    assert "argument #0 of @main has type tensor<?xf32>" in str(caught.value)


def test_refine_rejects_wrong_arity():
    with pytest.raises(shlo.ShloError, match="number of refinements must match"):
        shlo.refine(str(EXAMPLE), ["tensor<2xf32>", "tensor<3xf32>"])


def test_refine_rejects_unknown_dtypes():
    with pytest.raises(ValueError, match="unsupported dtype"):
        shlo.refine(str(EXAMPLE), [((2,), np.dtype("datetime64[s]"))])
