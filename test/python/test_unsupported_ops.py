"""Ops and custom calls that no lowering handles are named up front, with location and target."""

from __future__ import annotations

import pytest
import shlo

PROGRAM = """func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = stablehlo.exponential %0 : tensor<3xf32>
  %2 = stablehlo.custom_call @other_kernel(%1) : (tensor<3xf32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}
"""


@pytest.mark.parametrize("isolate", [False, True])
def test_every_unknown_custom_call_is_named(isolate: bool) -> None:
    with pytest.raises(shlo.ShloError) as raised:
        shlo.compile(PROGRAM, isolate=isolate)
    errors = [d for d in raised.value.diagnostics if d.severity == "error"]
    assert [(d.line, d.column, d.message) for d in errors] == [
        (
            2,
            8,
            "custom call @my_kernel is not supported on target cpu: "
            "no handler is registered for it",
        ),
        (
            4,
            8,
            "custom call @other_kernel is not supported on target cpu: "
            "no handler is registered for it",
        ),
    ]
    assert "not bufferized" not in str(raised.value)
