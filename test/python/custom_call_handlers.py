"""A user's custom-call handler, registered by test_lapack_calls.py (imported by the worker)."""

from __future__ import annotations

import os

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


def lower_relu_unless_passes_run_unverified(op: ir.Operation) -> None:
    """``lower_relu``, but the process dies when the frontend did not verify each pass:
    a pass that crashes on input the verifier would have rejected."""
    from shlo.frontend import verifies_each_pass

    if not verifies_each_pass():
        os.abort()
    lower_relu(op)


def abort(op: ir.Operation) -> None:
    """A handler that crashes its process."""
    os.abort()
