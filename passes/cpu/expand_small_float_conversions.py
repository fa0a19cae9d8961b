"""shlo-expand-small-float-conversions: turn f8, f6 and f4 conversions into integer code on their bits.

Ours because upstream is missing: after ``arith-emulate-unsupported-floats``
computes f8/f4 arithmetic in f32, ``arith.extf``/``arith.truncf`` between those
types and f32 remain, and LLVM has no such types (translation then fails on
``builtin.unrealized_conversion_cast``). ``arith-expand`` only expands bf16,
f8E8M0FNU and f4E2M1FN, and not with ml_dtypes' special-value conventions.
Run it right after ``arith-emulate-unsupported-floats`` (the memrefs are
already LLVM, so every small float arrives as ``iN`` storage bits through an
unrealized cast).

Conversions match ml_dtypes' non-saturating ``astype`` bit for bit: round to
nearest even (ties up for f8E8M0FNU, as in ml_dtypes), overflow and inf to
inf where the type has one, else to NaN; f4 and f6 types, which have neither,
saturate, and take NaN to -0 (flipped by the sign), as ml_dtypes does. NaNs
widen to ml_dtypes' canonical quiet NaN. Like ml_dtypes, f64 goes through f32
(f16 and bf16 do so exactly). Constants, selects and bitcasts of these types
become integer ops, and math ops on them compute in f32 and round once.

  %1 = builtin.unrealized_conversion_cast %0 : i8 to f8E4M3FN
  %2 = arith.extf %1 : f8E4M3FN to f32
  %3 = arith.truncf %2 : f32 to f8E4M3FN
  %4 = builtin.unrealized_conversion_cast %3 : f8E4M3FN to i8
  ==>
  %s = arith.extui %0 : i8 to i32            // unpack sign, exponent, mantissa
  ...
  %2 = arith.bitcast %bits : i32 to f32
  %x = arith.bitcast %2 : f32 to i32         // round to nearest even, pack
  ...
  %4 = arith.trunci %r : i32 to i8
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.dtypes import EMULATED_FLOATS
from shlo.ir_utils import create_value, defining_op, ops_named
from shlo.pass_framework import Pass

CAST = "builtin.unrealized_conversion_cast"

# arith.cmpi predicates.
EQ, NE, UGT = 0, 1, 8

F32_SIGN = 0x80000000
F32_INF = 0x7F800000
F32_QNAN = 0x7FC00000
F32_MANTISSA = 23
F32_BIAS = 127


@dataclass(frozen=True)
class Format:
    """A small float's layout and its special-value conventions (as in ml_dtypes).

    ``kind``: "ieee" (inf and NaNs at the top exponent), "fn" (no inf, NaN is
    all ones), "fnuz" (no inf, no -0, NaN is 0x80), "finite" (no inf, no NaN)
    or "e8m0" (unsigned powers of two, no zero, NaN is 0xff).
    """

    width: int
    mantissa: int
    bias: int
    kind: str

    @property
    def signed(self) -> bool:
        return self.kind != "e8m0"

    @property
    def exponent(self) -> int:
        return self.width - self.mantissa - (1 if self.signed else 0)

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1) if self.signed else 0

    @property
    def inf(self) -> int:
        return ((1 << self.exponent) - 1) << self.mantissa

    @property
    def max_finite(self) -> int:
        """The largest finite magnitude's bits."""
        if self.kind == "ieee":
            return self.inf - 1
        if self.kind == "fn":
            return (1 << (self.width - 1)) - 2
        if self.kind == "e8m0":
            return 0xFE
        return (1 << (self.width - 1)) - 1

    @property
    def nan(self) -> int:
        """The magnitude bits a NaN converts to (before the sign is applied)."""
        if self.kind == "ieee":
            return self.inf | (1 << (self.mantissa - 1))
        if self.kind == "fn":
            return (1 << (self.width - 1)) - 1
        if self.kind in ("fnuz", "finite"):
            # ml_dtypes' "NaN" of f4E2M1FN is -0, flipped by the sign.
            return self.sign_bit
        return 0xFF

    @property
    def overflow(self) -> int:
        """What infinities and overflowing values convert to."""
        if self.kind == "ieee":
            return self.inf
        if self.kind == "finite":
            return self.max_finite
        return self.nan


