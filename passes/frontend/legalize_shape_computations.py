"""shlo-legalize-shape-computations: shape arithmetic in the shape, tensor and arith dialects becomes StableHLO.

Ours because upstream's ``shape-legalize-to-stablehlo`` handles only
index-typed arithmetic: torch-mlir's shape-polymorphic exports cast sizes to
i64 (``arith.index_cast``, ``arith.muli`` on i64, ``tensor.from_elements``
of i64), where it fails. Here every size, whatever its integer type, is a
``tensor<i64>`` and every extent list a ``tensor<Nxi64>``, so
``shlo-remove-dynamism`` refines and folds them with the rest of the
program. ``shape.assuming`` regions are inlined, and each
``shape.cstr_broadcastable`` becomes a ``shape_assertion`` custom call,
which shlo-check-shape-assertions checks once the shapes are known.

  %d = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %n = arith.index_cast %d : index to i64
  %s = tensor.from_elements %n, %c4_i64 : tensor<2xi64>
  %r = stablehlo.dynamic_reshape %x, %s : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  ==>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
  %2 = stablehlo.reshape %1 : (tensor<i64>) -> tensor<1xi64>
  %3 = stablehlo.reshape %c4 : (tensor<i64>) -> tensor<1xi64>
  %4 = stablehlo.concatenate %2, %3, dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = stablehlo.dynamic_reshape %x, %4 : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import constant_index, create_value, functions, ops_named
from shlo.pass_framework import Pass, PassError

# Sizes are never negative, so the unsigned ops are the signed ones (torch-mlir
# infers a reshape's -1 with divui: the element count over the other sizes).
_BINARY = {
    "arith.addi": "stablehlo.add",
    "arith.subi": "stablehlo.subtract",
    "arith.muli": "stablehlo.multiply",
    "arith.divsi": "stablehlo.divide",
    "arith.divui": "stablehlo.divide",
    "arith.remsi": "stablehlo.remainder",
    "arith.remui": "stablehlo.remainder",
    "arith.maxsi": "stablehlo.maximum",
    "arith.maxui": "stablehlo.maximum",
    "arith.minsi": "stablehlo.minimum",
    "arith.minui": "stablehlo.minimum",
    "arith.andi": "stablehlo.and",
    "arith.ori": "stablehlo.or",
}
# Nor do the integer casts change a size's value.
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci")
# arith.cmpi predicate (its integer attribute) -> stablehlo comparison direction.
_COMPARISONS = ["EQ", "NE", "LT", "LE", "GT", "GE", "LT", "LE", "GT", "GE"]
_WITNESSES = ("shape.const_witness", "shape.assuming_all")
# Ops whose tensor operands are data, read for their shape only.
_READS_TENSORS = ("shape.shape_of", "tensor.dim")


def _is_size(type_: ir.Type) -> bool:
    """An integer or index scalar, or a 1-D tensor of them: a size or an extent list."""
    if isinstance(type_, ir.IndexType | ir.IntegerType):
        return True
    return (
        isinstance(type_, ir.RankedTensorType)
        and type_.rank == 1
        and isinstance(type_.element_type, ir.IndexType | ir.IntegerType)
    )


def _i64(shape: list[int]) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(64))


def _length(value: ir.Value) -> int:
    return ir.RankedTensorType(value.type).shape[0]


class _Builder:
    """StableHLO ops on i64 sizes, at the current insertion point."""

    def constant(self, values: np.ndarray) -> ir.Value:
        array = np.asarray(values, dtype=np.int64)
        type_ = _i64(list(array.shape))
        attribute = ir.DenseElementsAttr.get(
            array, type=type_.element_type, shape=list(array.shape)
        )
        return create_value("stablehlo.constant", [], type_, value=attribute)

    def op(
        self,
        name: str,
        operands: list[ir.Value],
        type_: ir.Type | None = None,
        **attrs: ir.Attribute,
    ) -> ir.Value:
        return create_value(name, operands, type_ or operands[0].type, **attrs)

    def reshape(self, value: ir.Value, shape: list[int]) -> ir.Value:
        return self.op("stablehlo.reshape", [value], _i64(shape))

    def concatenate(self, values: list[ir.Value]) -> ir.Value:
        if not values:
            return self.constant(np.zeros([0], np.int64))
        total = sum(_length(v) for v in values)
        dimension = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
        return self.op("stablehlo.concatenate", values, _i64([total]), dimension=dimension)

    def compare(self, direction: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        result = ir.RankedTensorType.get(
            ir.RankedTensorType(lhs.type).shape, ir.IntegerType.get_signless(1)
        )
        return self.op(
            "stablehlo.compare",
            [lhs, rhs],
            result,
            comparison_direction=ir.Attribute.parse(
                f"#stablehlo<comparison_direction {direction}>"
            ),
        )

    def select(self, condition: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
        return self.op("stablehlo.select", [condition, on_true, on_false], on_true.type)

    def dimension_size(self, value: ir.Value, dimension: int) -> ir.Value:
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension)
        size = self.op("stablehlo.get_dimension_size", [value], i32, dimension=attr)
        return self.op("stablehlo.convert", [size], _i64([]))

    def element(self, extents: ir.Value, index: int) -> ir.Value:
        array = ir.DenseI64ArrayAttr.get
        sliced = self.op(
            "stablehlo.slice",
            [extents],
            _i64([1]),
            start_indices=array([index]),
            limit_indices=array([index + 1]),
            strides=array([1]),
        )
        return self.reshape(sliced, [])

    def left_padded(self, extents: ir.Value, length: int) -> ir.Value:
        pad = length - _length(extents)
        return (
            self.concatenate([self.constant(np.ones([pad], np.int64)), extents]) if pad else extents
        )

    def broadcast(self, shapes: list[ir.Value]) -> ir.Value:
        """Numpy's broadcast of extent lists, exact for the shapes that broadcast (0 included)."""
        length = max(_length(s) for s in shapes)
        result, *rest = [self.left_padded(s, length) for s in shapes]
        ones = self.constant(np.ones([length], np.int64))
        for other in rest:
            result = self.select(self.compare("EQ", result, ones), other, result)
        return result

    def broadcastable(self, shapes: list[ir.Value]) -> ir.Value:
        """A tensor<i1>: every pair of extents is equal or has a 1."""
        length = max(_length(s) for s in shapes)
        padded = [self.left_padded(s, length) for s in shapes]
        ones = self.constant(np.ones([length], np.int64))
        result = self.broadcast(padded)
        ok = None
        for extents in padded:
            fits = self.op(
                "stablehlo.or",
                [self.compare("EQ", extents, ones), self.compare("EQ", extents, result)],
            )
            ok = fits if ok is None else self.op("stablehlo.and", [ok, fits])
        assert ok is not None
        every = ok
        for index in range(length):
            sliced = self.op(
                "stablehlo.slice",
                [ok],
                ir.RankedTensorType.get([1], ir.IntegerType.get_signless(1)),
                start_indices=ir.DenseI64ArrayAttr.get([index]),
                limit_indices=ir.DenseI64ArrayAttr.get([index + 1]),
                strides=ir.DenseI64ArrayAttr.get([1]),
            )
            every = sliced if index == 0 else self.op("stablehlo.and", [every, sliced])
        scalar_i1 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))
        if length == 0:
            return create_value(
                "stablehlo.constant",
                [],
                scalar_i1,
                value=ir.DenseElementsAttr.get_splat(scalar_i1, ir.BoolAttr.get(True)),
            )
        return self.op("stablehlo.reshape", [every], scalar_i1)

    def floor_or_ceil_divide(self, lhs: ir.Value, rhs: ir.Value, floor: bool) -> ir.Value:
        quotient = self.op("stablehlo.divide", [lhs, rhs])
        remainder = self.op("stablehlo.remainder", [lhs, rhs])
        zero = self.constant(np.zeros([], np.int64))
        one = self.constant(np.ones([], np.int64))
        inexact = self.compare("NE", remainder, zero)
        same_sign = self.compare(
            "EQ", self.compare("LT", remainder, zero), self.compare("LT", rhs, zero)
        )
        # divide truncates: floor steps down when the signs differ, ceil up when they agree.
        step = self.op(
            "stablehlo.and",
            [inexact, same_sign if not floor else self.op("stablehlo.not", [same_sign])],
        )
        adjusted = self.op("stablehlo.subtract" if floor else "stablehlo.add", [quotient, one])
        return self.select(step, adjusted, quotient)


