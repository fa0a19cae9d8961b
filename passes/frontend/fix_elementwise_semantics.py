"""shlo-fix-elementwise-semantics: rewrite elementwise ops that upstream lowers wrongly into correct StableHLO.

Ours because upstream is wrong: ``stablehlo-legalize-to-linalg`` lowers these
ops with the wrong semantics or too little precision, so they are rewritten,
before it runs, into StableHLO that it lowers correctly:

- ``add`` on ``i1`` becomes ``or`` (the spec's logical OR; upstream adds
  modulo 2, an XOR).
- ``maximum``/``minimum`` on complex numbers compare lexicographically, real
  parts first, then imaginary parts, as the reference interpreter does.
- ``reduce_precision`` on f16, bf16, f32 and f64 becomes the reference
  interpreter's integer algorithm (round to nearest even, overflow to
  infinity, underflow to zero). NaN stays the operand, or becomes +infinity
  when no mantissa bit is kept.
- ``log_plus_one`` and ``exponential_minus_one`` on floats narrower than f32
  are computed in f32 with the classic correction formulas,
  ``log1p(x) = log(u) * x / (u - 1)`` and ``expm1(x) = (u - 1) * x / log(u)``,
  then rounded back (this matches XLA's f16 results; f32 and f64 call the C
  library through ``shlo-precise-libm-calls``); upstream's ``log(1 + x)`` and
  ``exp(x) - 1`` lose all precision near 0. Complex ``log_plus_one`` takes its
  real part from that log1p in f64, ``log|1 + z| = log1p(x * (2 + x) + y * y) / 2``.

  %0 = stablehlo.add %a, %b : tensor<4xi1>
  %1 = stablehlo.maximum %c, %d : tensor<4xcomplex<f32>>
  ==>
  %0 = stablehlo.or %a, %b : tensor<4xi1>
  %re_c = stablehlo.real %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  ...
  %eq = stablehlo.compare EQ, %re_c, %re_d, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %gt_im = stablehlo.compare GT, %im_c, %im_d, FLOAT : ...
  %gt_re = stablehlo.compare GT, %re_c, %re_d, FLOAT : ...
  %take_c = stablehlo.select %eq, %gt_im, %gt_re : tensor<4xi1>, tensor<4xi1>
  %1 = stablehlo.select %take_c, %c, %d : tensor<4xi1>, tensor<4xcomplex<f32>>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_templates import replace_with_template
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass
from shlo.template_builder import TemplateBuilder

# Explicit mantissa bits of the floats whose bits reduce_precision rewrites.
MANTISSA_BITS = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}
# +infinity of those floats, as the hex literals MLIR parses.
INFINITY = {"f16": "0x7C00", "bf16": "0x7F80", "f32": "0x7F800000", "f64": "0x7FF0000000000000"}


def _with_element(type_: ir.RankedTensorType, element: str) -> str:
    return "tensor<" + "".join(f"{size}x" for size in type_.shape) + f"{element}>"


class _Body:
    """StableHLO ops of one shape appended to a TemplateBuilder."""

    def __init__(self, type_: ir.RankedTensorType) -> None:
        self.b = TemplateBuilder()
        self.type = type_

    def typed(self, element: str) -> str:
        return _with_element(self.type, element)

    def argument(self, element: str) -> str:
        return self.b.argument(self.typed(element))

    def element(self, value: str) -> str:
        text = self.b.type_of(value)
        inner = text[len("tensor<") : -1]
        return inner[len("".join(f"{size}x" for size in self.type.shape)) :]

    def op(
        self, name: str, operands: Sequence[str], element: str | None = None, props: str = ""
    ) -> str:
        element = element or self.element(operands[0])
        return self.b.op(f"stablehlo.{name}", operands, self.typed(element), props)

    def const(self, element: str, value: int | float | str) -> str:
        if isinstance(value, float):
            value = INFINITY[element] if value == math.inf else f"{value:.17e}"
        return self.b.constant(self.typed(element), f"dense<{value}>")

    def like(self, value: str, constant: int | float | str) -> str:
        return self.const(self.element(value), constant)

    def compare(self, direction: str, x: str, y: str, kind: str) -> str:
        return self.op(
            "compare",
            [x, y],
            "i1",
            f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
            f"compare_type = #stablehlo<comparison_type {kind}>",
        )

    def select(self, pred: str, x: str, y: str) -> str:
        return self.op("select", [pred, x, y], self.element(x))

    def convert(self, x: str, element: str) -> str:
        return x if self.element(x) == element else self.op("convert", [x], element)

    def replace(self, op: ir.Operation, result: str) -> None:
        replace_with_template(op, self.b.function([result]))


# --- add on i1 --------------------------------------------------------------------------


def fix_boolean_add(op: ir.Operation) -> None:
    replacement = ir.Operation.create(
        "stablehlo.or",
        results=[op.results[0].type],
        operands=list(op.operands),
        loc=op.location,
        ip=ir.InsertionPoint(op),
    )
    op.results[0].replace_all_uses_with(replacement.results[0])
    op.erase()


# --- maximum / minimum on complex --------------------------------------------------------


def fix_complex_extremum(op: ir.Operation) -> None:
    """Lexicographic (real, then imaginary) maximum or minimum, as the interpreter computes it."""
    type_ = ir.RankedTensorType(op.results[0].type)
    part = str(ir.ComplexType(type_.element_type).element_type)
    body = _Body(type_)
    lhs, rhs = body.argument(str(type_.element_type)), body.argument(str(type_.element_type))
    direction = "GT" if op.name == "stablehlo.maximum" else "LT"
    re_l, re_r = body.op("real", [lhs], part), body.op("real", [rhs], part)
    im_l, im_r = body.op("imag", [lhs], part), body.op("imag", [rhs], part)
    take_lhs = body.select(
        body.compare("EQ", re_l, re_r, "FLOAT"),
        body.compare(direction, im_l, im_r, "FLOAT"),
        body.compare(direction, re_l, re_r, "FLOAT"),
    )
    body.replace(op, body.select(take_lhs, lhs, rhs))


# --- reduce_precision --------------------------------------------------------------------


def fix_reduce_precision(op: ir.Operation) -> None:
    type_ = ir.RankedTensorType(op.results[0].type)
    element = str(type_.element_type)
    exponent_bits = ir.IntegerAttr(op.attributes["exponent_bits"]).value
    mantissa_bits = ir.IntegerAttr(op.attributes["mantissa_bits"]).value
    width = ir.FloatType(type_.element_type).width
    src_mantissa = MANTISSA_BITS[element]
    src_exponent = width - 1 - src_mantissa
    if mantissa_bits >= src_mantissa and exponent_bits >= src_exponent:
        op.results[0].replace_all_uses_with(op.operands[0])
        op.erase()
        return
    body = _Body(type_)
    operand = body.argument(element)
    bits_type = f"ui{width}"
    all_ones = (1 << width) - 1
    x = body.op("bitcast_convert", [operand], bits_type)
    if mantissa_bits < src_mantissa:
        # Round to nearest, ties to even: add half an ulp minus one, plus the last kept bit.
        shift = src_mantissa - mantissa_bits
        last_kept = body.op(
            "and", [body.op("shift_right_logical", [x, body.like(x, shift)]), body.like(x, 1)]
        )
        bias = body.op("add", [last_kept, body.like(x, (1 << (shift - 1)) - 1)])
        x = body.op("add", [x, bias])
        x = body.op("and", [x, body.like(x, all_ones ^ ((1 << shift) - 1))])
    if exponent_bits < src_exponent:
        exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
        bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = body.op("and", [x, body.like(x, exponent_mask)])
        overflows = body.compare(
            "GT", exponent, body.like(x, (bias + reduced_bias) << src_mantissa), "UNSIGNED"
        )
        underflows = body.compare(
            "LE", exponent, body.like(x, (bias - reduced_bias) << src_mantissa), "UNSIGNED"
        )
        signed_zero = body.op("and", [x, body.like(x, 1 << (width - 1))])
        signed_inf = body.op("or", [signed_zero, body.like(x, exponent_mask)])
        x = body.select(overflows, signed_inf, x)
        x = body.select(underflows, signed_zero, x)
    result = body.op("bitcast_convert", [x], element)
    is_nan = body.compare("NE", operand, operand, "FLOAT")
    nan_result = operand if mantissa_bits > 0 else body.like(operand, math.inf)
    body.replace(op, body.select(is_nan, nan_result, result))


# --- log_plus_one / exponential_minus_one ------------------------------------------------


def _log1p(body: _Body, x: str) -> str:
    """log1p of ``x``: log(u) * x / (u - 1) with u = 1 + x corrects u's rounding error."""
    u = body.op("add", [x, body.like(x, 1.0)])
    u_minus_one = body.op("subtract", [u, body.like(x, 1.0)])
    corrected = body.op("multiply", [body.op("log", [u]), body.op("divide", [x, u_minus_one])])
    # u == 1: x is below half an ulp of 1, and log1p(x) == x; u == inf: the ratio is NaN.
    result = body.select(body.compare("EQ", u, body.like(x, 1.0), "FLOAT"), x, corrected)
    return body.select(body.compare("EQ", u, body.like(x, math.inf), "FLOAT"), u, result)