FORMATS: dict[str, Format] = {
    "f4E2M1FN": Format(4, 1, 1, "finite"),
    "f6E2M3FN": Format(6, 3, 1, "finite"),
    "f6E3M2FN": Format(6, 2, 3, "finite"),
    "f8E3M4": Format(8, 4, 3, "ieee"),
    "f8E4M3": Format(8, 3, 7, "ieee"),
    "f8E4M3FN": Format(8, 3, 7, "fn"),
    "f8E4M3FNUZ": Format(8, 3, 8, "fnuz"),
    "f8E4M3B11FNUZ": Format(8, 3, 11, "fnuz"),
    "f8E5M2": Format(8, 2, 15, "ieee"),
    "f8E5M2FNUZ": Format(8, 2, 16, "fnuz"),
    "f8E8M0FNU": Format(8, 0, 127, "e8m0"),
}
# Every type the pipeline emulates in f32 must be expanded here.
assert set(EMULATED_FLOATS) <= set(FORMATS), set(EMULATED_FLOATS) - set(FORMATS)


def small_format(type_: ir.Type) -> Format | None:
    return FORMATS.get(str(type_))


class _Emitter:
    """Builds scalar arith ops at the current insertion point and location."""

    def __init__(self) -> None:
        self.i32 = ir.IntegerType.get_signless(32)
        self.i1 = ir.IntegerType.get_signless(1)
        self.f32 = ir.F32Type.get()

    def op(
        self, name: str, result: ir.Type, *operands: ir.Value, **attrs: ir.Attribute
    ) -> ir.Value:
        return create_value(name, operands, result, **attrs)

    def const(self, value: int, type_: ir.Type | None = None) -> ir.Value:
        type_ = type_ or self.i32
        return self.op("arith.constant", type_, value=ir.IntegerAttr.get(type_, value))

    def int_op(self, name: str, lhs: ir.Value, rhs: ir.Value | int) -> ir.Value:
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        return self.op(f"arith.{name}", lhs.type, lhs, rhs)

    def cmp(self, predicate: int, lhs: ir.Value, rhs: ir.Value | int) -> ir.Value:
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        i64 = ir.IntegerType.get_signless(64)
        return self.op(
            "arith.cmpi", self.i1, lhs, rhs, predicate=ir.IntegerAttr.get(i64, predicate)
        )

    def select(self, cond: ir.Value, yes: ir.Value | int, no: ir.Value | int) -> ir.Value:
        if isinstance(yes, int):
            yes = self.const(yes, no.type if isinstance(no, ir.Value) else None)
        if isinstance(no, int):
            no = self.const(no, yes.type)
        return self.op("arith.select", yes.type, cond, yes, no)

    def cast(self, name: str, value: ir.Value, type_: ir.Type) -> ir.Value:
        return self.op(name, type_, value)

    def round_shift(self, value: ir.Value, shift: ir.Value) -> ir.Value:
        """``value >> shift`` rounded to nearest, ties to even (``shift`` >= 1)."""
        half = self.int_op("shli", self.const(1), self.int_op("subi", shift, 1))
        half_minus_one = self.int_op("subi", half, 1)
        odd = self.int_op("andi", self.int_op("shrui", value, shift), 1)
        biased = self.int_op("addi", self.int_op("addi", value, half_minus_one), odd)
        return self.int_op("shrui", biased, shift)


