"""shlo-approximate-math: compute f32 exp, expm1, log, log1p, tanh and erf with arith code.

Ours because upstream is missing: the wheel has no
``math-polynomial-approximation`` pass (upstream keeps it as a test pass) and
no transform pattern for it, so ``convert-math-to-libm`` turns a
``math.exp`` on ``vector<16xf32>`` into 16 calls to ``expf``. This pass
replaces each such op, on scalars and on vectors of any shape, by branch-free
code (``math.fma``, ``arith.select``, integer work on the exponent bits) that
LLVM vectorizes. The methods are the classic ones: Cody-Waite reduction by
ln(2) and ``exp(r) = 1 + r + r^2 P(r)`` (for expm1 with the leading sum
kept exact); ``log(1 + f) = 2 atanh(f / (2 + f))`` on a mantissa in
[sqrt(1/2), sqrt(2)) (log, log1p with the rounding error of 1 + x added
back); for tanh ``expm1(2x) / (expm1(2x) + 2)`` on one path; for erf an
odd polynomial below 1 and ``1 - exp(-x^2) g(x)`` above. The polynomials
are our own least-squares fits. Special values are exact (NaN, +-inf, +-0
with its sign, overflow to inf, denormal results of exp rounded once, log
of denormals). Over all f32 inputs, exp, expm1, log and log1p are within
1 ULP of the correctly rounded result like the C library, erf within 1.1
and tanh within 2.5 (the C library's tanhf: 2.2; XLA's: 4.6), see
docs/cpu.md and ``tools/measure_ulp.py``; so ``shlo-precise-libm-calls``
is not needed for f32 after it. f16 and bf16
compute in f32 and round once; f64 keeps its C library calls.

exp of a vector of 16k lanes on an AVX-512 host scales exp(r) by 2^n with
vscalefps (``x86.avx512.mask.scalef``), which rounds subnormal results once
and overflows to inf as the general code's two factors do: one path, the
same bits. On other hosts, exp of a vector of 16 or more lanes first
reduces it and tests whether every lane's n lies in [-125, 127] (x in about
[-86.9, 88.3]), where the result is a normal number, and then computes 2^n
+ 2^n expm1(r) in one FMA, without the clamp or the scaling by 2^n in two
factors (same bits, about 10 fewer vector ops: softmax 22% faster); a
vector holding NaN, an infinity or an extreme value takes the general code.

  %0 = math.exp %x : vector<16xf32>
  ==>
  %t = math.fma %x, %log2e, %magic : vector<16xf32>     // n = round(x / ln 2)
  ...
  %q = arith.addf %p, %one : vector<16xf32>            // exp(r), |r| <= ln(2) / 2
  ...
  %0 = arith.mulf %scaled, %scale : vector<16xf32>     // q * 2^n, rounded once
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, scf
from shlo.disk_cache import host_has_avx512
from shlo.ir_utils import create_value, i64_attr, ops_named
from shlo.pass_framework import Pass

# arith.cmpf predicates.
OEQ, OGT, OGE, OLT, OLE, ULT = 1, 2, 3, 4, 5, 11
# arith.cmpi predicates.
EQ, SGT, SGE, ULE = 0, 4, 5, 7

LN2_HI = 0.693359375  # 9 significant bits: n * LN2_HI is exact for |n| < 2^15
LN2_LO = -2.12194440e-4  # ln(2) - LN2_HI
# fma(x, 1/ln 2, MAGIC) - MAGIC rounds x / ln 2 to the nearest integer (|x| < 2^22).
MAGIC = 12582912.0  # 1.5 * 2^23
MAGIC_BITS = 0x4B400000
FLT_MIN = 2.0**-126

# expm1(r) = r + r^2 EXPM1(r) on [-ln(2)/2, ln(2)/2] (relative error 5e-10).
EXPM1 = (
    0.5,
    0.1666666716337204,
    0.04166647046804428,
    0.008333193138241768,
    0.0013934571761637926,
    0.0001995737402467057,
)
# log((1 + s) / (1 - s)) = 2 s + s z LOG(z), z = s^2 <= (3 - 2 sqrt(2))^2 (3e-11).
LOG = (0.6666666269302368, 0.4000084698200226, 0.2851046919822693, 0.2402092069387436)
# erf(x) = x + x ERF(x^2) on [-1, 1] (relative error 1.5e-9).
ERF = (
    0.12837916612625122,
    -0.3761262595653534,
    0.1128358244895935,
    -0.026853643357753754,
    0.005187962669879198,
    -0.0008006793214008212,
    7.842288323445246e-05,
)
# erfc(x) = exp(-x^2) ERFC(x - 2.5) on [1, 4] (error 3e-9 relative to erf).
ERFC = (
    0.21080760657787323,
    -0.0743408128619194,
    0.024921290576457977,
    -0.008125154301524162,
    0.0022893918212503195,
    -0.0006995081203058362,
    0.0005064092692919075,
    0.0002089004119625315,
    0.0001041187351802364,
)


class F32Builder:
    """Builds f32 code at the current insertion point, on scalars or on vectors of one shape."""

    def __init__(self, shape: Sequence[int] | None) -> None:
        def shaped(element: ir.Type) -> ir.Type:
            return element if shape is None else ir.VectorType.get(list(shape), element)

        self.f32 = shaped(ir.F32Type.get())
        self.i32 = shaped(ir.IntegerType.get_signless(32))
        self.i1 = shaped(ir.IntegerType.get_signless(1))

    def _const(self, type_: ir.Type, scalar: ir.Attribute) -> ir.Value:
        value = scalar if type_ == scalar.type else ir.DenseElementsAttr.get_splat(type_, scalar)
        return create_value("arith.constant", [], type_, value=value)

    def f(self, value: float) -> ir.Value:
        return self._const(self.f32, ir.FloatAttr.get(ir.F32Type.get(), value))

    def i(self, value: int) -> ir.Value:
        return self._const(self.i32, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value))

    def _float(self, value: ir.Value | float) -> ir.Value:
        return self.f(value) if isinstance(value, (int, float)) else value

    def _int(self, value: ir.Value | int) -> ir.Value:
        return self.i(value) if isinstance(value, int) else value

    def arith(self, name: str, *operands: ir.Value | float) -> ir.Value:
        values = [self._float(operand) for operand in operands]
        return create_value(name, values, values[0].type)

    def add(self, a: ir.Value | float, b: ir.Value | float) -> ir.Value:
        return self.arith("arith.addf", a, b)

    def sub(self, a: ir.Value | float, b: ir.Value | float) -> ir.Value:
        return self.arith("arith.subf", a, b)

    def mul(self, a: ir.Value | float, b: ir.Value | float) -> ir.Value:
        return self.arith("arith.mulf", a, b)

    def div(self, a: ir.Value | float, b: ir.Value | float) -> ir.Value:
        return self.arith("arith.divf", a, b)

    def fma(self, a: ir.Value | float, b: ir.Value | float, c: ir.Value | float) -> ir.Value:
        """a * b + c, rounded once."""
        return self.arith("math.fma", a, b, c)

    def poly(self, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
        """sum(c_i x^i) by Horner's rule."""
        result = self.f(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            result = self.fma(result, x, c)
        return result

    def cmpf(self, predicate: int, a: ir.Value | float, b: ir.Value | float) -> ir.Value:
        i64 = ir.IntegerType.get_signless(64)
        predicate_attr = ir.IntegerAttr.get(i64, predicate)
        lhs, rhs = self._float(a), self._float(b)
        return create_value("arith.cmpf", [lhs, rhs], self.i1, predicate=predicate_attr)

    def cmpi(self, predicate: int, a: ir.Value, b: ir.Value | int) -> ir.Value:
        i64 = ir.IntegerType.get_signless(64)
        predicate_attr = ir.IntegerAttr.get(i64, predicate)
        return create_value("arith.cmpi", [a, self._int(b)], self.i1, predicate=predicate_attr)

    def select(self, cond: ir.Value, yes: ir.Value | float, no: ir.Value | float) -> ir.Value:
        yes, no = self._float(yes), self._float(no)
        return create_value("arith.select", [cond, yes, no], yes.type)

    def at_most(self, x: ir.Value, high: float) -> ir.Value:
        """min(x, high); NaN stays NaN (compares with NaN are false)."""
        return self.select(self.cmpf(OGT, x, high), high, x)

    def clamp(self, x: ir.Value, low: float, high: float) -> ir.Value:
        """x limited to [low, high]; NaN stays NaN."""
        x = self.at_most(x, high)
        return self.select(self.cmpf(OLT, x, low), low, x)

    def unary(self, name: str, x: ir.Value) -> ir.Value:
        return create_value(name, [x], x.type)

    def copysign(self, magnitude: ir.Value, sign: ir.Value) -> ir.Value:
        return create_value("math.copysign", [magnitude, sign], magnitude.type)

    def bits(self, x: ir.Value) -> ir.Value:
        return create_value("arith.bitcast", [x], self.i32)

    def from_bits(self, x: ir.Value) -> ir.Value:
        return create_value("arith.bitcast", [x], self.f32)

    def iop(self, name: str, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return create_value(f"arith.{name}", [a, self._int(b)], self.i32)

    def to_float(self, n: ir.Value) -> ir.Value:
        return create_value("arith.sitofp", [n], self.f32)

    def reduce_lanes(self, kind: str, mask: ir.Value) -> ir.Value:
        """One i1: the ``kind`` (``and``, ``or``) of every lane of the i1 vector ``mask``."""
        i1 = ir.IntegerType.get_signless(1)
        shape = ir.VectorType(mask.type).shape
        if len(shape) != 1:  # vector.reduction takes 1-D vectors
            flat_type = ir.VectorType.get([math.prod(shape)], i1)
            mask = create_value("vector.shape_cast", [mask], flat_type)
        return create_value(
            "vector.reduction", [mask], i1, kind=ir.Attribute.parse(f"#vector.kind<{kind}>")
        )

    def pow2(self, n: ir.Value) -> ir.Value:
        """2^n for an integer n in [-126, 127], from its exponent bits."""
        return self.from_bits(self.iop("shli", self.iop("addi", n, 127), 23))


@dataclass
class _Reduced:
    """x = n ln(2) + r with |r| <= ln(2) / 2, r rounded; r = r_hi - n LN2_LO before rounding."""

    n: ir.Value  # i32
    minus_n: ir.Value  # -n as a float
    r_hi: ir.Value  # x - n LN2_HI, exact
    r: ir.Value
    # The bits of the rounding's sum MAGIC + bias + n: its low mantissa bits
    # hold n + bias, so shifted left by 23 they are the float 2^(n + bias - 127).
    biased_bits: ir.Value

    def power_of_two(self, b: F32Builder) -> ir.Value:
        """2^(n + bias - 127), for n + bias in [1, 254]: one shift (MAGIC's own bits shift out)."""
        return b.from_bits(b.iop("shli", self.biased_bits, 23))


def _unnegated(x: ir.Value, factor: float) -> tuple[ir.Value, float]:
    """(y, -factor) for x = -y, else (x, factor): the same product, one op fewer.

    exp(-y) is common (a Gaussian's, XLA's logistic); the FMAs that read x
    after this one take the negation into their own sign (vfmsub).
    """
    owner = x.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "arith.negf":
        return owner.operation.operands[0], -factor
    return x, factor


def _reduce(
    b: F32Builder, x: ir.Value, scale: float = 1.0, short: bool = False, bias: int = 0
) -> _Reduced:
    """Cody-Waite reduction of ``scale`` x by ln(2), for |scale x| < 2^22.

    ``scale``, a power of 2, is folded into the constants: r, r_hi come out
    divided by it, with the same bits as reducing ``scale`` x then dividing.
    ``short``: for n up to about 24, one FMA by ln(2) rounded to f32 (r
    within n 1e-9 of exact); r_hi is then r. ``bias`` is added to the
    rounding's magic number, for ``_Reduced.power_of_two``.
    """
    magic = MAGIC + bias
    t = b.fma(*_unnegated(x, scale / math.log(2)), magic)
    biased_bits = b.bits(t)
    n = b.iop("subi", biased_bits, MAGIC_BITS + bias)
    minus_n = b.unary("arith.negf", b.sub(t, magic))
    if short:
        r = b.fma(minus_n, math.log(2) / scale, x)
        return _Reduced(n, minus_n, r, r, biased_bits)
    r_hi = b.fma(minus_n, LN2_HI / scale, x)
    return _Reduced(n, minus_n, r_hi, b.fma(minus_n, LN2_LO / scale, r_hi), biased_bits)


def _sum_exactly_then_round(
    b: F32Builder, c: ir.Value, reduced: _Reduced, tail: ir.Value | float
) -> ir.Value:
    """c + r + r^2 EXPM1(r) + tail, rounded once in effect.

    c + r_hi is split exactly into head and error (Fast2Sum: |c| >= |r_hi| or
    c = 0); the small terms (that error, r_lo = r - r_hi, tail and the
    polynomial) are added to the head last.
    """
    head = b.add(c, reduced.r_hi)
    r_lo = b.mul(reduced.minus_n, LN2_LO)
    small = b.add(b.add(b.sub(c, head), reduced.r_hi), b.add(r_lo, tail))
    r = reduced.r
    return b.add(head, b.fma(b.mul(r, r), b.poly(r, EXPM1), small))


def _exp_of_reduced(b: F32Builder, reduced: _Reduced) -> ir.Value:
    """exp(r) = 1 + (r + r^2 EXPM1(r)), rounded at the last add.

    Within 0.98 ULP. Keeping 1 + r_hi exact as expm1 does
    (``_sum_exactly_then_round``) gives 0.77 for six more vector ops, which
    made softmax 5-8% slower; XLA's exp is within 1.003.
    """
    r = reduced.r
    return b.add(b.fma(b.mul(r, r), b.poly(r, EXPM1), r), 1.0)


def approximate_exp(b: F32Builder, x: ir.Value) -> ir.Value:
    # Below -104 exp rounds to 0, above 89 to inf; the clamp keeps n in [-150, 129].
    reduced = _reduce(b, b.clamp(x, -104.0, 89.0))
    n = reduced.n
    q = _exp_of_reduced(b, reduced)
    # 2^n in two factors, each a normal number: q * 2^half is exact and the
    # last product rounds once, into the denormals or to inf as it must.
    half = b.iop("shrsi", n, 1)
    return b.mul(b.mul(q, b.pow2(half)), b.pow2(b.iop("subi", n, half)))


def _exp_of_normal(b: F32Builder, reduced: _Reduced) -> ir.Value:
    """exp(x) = 2^n + 2^n expm1(r) in one FMA, for n in [-125, 127]: the same bits as exp.

    ``reduced`` has bias 127, so 2^n is one shift.

    Its result is normal or overflows, so scaling by 2^n is exact and the
    FMA rounds as ``approximate_exp`` does, without the clamp, its add of 1
    or its second factor.
    """
    r = reduced.r
    scale = reduced.power_of_two(b)
    return b.fma(b.fma(b.mul(r, r), b.poly(r, EXPM1), r), scale, scale)


def _exp_of_moderate(b: F32Builder, x: ir.Value) -> ir.Value:
    """exp(x) for x in [-86.9, 88.3], where n lies in [-125, 127]."""
    return _exp_of_normal(b, _reduce(b, x, bias=127))


# A vector of at least this many lanes whose inputs all reduce to an n in
# [-125, 127] takes _exp_of_normal: the test costs 3 vector ops after the
# reduction both paths need, and saves about 10 (softmax: 22%).
FAST_PATH_LANES = 16
NORMAL_N_LOW, NORMAL_N_HIGH = -125, 127


def approximate_exp_of_vector(b: F32Builder, x: ir.Value) -> ir.Value:
    """exp(x) for a vector, with a shorter path when every lane has n in [-125, 127].

    That is x in about [-86.9, 88.3], where softmax, attention and most
    programs exp (x - max, -y^2). NaN and +-inf give an n far outside (their
    exponent bits are all ones) and take the general path with the extremes.
    The test is one unsigned compare on n, which the reduction computes anyway.
    """
    reduced = _reduce(b, x, bias=127)
    offset = b.iop("subi", reduced.n, NORMAL_N_LOW)
    in_range = b.cmpi(ULE, offset, NORMAL_N_HIGH - NORMAL_N_LOW)
    branch = scf.IfOp(b.reduce_lanes("and", in_range), [x.type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([_exp_of_normal(b, reduced)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([approximate_exp(b, x)])
    return branch.results[0]


# vscalefps (AVX-512F) computes q 2^floor(n) rounded once, infinities and
# subnormal results included, on the 16 f32 lanes of a zmm register.
SCALEF_LANES = 16
_CURRENT_ROUNDING = 4  # _MM_FROUND_CUR_DIRECTION


def _integer(value: int, width: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(width), value).result


def _index_list(*values: int) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([i64_attr(value) for value in values])


def _times_power_of_two(q: ir.Value, n: ir.Value) -> ir.Value:
    """q 2^n rounded once, for whole floats n, by vscalefps on each 16 lanes."""
    type_ = ir.VectorType(q.type)
    flat_type = ir.VectorType.get([math.prod(type_.shape)], type_.element_type)
    piece_type = ir.VectorType.get([SCALEF_LANES], type_.element_type)
    q, n = (create_value("vector.shape_cast", [v], flat_type) for v in (q, n))
    every_lane, rounding = _integer(-1, 16), _integer(_CURRENT_ROUNDING, 32)
    result = q
    for start in range(0, flat_type.shape[0], SCALEF_LANES):
        q_piece, n_piece = (
            create_value(
                "vector.extract_strided_slice",
                [v],
                piece_type,
                offsets=_index_list(start),
                sizes=_index_list(SCALEF_LANES),
                strides=_index_list(1),
            )
            for v in (q, n)
        )
        # The operands in the intrinsic's order: the values, the exponents, and
        # what masked-off lanes keep.
        scaled = create_value(
            "x86.avx512.mask.scalef",
            [q_piece, n_piece, q_piece, every_lane, rounding],
            piece_type,
        )
        result = create_value(
            "vector.insert_strided_slice",
            [scaled, result],
            flat_type,
            offsets=_index_list(start),
            strides=_index_list(1),
        )
    return create_value("vector.shape_cast", [result], type_)


class Scalef(enum.StrEnum):
    """Where exp of vectors scales by 2^n with vscalefps."""

    HOST = "host"  # where the host, the code's target, has AVX-512
    ALWAYS = "always"
    NEVER = "never"


def scalef_applies(shape: Sequence[int], where: Scalef = Scalef.HOST) -> bool:
    """Whether exp of a vector of ``shape`` takes ``approximate_exp_by_scalef``."""
    wanted = where == Scalef.ALWAYS or (where == Scalef.HOST and host_has_avx512())
    return wanted and math.prod(shape) % SCALEF_LANES == 0


def approximate_exp_by_scalef(b: F32Builder, x: ir.Value) -> ir.Value:
    """exp(x) on AVX-512 for vectors of 16k lanes: one path, ``approximate_exp``'s bits.

    x is clamped and reduced as in ``approximate_exp``, and q = exp(r) is
    scaled by 2^n with vscalefps: exactly for normal results, with one
    rounding for subnormal ones and overflow to inf, as the general path's
    two factors do. That replaces the test of the lanes' n and the branch
    between two paths: about as many ops as the short path and its test
    (the clamp and an add instead of integer work), and LLVM compiles exp
    once instead of twice (the bench's elementwise chain: 25-32 instead
    of 31-40 ms of code generation, in three alternations).
    """
    y, sign = _unnegated(x, 1.0)
    if sign < 0:
        # exp(-y): clamped as y, so that the reduction reads y (_unnegated).
        clamped = b.unary("arith.negf", b.clamp(y, -89.0, 104.0))
    else:
        clamped = b.clamp(x, -104.0, 89.0)
    reduced = _reduce(b, clamped)
    q = _exp_of_reduced(b, reduced)
    return _times_power_of_two(q, b.unary("arith.negf", reduced.minus_n))


def approximate_expm1(b: F32Builder, x: ir.Value) -> ir.Value:
    # Below -30 expm1 rounds to -1; at 89 n = 128 and the result is inf.
    x = b.clamp(x, -30.0, 89.0)
    reduced = _reduce(b, x)
    n = reduced.n
    # expm1(x) = 2^n q with q = (1 - 2^-n) + expm1(r). c = 1 - 2^-n is exact
    # for |n| <= 24; its rounding error is kept for the others.
    power = b.pow2(b.iop("subi", b.i(0), b.select(b.cmpi(SGT, n, 100), b.i(100), n)))
    c = b.sub(1.0, power)
    c_error = b.select(
        b.cmpi(SGE, n, 0),
        b.sub(b.unary("arith.negf", power), b.sub(c, 1.0)),
        b.sub(1.0, b.add(c, power)),
    )
    q = _sum_exactly_then_round(b, c, reduced, c_error)
    # 2^n q as 2 (2^(n - 1) q): 2^128 is not an f32.
    scaled = b.mul(b.mul(q, b.pow2(b.iop("subi", n, 1))), 2.0)
    result = b.select(b.cmpi(EQ, n, 0), q, scaled)  # q may be a denormal
    # +-0 keep their sign (q is +0 for -0).
    return b.select(b.cmpf(OEQ, x, 0.0), x, result)


def _log_parts(b: F32Builder, u: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(e, f, tail) with log(u) = e ln(2) + f + tail for a finite u > 0, e a float."""
    # Denormals are scaled into the normal range first.
    denormal = b.cmpf(OLT, u, FLT_MIN)
    u = b.select(denormal, b.mul(u, 2.0**23), u)
    # u = 2^e m with m in [sqrt(1/2), sqrt(2)): the exponent field of
    # bits - bits(sqrt(1/2)) is e, its mantissa field plus bits(sqrt(1/2)) is m.
    offset = 0x3F3504F3  # bits of sqrt(1/2)
    shifted = b.iop("subi", b.bits(u), offset)
    e = b.iop("shrsi", shifted, 23)
    m = b.from_bits(b.iop("addi", b.iop("andi", shifted, 0x7FFFFF), offset))
    e_float = b.sub(b.to_float(e), b.select(denormal, 23.0, 0.0))
    f = b.sub(m, 1.0)  # exact
    # log(1 + f) = f - f^2 / 2 + s (f^2 / 2 + R) with s = f / (2 + f), R = z LOG(z), z = s^2.
    s = b.div(f, b.add(f, 2.0))
    z = b.mul(s, s)
    half_f2 = b.mul(b.mul(f, f), 0.5)
    r = b.mul(z, b.poly(z, LOG))
    tail = b.sub(b.fma(s, b.add(half_f2, r), b.mul(e_float, LN2_LO)), half_f2)
    return e_float, f, tail


def _log_specials(b: F32Builder, u: ir.Value, result: ir.Value) -> ir.Value:
    result = b.select(b.cmpf(OEQ, u, math.inf), u, result)
    result = b.select(b.cmpf(OEQ, u, 0.0), -math.inf, result)
    return b.select(b.cmpf(ULT, u, 0.0), math.nan, result)  # also NaN


def approximate_log(b: F32Builder, x: ir.Value) -> ir.Value:
    e, f, tail = _log_parts(b, x)
    return _log_specials(b, x, b.fma(e, LN2_HI, b.add(f, tail)))


def approximate_log1p(b: F32Builder, x: ir.Value) -> ir.Value:
    u = b.add(x, 1.0)
    e, f, tail = _log_parts(b, u)
    # log(1 + x) = log(u) + c with c = (x - (u - 1)) / u, the rounding error
    # of 1 + x (u - 1 is exact); meaningless once u is huge or inf.
    c = b.div(b.sub(x, b.sub(u, 1.0)), u)
    c = b.select(b.cmpf(OLT, u, 2.0**24), c, 0.0)
    result = _log_specials(b, u, b.fma(e, LN2_HI, b.add(f, b.add(tail, c))))
    # log1p(x) rounds to x below 2^-24, which also keeps the sign of +-0.
    tiny = b.cmpf(OLT, b.unary("math.absf", x), 2.0**-24)
    return b.select(tiny, x, result)


# The least f32 whose tanh rounds to 1; from 8.6 up to it, tanh rounds to 1 - 2^-24.
TANH_IS_ONE = 9.010914


def approximate_tanh(b: F32Builder, x: ir.Value) -> ir.Value:
    """tanh(a) = expm1(2a) / (expm1(2a) + 2) for a = |x|: one path for every input.

    With 2a = n ln(2) + r, expm1(2a) = 2^n expm1(r) + (2^n - 1) in one FMA
    (2^n - 1 is exact: a is limited to 8.6, n to 24, where adding 2 is exact
    too). For n = 0 that is the expm1 polynomial itself, so small inputs keep
    their relative accuracy without an odd polynomial of their own. Within
    2.4 ULP, against 1.3 for the two paths and a select used before, for a
    quarter less work (XLA's rational function: 4.6 ULP).

    The reduction works on a itself, r / 2 = a - n ln(2) / 2, and the
    polynomial's coefficients carry the powers of 2 (exact scalings, so the
    same bits as reducing 2a) so that no op doubles a. With n at most 24 it
    is one FMA by ln(2) in f32: the same 2.396 ULP at most, and the same
    3.90% not correctly rounded, as Cody-Waite's two (measured over every
    97th f32).
    """
    a = b.unary("math.absf", x)
    reduced = _reduce(b, b.at_most(a, 8.6), scale=2.0, short=True, bias=128)
    half_r = reduced.r
    # expm1(r) = 2 (r/2 + (r/2)^2 2 EXPM1(r)), the polynomial in r / 2.
    doubled = [c * 2.0 ** (i + 1) for i, c in enumerate(EXPM1)]
    half_expm1 = b.fma(b.mul(half_r, half_r), b.poly(half_r, doubled), half_r)
    twice_scale = reduced.power_of_two(b)  # 2^(n + 1)
    expm1 = b.fma(twice_scale, half_expm1, b.fma(twice_scale, 0.5, -1.0))
    quotient = b.div(expm1, b.add(expm1, 2.0))
    return b.copysign(b.select(b.cmpf(OGE, a, TANH_IS_ONE), 1.0, quotient), x)


def approximate_erf(b: F32Builder, x: ir.Value) -> ir.Value:
    a = b.unary("math.absf", x)
    small = b.fma(x, b.poly(b.mul(x, x), ERF), x)
    # Above 4, 1 - erfc(x) rounds to 1.
    clamped = b.at_most(a, 4.0)
    erfc = b.mul(
        _exp_of_moderate(b, b.mul(b.unary("arith.negf", clamped), clamped)),
        b.poly(b.sub(clamped, 2.5), ERFC),
    )
    large = b.copysign(b.sub(1.0, erfc), x)
    return b.select(b.cmpf(OLT, a, 1.0), small, large)


APPROXIMATIONS: dict[str, Callable[[F32Builder, ir.Value], ir.Value]] = {
    "math.exp": approximate_exp,
    "math.expm1": approximate_expm1,
    "math.log": approximate_log,
    "math.log1p": approximate_log1p,
    "math.tanh": approximate_tanh,
    "math.erf": approximate_erf,
}
# Computed in f32 and rounded once.
WIDENED = ("f16", "bf16")


def _shape(type_: ir.Type) -> tuple[list[int] | None, ir.Type] | None:
    """(vector shape or None for a scalar, element type) of a fixed-size vector or scalar."""
    if isinstance(type_, ir.VectorType):
        if any(type_.scalable_dims):
            return None
        return list(type_.shape), type_.element_type
    if isinstance(type_, ir.FloatType):
        return None, type_
    return None


@dataclass(frozen=True)
class ApproximateMathPass(Pass):
    """Replace f32 (and f16, bf16) exp, expm1, log, log1p, tanh and erf by arith code."""

    argument: ClassVar[str] = "shlo-approximate-math"
    # Where exp of vectors scales by 2^n with vscalefps (tests pick one).
    scalef: Scalef = Scalef.HOST

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, *APPROXIMATIONS):
            type_ = op.results[0].type
            parts = _shape(type_)
            if parts is None:  # tensors, scalable vectors: left to other lowerings
                continue
            shape, element = parts
            if str(element) != "f32" and str(element) not in WIDENED:
                continue  # f64 keeps the C library
            with op.location, ir.InsertionPoint(op):
                b = F32Builder(shape)
                x = op.operands[0]
                if x.type != b.f32:
                    x = create_value("arith.extf", [x], b.f32)
                approximate = APPROXIMATIONS[op.name]
                if op.name == "math.exp" and shape and scalef_applies(shape, self.scalef):
                    approximate = approximate_exp_by_scalef
                elif op.name == "math.exp" and shape and math.prod(shape) >= FAST_PATH_LANES:
                    approximate = approximate_exp_of_vector
                result = approximate(b, x)
                if result.type != type_:
                    result = create_value("arith.truncf", [result], type_)
            op.results[0].replace_all_uses_with(result)
            op.erase()