def _expm1(body: _Body, x: str) -> str:
    """expm1 of ``x``: (u - 1) * x / log(u) with u = exp(x) (Kahan)."""
    u = body.op("exponential", [x])
    u_minus_one = body.op("subtract", [u, body.like(x, 1.0)])
    corrected = body.op("multiply", [u_minus_one, body.op("divide", [x, body.op("log", [u])])])
    # u == 1: expm1(x) == x; u - 1 == -1: x is very negative; u == inf: overflow.
    result = body.select(body.compare("EQ", u, body.like(x, 1.0), "FLOAT"), x, corrected)
    result = body.select(
        body.compare("EQ", u_minus_one, body.like(x, -1.0), "FLOAT"), u_minus_one, result
    )
    return body.select(body.compare("EQ", u, body.like(x, math.inf), "FLOAT"), u, result)


def fix_log1p_expm1(op: ir.Operation) -> None:
    type_ = ir.RankedTensorType(op.results[0].type)
    element = str(type_.element_type)
    body = _Body(type_)
    operand = body.argument(element)
    if isinstance(type_.element_type, ir.ComplexType):
        # log(1 + z) = log|1 + z| + i arg(1 + z), with log|1 + z| = log1p(x (2 + x) + y^2) / 2.
        part = str(ir.ComplexType(type_.element_type).element_type)
        x = body.convert(body.op("real", [operand], part), "f64")
        y = body.convert(body.op("imag", [operand], part), "f64")
        one_plus_x = body.op("add", [x, body.like(x, 1.0)])
        norm_minus_one = body.op(
            "add",
            [
                body.op("multiply", [x, body.op("add", [x, body.like(x, 2.0)])]),
                body.op("multiply", [y, y]),
            ],
        )
        real = body.op("multiply", [_log1p(body, norm_minus_one), body.like(x, 0.5)])
        imag = body.op("atan2", [y, one_plus_x])
        result = body.op("complex", [body.convert(real, part), body.convert(imag, part)], element)
    else:
        # f32 gains exactness in f64. Narrower floats need only f32, and the JIT
        # lacks compiler-rt's f64 -> f16/bf16 truncations.
        compute = "f64" if type_.element_type.width >= 32 else "f32"
        x = body.convert(operand, compute)
        value = _log1p(body, x) if op.name == "stablehlo.log_plus_one" else _expm1(body, x)
        result = body.convert(value, element)
    body.replace(op, result)