def small_to_f32_bits(e: _Emitter, fmt: Format, bits: ir.Value) -> ir.Value:
    """The f32 bits (i32) of the small float whose storage bits are ``bits``; exact."""
    word = e.cast("arith.extui", bits, e.i32)
    magnitude = e.int_op("andi", word, (1 << (fmt.width - 1)) - 1) if fmt.signed else word
    exponent = e.int_op("shrui", magnitude, fmt.mantissa)
    fraction = e.int_op("andi", magnitude, (1 << fmt.mantissa) - 1)
    if fmt.kind == "e8m0":
        # 0x00 is 2^-127, an f32 subnormal; 0xff is NaN.
        normal = e.int_op("shli", exponent, F32_MANTISSA)
        result = e.select(e.cmp(EQ, exponent, 0), 1 << (F32_MANTISSA - 1), normal)
        return e.select(e.cmp(EQ, word, 0xFF), F32_QNAN, result)
    rebias = (F32_BIAS - fmt.bias) << F32_MANTISSA
    normal = e.int_op(
        "addi",
        e.int_op("shli", magnitude, F32_MANTISSA - fmt.mantissa),
        rebias,
    )
    # Subnormals (and zero): fraction * 2^(1 - bias - mantissa), exact in f32.
    scale = ir.FloatAttr.get(e.f32, 2.0 ** (1 - fmt.bias - fmt.mantissa))
    scaled = e.op(
        "arith.mulf",
        e.f32,
        e.cast("arith.uitofp", fraction, e.f32),
        e.op("arith.constant", e.f32, value=scale),
    )
    subnormal = e.cast("arith.bitcast", scaled, e.i32)
    result = e.select(e.cmp(EQ, exponent, 0), subnormal, normal)
    if fmt.kind == "ieee":
        top = e.cmp(EQ, exponent, (1 << fmt.exponent) - 1)
        special = e.select(e.cmp(EQ, fraction, 0), F32_INF, F32_QNAN)
        result = e.select(top, special, result)
    elif fmt.kind == "fn":
        result = e.select(e.cmp(EQ, magnitude, fmt.max_finite + 1), F32_QNAN, result)
    elif fmt.kind == "fnuz":
        # 0x80 is NaN; ml_dtypes widens it to a negative quiet NaN.
        result = e.select(e.cmp(EQ, word, fmt.sign_bit), F32_QNAN, result)
    sign = e.int_op("shli", e.int_op("shrui", word, fmt.width - 1), 31)
    return e.int_op("ori", result, sign)


def f32_bits_to_small(e: _Emitter, fmt: Format, word: ir.Value) -> ir.Value:
    """The storage bits (iN) of f32 bits ``word`` rounded to ``fmt`` as ml_dtypes does."""
    sign = e.int_op("shrui", word, 31)
    magnitude = e.int_op("andi", word, F32_SIGN - 1)
    exponent = e.int_op("shrui", magnitude, F32_MANTISSA)
    fraction = e.int_op("andi", magnitude, (1 << F32_MANTISSA) - 1)
    normal = e.cmp(NE, exponent, 0)
    # The mantissa with its implicit bit; f32 subnormals act as exponent 1.
    mantissa = e.select(normal, e.int_op("ori", fraction, 1 << F32_MANTISSA), fraction)
    exponent = e.select(normal, exponent, 1)
    # The target's biased exponent minus one; negative means a target subnormal.
    base = e.int_op("addi", exponent, fmt.bias - F32_BIAS - 1)
    denormal = e.int_op("maxsi", e.int_op("subi", e.const(0), base), 0)
    # A shift of mantissa + 2 already rounds everything to 0; keep shifts < 32.
    shift = e.int_op(
        "minsi",
        e.int_op("addi", denormal, F32_MANTISSA - fmt.mantissa),
        F32_MANTISSA + 2,
    )
    aligned = e.round_shift(mantissa, shift)
    # The implicit bit left in ``aligned`` adds the missing one to the exponent;
    # a rounding carry flows into it too.
    packed = e.int_op("addi", aligned, e.int_op("shli", e.int_op("maxsi", base, 0), fmt.mantissa))
    result = e.select(e.cmp(UGT, packed, fmt.max_finite), fmt.overflow, packed)
    if fmt.kind == "e8m0":
        result = e.select(e.cmp(NE, sign, 0), fmt.nan, result)
        result = e.select(e.cmp(EQ, magnitude, 0), fmt.nan, result)
    result = e.select(e.cmp(EQ, magnitude, F32_INF), fmt.overflow, result)
    result = e.select(e.cmp(UGT, magnitude, F32_INF), fmt.nan, result)
    if fmt.signed:
        signed = e.int_op("xori", result, e.int_op("shli", sign, fmt.width - 1))
        if fmt.kind == "fnuz":
            # No negative zero, and the single NaN keeps its bits.
            unsigned = e.cmp(EQ, e.int_op("andi", result, fmt.sign_bit - 1), 0)
            signed = e.select(unsigned, result, signed)
        result = signed
    return e.cast("arith.trunci", result, ir.IntegerType.get_signless(fmt.width))


