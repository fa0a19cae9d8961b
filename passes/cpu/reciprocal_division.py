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
from shlo.ir_utils import create_value, defining_op, ops_named
from shlo.pass_framework import Pass

# A shared divisor's reciprocal is itself a division: below two 16-lane
# divisions (one zmm register each) it saves nothing.
MIN_LANES = 32
# |b| in [SMALLEST, LARGEST]: 1 / b is a normal f32, rounded once.
SMALLEST = 2.0**-126
LARGEST = 2.0**126
# arith.cmpf predicates.
_OGE, _OLE = 3, 5


def _is_f32_vector(type_: ir.Type) -> bool:
    return (
        isinstance(type_, ir.VectorType)
        and not any(ir.VectorType(type_).scalable_dims)
        and isinstance(ir.VectorType(type_).element_type, ir.F32Type)
    )


def _splat_value(op: ir.Operation | None) -> float | None:
    """The value of a splat f32 ``arith.constant``, else None."""
    if op is None or op.name != "arith.constant":
        return None
    attribute = op.attributes["value"]
    if not isinstance(attribute, ir.DenseElementsAttr) or not attribute.is_splat:
        return None
    return ir.FloatAttr(attribute.get_splat_value()).value


def _shared_scalar(op: ir.Operation | None) -> ir.Value | None:
    """The f32 scalar that the ``vector.broadcast`` ``op`` copies to every lane, else None.

    Its source is the scalar or a vector of one element (after vectorization,
    a row's sum is read as a 0-d vector).
    """
    if op is None or op.name != "vector.broadcast":
        return None
    source = op.operands[0]
    if isinstance(source.type, ir.F32Type):
        return source
    if not _is_f32_vector(source.type) or ir.VectorType(source.type).rank > 1:
        return None
    if ir.ShapedType(source.type).rank == 1 and ir.ShapedType(source.type).shape[0] != 1:
        return None
    rank = ir.VectorType(source.type).rank
    return create_value(
        "vector.extract",
        [source],
        ir.F32Type.get(),
        static_position=ir.DenseI64ArrayAttr.get([0] * rank),
    )


def _cmpf(predicate: int, a: ir.Value, b: ir.Value) -> ir.Value:
    """An i1, or a vector of i1 of a's shape."""
    i1 = ir.IntegerType.get_signless(1)
    type_ = ir.VectorType.get(ir.VectorType(a.type).shape, i1) if _is_f32_vector(a.type) else i1
    predicate_attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), predicate)
    return create_value("arith.cmpf", [a, b], type_, predicate=predicate_attr)


def _f32(value: float, type_: ir.Type | None = None) -> ir.Value:
    """An f32 constant, or a splat of it of the vector type ``type_``."""
    scalar = ir.FloatAttr.get(ir.F32Type.get(), value)
    if type_ is None:
        return create_value("arith.constant", [], scalar.type, value=scalar)
    splat = ir.DenseElementsAttr.get_splat(type_, scalar)
    return create_value("arith.constant", [], type_, value=splat)


def _by_shared_reciprocal(division: ir.Operation, divisor: ir.Value) -> ir.Value:
    """The quotient, multiplied by 1 / divisor where that is normal and divided otherwise."""
    numerator, broadcast = division.operands[0], division.operands[1]
    f32 = ir.F32Type.get()
    reciprocal = create_value("arith.divf", [_f32(1.0), divisor], f32)
    magnitude = create_value("math.absf", [divisor], f32)
    # Ordered compares: NaN is out of range.
    normal = create_value(
        "arith.andi",
        [_cmpf(_OGE, magnitude, _f32(SMALLEST)), _cmpf(_OLE, magnitude, _f32(LARGEST))],
        ir.IntegerType.get_signless(1),
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
    product = create_value("arith.mulf", [numerator, reciprocal], vector_type)
    magnitude = create_value("math.absf", [product], vector_type)
    huge = _cmpf(_OGE, magnitude, _f32(float(np.finfo(np.float32).max), vector_type))
    i1 = ir.IntegerType.get_signless(1)
    shape = ir.VectorType(vector_type).shape
    if len(shape) != 1:  # vector.reduction takes 1-D vectors
        huge = create_value("vector.shape_cast", [huge], ir.VectorType.get([math.prod(shape)], i1))
    any_huge = create_value(
        "vector.reduction", [huge], i1, kind=ir.Attribute.parse("#vector.kind<or>")
    )
    branch = scf.IfOp(any_huge, [vector_type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([create_value("arith.divf", [numerator, divisor], vector_type)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([product])
    return branch.results[0]


def _by_constant_reciprocal(division: ir.Operation, value: float) -> ir.Value | None:
    """The quotient as a product with the constant 1 / value, when that is a normal number."""
    if not SMALLEST <= abs(value) <= LARGEST:
        return None
    reciprocal = float(np.float32(1.0) / np.float32(value))  # rounded once, in f32
    lanes = _f32(reciprocal, division.results[0].type)
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
                constant = _splat_value(producer)
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
