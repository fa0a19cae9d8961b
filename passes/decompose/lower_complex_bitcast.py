"""shlo-lower-complex-bitcast: bitcast_convert between complex types via their float parts.

Ours because upstream is wrong: ``stablehlo-legalize-to-linalg`` crashes
(SIGSEGV) on a ``stablehlo.bitcast_convert`` of complex numbers. A complex
tensor is split into a float tensor with a trailing dimension of 2 (real,
imaginary), bitcast as floats, and joined again; an identity bitcast is
dropped. Wider elements split little-endian, as upstream does for floats.

  %0 = stablehlo.bitcast_convert %x : (tensor<complex<f64>>) -> tensor<2xcomplex<f32>>
  ==>
  %re = stablehlo.real %x : (tensor<complex<f64>>) -> tensor<f64>
  %im = stablehlo.imag %x : (tensor<complex<f64>>) -> tensor<f64>
  ... concatenate to tensor<2xf64>, bitcast to tensor<2x2xf32> ...
  %0 = stablehlo.complex %re2, %im2 : tensor<2xcomplex<f32>>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass


def _tensor(shape: Sequence[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element)


def _width(element: ir.Type) -> int:
    if isinstance(element, ir.ComplexType):
        return 2 * _width(element.element_type)
    if isinstance(element, ir.IntegerType):
        return element.width
    return ir.FloatType(element).width


def _reshape(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    if list(ir.RankedTensorType(value.type).shape) == list(shape):
        return value
    return create_value("stablehlo.reshape", [value], _tensor(shape, element))


def split_complex(value: ir.Value) -> ir.Value:
    """A complex tensor of shape S as a float tensor of shape S x 2 (real, imaginary)."""
    type_ = ir.RankedTensorType(value.type)
    shape = list(type_.shape)
    part = ir.ComplexType(type_.element_type).element_type
    parts = [
        _reshape(create_value(f"stablehlo.{name}", [value], _tensor(shape, part)), [*shape, 1])
        for name in ("real", "imag")
    ]
    return create_value(
        "stablehlo.concatenate",
        parts,
        _tensor([*shape, 2], part),
        dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(shape)),
    )


def join_complex(value: ir.Value, element: ir.ComplexType) -> ir.Value:
    """A float tensor of shape S x 2 as a complex tensor of shape S."""
    shape = list(ir.RankedTensorType(value.type).shape)[:-1]
    part = element.element_type
    parts = []
    for index in (0, 1):

        def array(values: list[int]) -> ir.Attribute:
            return ir.DenseI64ArrayAttr.get(values)

        sliced = create_value(
            "stablehlo.slice",
            [value],
            _tensor([*shape, 1], part),
            start_indices=array([0] * len(shape) + [index]),
            limit_indices=array([*shape, index + 1]),
            strides=array([1] * (len(shape) + 1)),
        )
        parts.append(_reshape(sliced, shape))
    return create_value("stablehlo.complex", parts, _tensor(shape, element))


def bitcast_reals(value: ir.Value, target: ir.RankedTensorType) -> ir.Value:
    """Bitcast a non-complex tensor to the non-complex ``target`` with as many bits."""
    source = ir.RankedTensorType(value.type)
    old, new = _width(source.element_type), _width(target.element_type)
    shape = list(source.shape)
    if old > new:  # each element splits into old // new
        cast = _tensor([*shape, old // new], target.element_type)
    elif old < new:  # old // new elements merge into one
        count = math.prod(shape) * old // new
        value = _reshape(value, [count, new // old])
        cast = _tensor([count], target.element_type)
    else:
        cast = _tensor(shape, target.element_type)
    return _reshape(create_value("stablehlo.bitcast_convert", [value], cast), list(target.shape))


def lower_bitcast(op: ir.Operation) -> None:
    operand, result = op.operands[0], op.results[0]
    source = ir.RankedTensorType(operand.type)
    target = ir.RankedTensorType(result.type)
    # The verifier allows complex to complex only, never complex to real.
    if not isinstance(source.element_type, ir.ComplexType):
        return
    if source == target:
        result.replace_all_uses_with(operand)
        op.erase()
        return
    element = ir.ComplexType(target.element_type)
    with op.location, ir.InsertionPoint(op):
        parts = _tensor([*target.shape, 2], element.element_type)
        joined = join_complex(bitcast_reals(split_complex(operand), parts), element)
    result.replace_all_uses_with(joined)
    op.erase()


@dataclass(frozen=True)
class LowerComplexBitcastPass(Pass):
    """Bitcast_convert between complex types via their float parts."""

    argument: ClassVar[str] = "shlo-lower-complex-bitcast"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.bitcast_convert"):
            lower_bitcast(op)
