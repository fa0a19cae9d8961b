"""A user's custom-call handler, registered by test_lapack_calls.py (imported by the worker)."""

from __future__ import annotations

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import create_constant, create_value
from shlo.passes.decompose.lower_custom_calls import lower_with


def lower_relu(op: ir.Operation) -> None:
    (x,) = op.operands
    with op.location, ir.InsertionPoint(op):
        x_type = ir.RankedTensorType(x.type)
        zero = create_constant(np.zeros(x_type.shape), x_type, op.location).result
        relu = create_value("stablehlo.maximum", [x, zero], x.type)
    lower_with(op, [relu])
