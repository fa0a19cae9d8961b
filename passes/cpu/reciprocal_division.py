"""shlo-reciprocal-division: divide a vector by a value its lanes share with one reciprocal.

Ours because upstream has no such rewrite. XLA's algebraic simplifier has
it (``A / broadcast(B)`` becomes ``A * broadcast(1 / B)``, and division by a
constant a multiplication), and jax's softmax comes out of XLA that way.
Softmax, attention and normalizations divide whole rows by one sum or norm,
and a vector division costs several multiplies: on the bench's softmax the
divide loop took a fifth of the time.

For an ``arith.divf`` of an f32 vector of at least 32 lanes by a
``vector.broadcast`` of one value ``b`` (on fewer lanes the reciprocal's
own division saves nothing), the pass computes ``r = 1 / b`` once and
multiplies by it when r is a normal number (2^-126 <= |b| <= 2^126). The
product is within 1.5 ULP of the quotient (one float from the correctly
rounded one; ``python -m shlo.tools.measure_ulp --division N``), and
special numerators (NaN, infinities, signed zeros) give what division
gives. Near the overflow threshold the product may round to infinity where
the quotient rounds to the largest float, or the other way round, so a
vector with a product at 3.4028235e38 or beyond is divided instead. Any
other divisor (0, infinities, NaN, subnormals, the largest magnitudes)
takes the division, so a reciprocal that would be infinite or subnormal is
never used. A splat constant divisor in that range is replaced by its
reciprocal at compile time, with the same overflow test. f64, f16, bf16
and scalars keep their divisions.

  %q = arith.divf %x, %bb : vector<64xf32>        // %bb = vector.broadcast %b
  ==>
  %b0 = vector.extract %b[] : f32 from vector<f32>
  %r = arith.divf %one, %b0 : f32
  %normal = ... 2^-126 <= |%b0| <= 2^126 ...
  %q = scf.if %normal -> (vector<64xf32>) {
    %p = arith.mulf %x, (vector.broadcast %r)
    %huge = ... any lane of |%p| >= 3.4028235e38 ...
    scf.yield (scf.if %huge { arith.divf %x, %bb } else { %p })
  } else {
    scf.yield (arith.divf %x, %bb)
  }
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir, scf
from shlo.ir_utils import constant_float, create_value, defining_op, ops_named
from shlo.pass_framework import Pass
from shlo.passes.cpu.approximate_math import OGE, OLE, F32Builder

# A shared divisor's reciprocal is itself a division: below two 16-lane
# divisions (one zmm register each) it saves nothing.
MIN_LANES = 32
# |b| in [SMALLEST, LARGEST]: 1 / b is a normal f32, rounded once.
SMALLEST = 2.0**-126
LARGEST = 2.0**126
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _is_f32_vector(type_: ir.Type) -> bool:
    return (
        isinstance(type_, ir.VectorType)
        and not any(ir.VectorType(type_).scalable_dims)
        and isinstance(ir.VectorType(type_).element_type, ir.F32Type)
    )


def _shared_scalar(op: ir.Operation | None) -> ir.Value | None:
    """The f32 scalar that the ``vector.broadcast`` ``op`` copies to every lane, else None.

    Its source is the scalar or a vector of one element and rank 0 or 1
    (after vectorization, a row's sum is read as a 0-d vector).
    """
    if op is None or op.name != "vector.broadcast":
        return None
    source = op.operands[0]
    if isinstance(source.type, ir.F32Type):
        return source
    if not _is_f32_vector(source.type):
        return None
    shape = ir.VectorType(source.type).shape
    if len(shape) > 1 or math.prod(shape) != 1:
        return None
    position = ir.DenseI64ArrayAttr.get([0] * len(shape))
    return create_value("vector.extract", [source], ir.F32Type.get(), static_position=position)


def _by_shared_reciprocal(division: ir.Operation, divisor: ir.Value) -> ir.Value:
    """The quotient, multiplied by 1 / divisor where that is normal and divided otherwise."""
    numerator, broadcast = division.operands[0], division.operands[1]
    scalar = F32Builder(None)
    reciprocal = scalar.div(1.0, divisor)
    magnitude = scalar.unary("math.absf", divisor)
    # Ordered compares: NaN is out of range.
    normal = create_value(
        "arith.andi",
        [scalar.cmpf(OGE, magnitude, SMALLEST), scalar.cmpf(OLE, magnitude, LARGEST)],
        scalar.i1,
    )
    vector_type = division.results[0].type
    branch = scf.IfOp(normal, [vector_type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        lanes = create_value("vector.broadcast", [reciprocal], vector_type)
        scf.YieldOp([_product_or_quotient(numerator, lanes, broadcast)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([create_value("arith.divf", [numerator, broadcast], vector_type)])
    return branch.results[0]


def _product_or_quotient(numerator: ir.Value, reciprocal: ir.Value, divisor: ir.Value) -> ir.Value:
    """numerator * reciprocal, or numerator / divisor for a vector with a lane at the largest float.

    Near the overflow threshold the product can round to infinity where the
    quotient rounds to the largest float, or the other way round: any lane
    of magnitude 3.4028235e38 or more (infinities too) sends the vector to
    the division.
    """
    vector_type = numerator.type
    lanes = F32Builder(ir.VectorType(vector_type).shape)
    product = lanes.mul(numerator, reciprocal)
    huge = lanes.cmpf(OGE, lanes.unary("math.absf", product), FLOAT32_MAX)
    branch = scf.IfOp(lanes.reduce_lanes("or", huge), [vector_type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([lanes.div(numerator, divisor)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([product])
    return branch.results[0]


def _by_constant_reciprocal(division: ir.Operation, value: float) -> ir.Value | None:
    """The quotient as a product with the constant 1 / value, when that is a normal number."""
    if not SMALLEST <= abs(value) <= LARGEST:
        return None
    reciprocal = float(np.float32(1.0) / np.float32(value))  # rounded once, in f32
    lanes = F32Builder(ir.VectorType(division.results[0].type).shape).f(reciprocal)
    return _product_or_quotient(division.operands[0], lanes, division.operands[1])


@dataclass(frozen=True)
class ReciprocalDivisionPass(Pass):
    """Divide f32 vectors by a broadcast or constant divisor with its reciprocal."""

    argument: ClassVar[str] = "shlo-reciprocal-division"

    def run(self, module: ir.Operation) -> None:
        for division in ops_named(module, "arith.divf"):
            if not _is_f32_vector(division.results[0].type):
                continue
            producer = defining_op(division.operands[1])
            with division.location, ir.InsertionPoint(division):
                constant = constant_float(division.operands[1])
                if constant is not None:
                    quotient = _by_constant_reciprocal(division, constant)
                elif math.prod(ir.VectorType(division.results[0].type).shape) >= MIN_LANES:
                    divisor = _shared_scalar(producer)
                    quotient = None if divisor is None else _by_shared_reciprocal(division, divisor)
                else:
                    quotient = None
            if quotient is None:
                continue
            division.results[0].replace_all_uses_with(quotient)
            division.erase()