def _inline_assuming(op: ir.Operation) -> None:
    """Move a shape.assuming region's ops before it; its results are what it yields."""
    body = op.regions[0].blocks[0]
    operations = list(body.operations)
    terminator = operations[-1]
    for inner in operations[:-1]:
        inner.move_before(op)
    for result, yielded in zip(op.results, terminator.operands):
        result.replace_all_uses_with(yielded)
    op.erase()


@dataclass(frozen=True)
class LegalizeShapeComputationsPass(Pass):
    """Shape arithmetic in the shape, tensor and arith dialects becomes StableHLO on i64."""

    argument: ClassVar[str] = "shlo-legalize-shape-computations"

    def run(self, module: ir.Operation) -> None:
        for assuming in reversed(ops_named(module, "shape.assuming")):
            _inline_assuming(assuming)
        for function in functions(module):
            if function.regions[0].blocks:
                self._legalize_block(function.regions[0].blocks[0])

    def _legalize_block(self, block: ir.Block) -> None:
        lowered: dict[ir.Value, ir.Value] = {}
        converted: list[ir.Operation] = []
        builder = _Builder()
        for op in list(block.operations):
            rule = self._rule(op)
            if rule is None:
                continue
            operands = [lowered.get(v) for v in op.operands]
            if op.name not in _READS_TENSORS and any(v is None for v in operands):
                continue  # integer data (tensor.extract of a data tensor, say), not a size
            with ir.InsertionPoint(op), op.location:
                replacement = rule(op, operands, builder)
            if replacement is not None:
                lowered[op.results[0]] = replacement
            converted.append(op)
        if not converted:
            return
        done = {op.operation for op in converted}
        for op in converted:
            for result in op.results:
                for use in list(result.uses):
                    owner = use.owner.operation
                    if owner in done or not owner.name.startswith("stablehlo."):
                        # Witnesses die with shape.assuming; other users keep the
                        # original op (integer data, or a size StableHLO cannot take).
                        continue
                    if result not in lowered:
                        raise PassError(
                            op.location, f"cannot legalize '{op.name}' used by '{owner.name}'"
                        )
                    with ir.InsertionPoint(owner), owner.location:
                        value = self._as_type(lowered[result], result.type)
                    owner.operands[use.operand_number] = value
        # Witnesses only fed the inlined shape.assuming ops; they go first, as users.
        for op in reversed([o for o in block.operations if o.name in _WITNESSES]):
            op.erase()
        for op in reversed(converted):
            if not any(list(result.uses) for result in op.results):
                op.erase()

    @staticmethod
    def _as_type(value: ir.Value, type_: ir.Type) -> ir.Value:
        """``value`` (i64) as a StableHLO op takes the original operand of ``type_``."""
        element = ir.RankedTensorType(type_).element_type
        if isinstance(element, ir.IntegerType) and element.width != 64:
            return create_value(
                "stablehlo.convert", [value], ir.RankedTensorType.get(type_.shape, element)
            )
        return value

    @staticmethod
    def _rule(op: ir.Operation) -> Callable[..., ir.Value | None] | None:
        """How to rewrite ``op``, None for an op that computes no size."""
        name = op.name
        if name in _SHAPE_RULES:
            return _SHAPE_RULES[name]
        if not op.results or not all(_is_size(r.type) for r in op.results):
            return None
        if name in _BINARY:
            return _binary
        if name in _CASTS:
            return _same
        return _TENSOR_RULES.get(name) or _ARITH_RULES.get(name)