class _Rewriter:
    """Replaces small-float values by their storage bits, op by op."""

    def __init__(self) -> None:
        self.e = _Emitter()

    def bits_of(self, value: ir.Value) -> ir.Value:
        """The iN storage bits of small-float ``value``, peeling an iN -> float cast."""
        fmt = small_format(value.type)
        assert fmt is not None
        storage = ir.IntegerType.get_signless(fmt.width)
        owner = defining_op(value)
        if (
            owner is not None
            and owner.name == CAST
            and len(owner.operands) == 1
            and owner.operands[0].type == storage
        ):
            return owner.operands[0]
        return self.e.op(CAST, storage, value)

    def as_float(self, bits: ir.Value, type_: ir.Type) -> ir.Value:
        return self.e.op(CAST, type_, bits)

    def to_f32_bits(self, value: ir.Value) -> ir.Value:
        e = self.e
        fmt = small_format(value.type)
        if fmt is not None:
            return small_to_f32_bits(e, fmt, self.bits_of(value))
        width = ir.FloatType(value.type).width
        if width > 32:
            value = e.cast("arith.truncf", value, e.f32)
        elif width < 32:
            value = e.cast("arith.extf", value, e.f32)
        return e.cast("arith.bitcast", value, e.i32)

    def from_f32_bits(self, word: ir.Value, type_: ir.Type) -> ir.Value:
        e = self.e
        fmt = small_format(type_)
        if fmt is not None:
            return self.as_float(f32_bits_to_small(e, fmt, word), type_)
        value = e.cast("arith.bitcast", word, e.f32)
        width = ir.FloatType(type_).width
        if width > 32:
            return e.cast("arith.extf", value, type_)
        if width < 32:
            return e.cast("arith.truncf", value, type_)
        return value

    def rewrite(self, op: ir.Operation) -> ir.Value | None:
        """The replacement of ``op``'s single result, or None to leave ``op`` alone."""
        e = self.e
        result_type = op.results[0].type
        if op.name in ("arith.extf", "arith.truncf"):
            operand = op.operands[0]
            if small_format(operand.type) is None and small_format(result_type) is None:
                return None
            return self.from_f32_bits(self.to_f32_bits(operand), result_type)
        fmt = small_format(result_type)
        if op.name == "arith.constant" and fmt is not None:
            return self.as_float(e.const(constant_bits(op), _storage(fmt)), result_type)
        if op.name == "arith.select" and fmt is not None:
            cond, yes, no = op.operands
            picked = e.op("arith.select", _storage(fmt), cond, self.bits_of(yes), self.bits_of(no))
            return self.as_float(picked, result_type)
        if op.name == "arith.bitcast":
            operand = op.operands[0]
            source = small_format(operand.type)
            if source is None and fmt is None:
                return None
            bits = self.bits_of(operand) if source is not None else operand
            return bits if fmt is None else self.as_float(bits, result_type)
        return None

    def widen(self, op: ir.Operation) -> None:
        """Recreate ``op`` on f32, extending small-float operands and truncating results."""
        e = self.e
        operands = [
            e.cast("arith.extf", v, e.f32) if small_format(v.type) else v for v in op.operands
        ]
        results = [e.f32 if small_format(r.type) else r.type for r in op.results]
        attributes = {name: op.attributes[name] for name in op.attributes}
        wide = ir.Operation.create(
            op.name, results=results, operands=operands, attributes=attributes
        )
        for old, new in zip(op.results, wide.results, strict=True):
            if small_format(old.type):
                new = e.cast("arith.truncf", new, old.type)
            old.replace_all_uses_with(new)
        op.erase()