# --- the pass ----------------------------------------------------------------------------


def _static_element(op: ir.Operation) -> ir.Type | None:
    """The result's element type, when its shape is static (templates spell static types)."""
    try:
        type_ = ir.RankedTensorType(op.results[0].type)
    except ValueError:
        return None
    return type_.element_type if type_.has_static_shape else None


@dataclass(frozen=True)
class FixElementwiseSemanticsPass(Pass):
    """Rewrite elementwise ops that upstream lowers wrongly into correct StableHLO."""

    argument: ClassVar[str] = "shlo-fix-elementwise-semantics"

    def run(self, module: ir.Operation) -> None:
        names = (
            "stablehlo.add",
            "stablehlo.maximum",
            "stablehlo.minimum",
            "stablehlo.reduce_precision",
            "stablehlo.log_plus_one",
            "stablehlo.exponential_minus_one",
        )
        for op in ops_named(module, *names):
            if op.name == "stablehlo.add":
                if str(ir.ShapedType(op.results[0].type).element_type) == "i1":
                    fix_boolean_add(op)
                continue
            element = _static_element(op)
            if element is None:
                continue
            if op.name in ("stablehlo.maximum", "stablehlo.minimum"):
                if isinstance(element, ir.ComplexType):
                    fix_complex_extremum(op)
            elif op.name == "stablehlo.reduce_precision":
                if str(element) in MANTISSA_BITS:
                    fix_reduce_precision(op)
            elif (isinstance(element, ir.FloatType) and element.width < 32) or (
                op.name == "stablehlo.log_plus_one" and isinstance(element, ir.ComplexType)
            ):
                # f32 and f64 call the C library (shlo-precise-libm-calls).
                fix_log1p_expm1(op)