def _shape_of(op: ir.Operation, _: list, b: _Builder) -> ir.Value:
    source = op.operands[0]
    rank = ir.RankedTensorType(source.type).rank
    return b.concatenate([b.reshape(b.dimension_size(source, d), [1]) for d in range(rank)])


def _const_shape(op: ir.Operation, _: list, b: _Builder) -> ir.Value:
    return b.constant(np.array(list(ir.DenseIntElementsAttr(op.attributes["shape"])), np.int64))


def _broadcast(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    return b.broadcast(operands)


def _num_elements(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    product = b.constant(np.ones([], np.int64))
    for index in range(_length(operands[0])):
        product = b.op("stablehlo.multiply", [product, b.element(operands[0], index)])
    return product


def _cstr_broadcastable(op: ir.Operation, operands: list, b: _Builder) -> None:
    holds = b.broadcastable(operands)
    shapes = " and ".join(f"{{{i}}}" for i in range(len(operands)))
    ir.Operation.create(
        "stablehlo.custom_call",
        results=[],
        operands=[holds, *operands],
        attributes={
            "call_target_name": ir.StringAttr.get("shape_assertion"),
            "has_side_effect": ir.BoolAttr.get(True),
            "error_message": ir.StringAttr.get(f"shapes {shapes} do not broadcast"),
        },
    )
    return None


def _dim(op: ir.Operation, _: list, b: _Builder) -> ir.Value:
    index = constant_index(op.operands[1])
    if index is None:
        raise PassError(op.location, "tensor.dim with a dimension that is not a constant")
    return b.dimension_size(op.operands[0], index)


def _from_elements(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    if ir.RankedTensorType(op.results[0].type).rank == 0:
        return operands[0]
    return b.concatenate([b.reshape(v, [1]) for v in operands])


def _extract(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    index = constant_index(op.operands[1]) if len(op.operands) == 2 else None
    if index is None:
        raise PassError(op.location, "tensor.extract of a shape at an index that is not a constant")
    return b.element(operands[0], index)


def _same(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    return operands[0]


def _constant(op: ir.Operation, _: list, b: _Builder) -> ir.Value:
    attribute = op.attributes["value"].maybe_downcast()
    if isinstance(attribute, ir.IntegerAttr):
        return b.constant(np.array(attribute.value, np.int64))
    return b.constant(np.array(ir.DenseElementsAttr(attribute), np.int64))


def _binary(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    return b.op(_BINARY[op.name], operands)


def _cmpi(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    predicate = ir.IntegerAttr(op.attributes["predicate"]).value
    return b.compare(_COMPARISONS[predicate], *operands)


def _select(op: ir.Operation, operands: list, b: _Builder) -> ir.Value:
    return b.select(*operands)


# Ops that compute sizes whatever their operands; the others only on sizes.
_SHAPE_RULES = {
    "tensor.dim": _dim,
    "shape.shape_of": _shape_of,
    "shape.const_shape": _const_shape,
    "shape.broadcast": _broadcast,
    "shape.num_elements": _num_elements,
    "shape.cstr_broadcastable": _cstr_broadcastable,
}
_TENSOR_RULES = {
    "tensor.from_elements": _from_elements,
    "tensor.extract": _extract,
    "tensor.cast": _same,
}
_ARITH_RULES = {
    "arith.constant": _constant,
    "arith.cmpi": _cmpi,
    "arith.select": _select,
    "arith.floordivsi": lambda op, operands, b: b.floor_or_ceil_divide(*operands, floor=True),
    "arith.ceildivsi": lambda op, operands, b: b.floor_or_ceil_divide(*operands, floor=False),
}