def _storage(fmt: Format) -> ir.IntegerType:
    return ir.IntegerType.get_signless(fmt.width)


def constant_bits(op: ir.Operation) -> int:
    """The storage bits of a small-float arith.constant."""
    attr = ir.FloatAttr(op.attributes["value"])
    fmt = small_format(attr.type)
    assert fmt is not None
    text = str(attr)
    if text.startswith("0x"):  # non-finite values print as their bits
        return int(text.split()[0], 16)
    return encode_exact(fmt, attr.value)


def encode_exact(fmt: Format, value: float) -> int:
    """The bits of ``value``, which ``fmt`` represents exactly (the parser checked)."""
    sign = fmt.sign_bit if math.copysign(1.0, value) < 0 else 0
    if value == 0:
        return 0 if fmt.kind == "fnuz" else sign  # fnuz has no -0
    fraction, exponent = math.frexp(abs(value))  # abs(value) = fraction * 2**exponent
    biased = exponent - 1 + fmt.bias
    if biased >= 1 or fmt.kind == "e8m0":
        mantissa = int((fraction * 2 - 1) * (1 << fmt.mantissa))
        return sign | (biased << fmt.mantissa) | mantissa
    return sign | int(abs(value) / 2.0 ** (1 - fmt.bias - fmt.mantissa))


def _involves_small_float(op: ir.Operation) -> bool:
    return any(small_format(v.type) for v in [*op.operands, *op.results])


def fold_casts(module: ir.Operation) -> None:
    """Fold ``iN -> float -> iN`` cast pairs and erase dead small-float casts."""
    for op in ops_named(module, CAST):
        if len(op.operands) != 1 or len(op.results) != 1 or not _involves_small_float(op):
            continue
        source = defining_op(op.operands[0])
        if (
            source is not None
            and source.name == CAST
            and len(source.operands) == 1
            and source.operands[0].type == op.results[0].type
        ):
            op.results[0].replace_all_uses_with(source.operands[0])
    changed = True
    while changed:
        changed = False
        for op in ops_named(module, CAST):
            dead = all(not list(r.uses) for r in op.results)
            if dead and _involves_small_float(op):
                op.erase()
                changed = True


@dataclass(frozen=True)
class ExpandSmallFloatConversionsPass(Pass):
    """Turn f8 and f4 conversions, constants and selects into integer code on their bits."""

    argument: ClassVar[str] = "shlo-expand-small-float-conversions"

    def run(self, module: ir.Operation) -> None:
        rewriter = _Rewriter()
        # Math ops are not emulated upstream: compute them in f32 first, so that
        # their extf/truncf are expanded below.
        for op in ops_named(module):
            if op.name.startswith("math.") and _involves_small_float(op):
                with ir.InsertionPoint(op), op.location:
                    rewriter.widen(op)
        for op in ops_named(
            module, "arith.extf", "arith.truncf", "arith.constant", "arith.select", "arith.bitcast"
        ):
            if not _involves_small_float(op):
                continue
            with ir.InsertionPoint(op), op.location:
                replacement = rewriter.rewrite(op)
            if replacement is not None:
                op.results[0].replace_all_uses_with(replacement)
                op.erase()
        fold_casts(module)
