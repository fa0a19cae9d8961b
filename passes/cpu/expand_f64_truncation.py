"""shlo-expand-f64-truncation: round f64 to f16/bf16 and f32 to bf16 without runtime functions.

Ours because upstream is missing: LLVM lowers ``fptrunc double to half`` and
``fptrunc double to bfloat`` to calls of ``__truncdfhf2`` and ``__truncdfbf2``,
which the JIT cannot find (the wheel ships no compiler-rt, and the host's
libgcc must not matter). Truncating to f32 first would round twice and be
wrong just past f16/bf16 ties, so f64 is rounded to f32 *to odd* (round to
nearest even; if inexact, step toward zero when that rounded away from zero,
and set the lowest mantissa bit), which keeps what the second rounding needs:
results are correctly rounded, as in the StableHLO interpreter and numpy's
f64 -> f16. The f32 -> f16 ``arith.truncf`` that remains is one instruction.
f32 -> bf16 becomes integer code too: LLVM makes it a call of ``__truncsfbf2``,
or on AVX512-BF16 hosts an instruction that flushes subnormals to zero.
(``arith-expand{include-bf16}`` would make every NaN positive; here NaNs keep
their sign and upper payload and become quiet.)

Scalars, vectors and tensors are handled; rounding modes other than
to_nearest_even are left alone. Run it after every pass that may emit
``arith.truncf`` (``convert-math-to-libm`` does, for f16 math) and before
``convert-arith-to-llvm``.

  %0 = arith.truncf %x : f64 to f16
  ==>
  %r = arith.truncf %x : f64 to f32        // round to nearest even
  %b = arith.extf %r : f32 to f64
  %inexact = arith.cmpf one, %b, %x : f64
  %away = arith.cmpi ugt, %b_magnitude, %x_magnitude : i64
  %bits = arith.bitcast %r : f32 to i32
  %step = arith.extui %away : i1 to i32
  %toward_zero = arith.subi %bits, %step : i32
  %odd = arith.ori %toward_zero, %c1 : i32    // round to odd
  %w = arith.select %inexact, %odd, %bits : i32
  %f = arith.bitcast %w : i32 to f32
  %0 = arith.truncf %f : f32 to f16
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass

# arith.cmpi / arith.cmpf predicates.
CMPI_UGT = 8
CMPF_ONE = 6
# arith::RoundingMode::to_nearest_even.
TO_NEAREST_EVEN = 0

F64_MAGNITUDE = (1 << 63) - 1
F32_MAGNITUDE = (1 << 31) - 1
F32_INF = 0x7F800000
BF16_QUIET = 0x40


def _like(type_: ir.Type, element: ir.Type) -> ir.Type:
    """``element``, or a vector/tensor of it shaped like ``type_``."""
    if isinstance(type_, ir.VectorType):
        return ir.VectorType.get(type_.shape, element)
    if isinstance(type_, ir.RankedTensorType):
        return ir.RankedTensorType.get(type_.shape, element)
    return element


def _element(type_: ir.Type) -> ir.Type:
    return ir.ShapedType(type_).element_type if isinstance(type_, ir.ShapedType) else type_


class _Emitter:
    """Builds arith ops on scalars or on values shaped like ``shape_of``."""

    def __init__(self, shape_of: ir.Type) -> None:
        self.shape_of = shape_of

    def type(self, element: ir.Type) -> ir.Type:
        return _like(self.shape_of, element)

    def int_type(self, width: int) -> ir.Type:
        return self.type(ir.IntegerType.get_signless(width))

    def op(
        self, name: str, result: ir.Type, *operands: ir.Value, **attrs: ir.Attribute
    ) -> ir.Value:
        return create_value(name, operands, result, **attrs)

    def const(self, value: int, type_: ir.Type) -> ir.Value:
        scalar = ir.IntegerAttr.get(_element(type_), value)
        attr = ir.DenseElementsAttr.get_splat(type_, scalar) if type_ != _element(type_) else scalar
        return self.op("arith.constant", type_, value=attr)

    def int_op(self, name: str, lhs: ir.Value, rhs: ir.Value | int) -> ir.Value:
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        return self.op(f"arith.{name}", lhs.type, lhs, rhs)

    def cmp(self, kind: str, predicate: int, lhs: ir.Value, rhs: ir.Value | int) -> ir.Value:
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        i64 = ir.IntegerType.get_signless(64)
        return self.op(
            f"arith.cmp{kind}",
            self.int_type(1),
            lhs,
            rhs,
            predicate=ir.IntegerAttr.get(i64, predicate),
        )

    def select(self, cond: ir.Value, yes: ir.Value, no: ir.Value) -> ir.Value:
        return self.op("arith.select", yes.type, cond, yes, no)

    def cast(self, name: str, value: ir.Value, element: ir.Type) -> ir.Value:
        return self.op(name, self.type(element), value)


def f64_to_f32_odd(e: _Emitter, value: ir.Value) -> ir.Value:
    """The f32 bits (i32) of ``value`` (f64) rounded to odd; exact values and NaNs round to nearest."""
    f32, f64 = ir.F32Type.get(), ir.F64Type.get()
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    nearest = e.cast("arith.truncf", value, f32)
    back = e.cast("arith.extf", nearest, f64)
    # Ordered and unequal: false for exact results and for NaNs.
    inexact = e.cmp("f", CMPF_ONE, back, value)
    # Rounding keeps the sign, so magnitudes compare as unsigned bits.
    back_magnitude = e.int_op("andi", e.cast("arith.bitcast", back, i64), F64_MAGNITUDE)
    magnitude = e.int_op("andi", e.cast("arith.bitcast", value, i64), F64_MAGNITUDE)
    away = e.cmp("i", CMPI_UGT, back_magnitude, magnitude)
    bits = e.cast("arith.bitcast", nearest, i32)
    # One step toward zero on the sign-magnitude bits (inf becomes the largest
    # finite value), then the sticky lowest bit.
    toward_zero = e.int_op("subi", bits, e.cast("arith.extui", away, i32))
    odd = e.int_op("ori", toward_zero, 1)
    return e.select(inexact, odd, bits)


def f32_bits_to_bf16(e: _Emitter, bits: ir.Value) -> ir.Value:
    """f32 ``bits`` (i32) rounded to nearest even bf16, subnormals kept, NaNs made quiet."""
    i16 = ir.IntegerType.get_signless(16)
    lsb = e.int_op("andi", e.int_op("shrui", bits, 16), 1)
    # A carry out of the mantissa bumps the exponent, up to inf; inf itself has
    # a zero mantissa and stays inf. NaNs, which could carry, are replaced below.
    rounded = e.int_op("shrui", e.int_op("addi", e.int_op("addi", bits, 0x7FFF), lsb), 16)
    nan = e.int_op("ori", e.int_op("shrui", bits, 16), BF16_QUIET)
    is_nan = e.cmp("i", CMPI_UGT, e.int_op("andi", bits, F32_MAGNITUDE), F32_INF)
    result = e.cast("arith.trunci", e.select(is_nan, nan, rounded), i16)
    return e.cast("arith.bitcast", result, ir.BF16Type.get())


def _rounds_to_nearest_even(op: ir.Operation) -> bool:
    if "roundingmode" not in op.attributes:
        return True
    return ir.IntegerAttr(op.attributes["roundingmode"]).value == TO_NEAREST_EVEN


def expand_truncf(op: ir.Operation) -> ir.Value | None:
    """The replacement of ``arith.truncf`` ``op``, or None to leave it alone."""
    source = _element(op.operands[0].type)
    target = _element(op.results[0].type)
    if not _rounds_to_nearest_even(op):
        return None
    f64_source = isinstance(source, ir.F64Type)
    if not (
        (f64_source and isinstance(target, ir.F16Type | ir.BF16Type))
        or (isinstance(source, ir.F32Type) and isinstance(target, ir.BF16Type))
    ):
        return None
    e = _Emitter(op.operands[0].type)
    i32 = ir.IntegerType.get_signless(32)
    if f64_source:
        bits = f64_to_f32_odd(e, op.operands[0])
    else:
        bits = e.cast("arith.bitcast", op.operands[0], i32)
    if isinstance(target, ir.BF16Type):
        return f32_bits_to_bf16(e, bits)
    # f32 -> f16 is one instruction (F16C on x86, fcvt on AArch64).
    return e.cast("arith.truncf", e.cast("arith.bitcast", bits, ir.F32Type.get()), target)


@dataclass(frozen=True)
class ExpandF64TruncationPass(Pass):
    """Round f64 to f16/bf16 and f32 to bf16 with integer code instead of runtime functions."""

    argument: ClassVar[str] = "shlo-expand-f64-truncation"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "arith.truncf"):
            with ir.InsertionPoint(op), op.location:
                replacement = expand_truncf(op)
            if replacement is not None:
                op.results[0].replace_all_uses_with(replacement)
                op.erase()
