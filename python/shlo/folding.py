"""Constant folding of StableHLO ops, as rewrite patterns.

Upstream's ``stablehlo-aggressive-simplification`` and
``stablehlo-aggressive-folder`` are missing from the pinned wheel, and
``canonicalize`` folds almost nothing in StableHLO. These patterns cover what
shape refinement leaves behind: broadcasts of splat constants, dimension sizes
of static tensors, and the small integer arithmetic of shape computations.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from shlo._mlir_compat import ir, rewrite
from shlo.ir_utils import constant_array, create_constant, defining_op, numpy_dtype, ranked_type
from shlo.pass_framework import no_match

# Folding bigger results would trade compile time and memory for nothing.
MAX_FOLDED_ELEMENTS = 1 << 16


def _replace_with_constant(
    op: ir.Operation, array: np.ndarray, rewriter: rewrite.PatternRewriter
) -> None:
    result_type = ir.RankedTensorType(op.results[0].type)
    with rewriter.ip:
        constant = create_constant(array, result_type, op.location)
    rewriter.replace_op(op, constant)


def _foldable_result(op: ir.Operation) -> ir.RankedTensorType | None:
    """The result type of ``op`` when it is small and static, and its operands are constants."""
    # Operands first: the patterns see every add and multiply of a program,
    # and nearly all have a computed operand (GPT-2: 3,900 ops, 40 ms).
    for operand in op.operands:
        producer = defining_op(operand)
        if producer is None or producer.name != "stablehlo.constant":
            return None
    result_type = ranked_type(op.results[0])
    if (
        result_type is None
        or not result_type.has_static_shape
        or numpy_dtype(result_type.element_type) is None
        or math.prod(result_type.shape) > MAX_FOLDED_ELEMENTS
    ):
        return None
    return result_type


def fold_broadcast_of_splat(op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool | None:
    """broadcast_in_dim(splat constant) -> splat constant of the result type."""
    source = op.operands[0].owner
    result_type = ranked_type(op.results[0])
    if result_type is None or not result_type.has_static_shape:
        return no_match(op, "expected static result type")
    if not isinstance(source, (ir.Operation, ir.OpView)) or source.name != "stablehlo.constant":
        return no_match(op, "expected constant operand")
    if isinstance(ir.ShapedType(op.operands[0].type).element_type, ir.ComplexType):
        # The bindings raise on reading a complex dense attribute.
        return no_match(op, "expected a non-complex constant")
    value = ir.DenseElementsAttr(source.attributes["value"])
    if not value.is_splat:
        return no_match(op, "expected splat operand")
    splat = ir.DenseElementsAttr.get_splat(result_type, value.get_splat_value())
    with rewriter.ip:
        constant = ir.Operation.create(
            "stablehlo.constant",
            results=[result_type],
            attributes={"value": splat},
            loc=op.location,
        )
    rewriter.replace_op(op, constant)
    return None


def _static_dimension_size(value: ir.Value, dimension: int) -> int | None:
    """The size of ``dimension`` of ``value``, looking through refine-arguments' wrappers."""
    value_type = ranked_type(value)
    if value_type is not None and not value_type.is_dynamic_dim(dimension):
        return value_type.shape[dimension]
    owner = defining_op(value)
    if (
        owner is not None
        and owner.name == "stablehlo.custom_call"
        and ir.StringAttr(owner.attributes["call_target_name"]).value_bytes
        == b"stablehlo.shape_refinement_operand_wrapper"
    ):
        shape = constant_array(owner.operands[1])
        if shape is not None:
            return int(shape[dimension])
        return _static_dimension_size(owner.operands[0], dimension)
    return None


def fold_get_dimension_size(op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool | None:
    dimension = ir.IntegerAttr(op.attributes["dimension"]).value
    size = _static_dimension_size(op.operands[0], dimension)
    if size is None:
        return no_match(op, "expected static dimension")
    _replace_with_constant(op, np.array(size), rewriter)
    return None


def fold_identity_convert(op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool | None:
    if op.operands[0].type != op.results[0].type:
        return no_match(op, "expected the same operand and result type")
    rewriter.replace_op(op, [op.operands[0]])
    return None


def fold_identity_broadcast(op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool | None:
    """broadcast_in_dim to its own static type with dims [0, 1, ...] -> its operand.

    Refining a dynamic_broadcast_in_dim whose operand already had the
    result's shape leaves these behind.
    """
    operand_type = ranked_type(op.operands[0])
    if operand_type is None or not operand_type.has_static_shape:
        return no_match(op, "expected a static operand")
    if op.operands[0].type != op.results[0].type:
        return no_match(op, "expected the same operand and result type")
    dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
    if dims != list(range(operand_type.rank)):
        return no_match(op, "expected identity broadcast_dimensions")
    rewriter.replace_op(op, [op.operands[0]])
    return None


def _divide(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    if np.issubdtype(lhs.dtype, np.integer):
        # StableHLO integer division truncates toward zero, like C. Floor
        # division rounded up where inexact and of mixed signs; abs() would
        # overflow on the minimum value (-128 / 3 in i8 gave 43).
        quotient = lhs // rhs
        inexact = (quotient * rhs != lhs) & ((lhs < 0) != (rhs < 0))
        return (quotient + inexact.astype(lhs.dtype)).astype(lhs.dtype)
    return lhs / rhs


def _remainder(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return np.fmod(lhs, rhs)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "stablehlo.add": np.add,
    "stablehlo.subtract": np.subtract,
    "stablehlo.multiply": np.multiply,
    "stablehlo.divide": _divide,
    "stablehlo.remainder": _remainder,
    "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum,
    "stablehlo.and": np.bitwise_and,
    "stablehlo.or": np.bitwise_or,
    "stablehlo.xor": np.bitwise_xor,
}

_COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "GE": np.greater_equal,
    "GT": np.greater,
    "LE": np.less_equal,
    "LT": np.less,
}


def _integer_operands(op: ir.Operation) -> list[np.ndarray] | None:
    arrays = [constant_array(operand) for operand in op.operands]
    if any(array is None for array in arrays):
        return None
    if not all(
        array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer) for array in arrays
    ):  # type: ignore[union-attr]
        return None
    return arrays  # type: ignore[return-value]


def fold_integer_op(op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool | None:
    """Evaluate integer and boolean ops whose operands are all constants."""
    result_type = _foldable_result(op)
    if result_type is None:
        return no_match(op, "expected constant operands and a small static numpy result")
    arrays = _integer_operands(op)
    if arrays is None:
        return no_match(op, "expected integer constant operands")
    name = op.name
    with np.errstate(all="ignore"):
        if name in _BINARY:
            if name in ("stablehlo.divide", "stablehlo.remainder") and np.any(arrays[1] == 0):
                return no_match(op, "division by zero is left to run time")
            result = _BINARY[name](arrays[0], arrays[1])
        elif name == "stablehlo.compare":
            direction = str(op.attributes["comparison_direction"])
            compare = _COMPARISONS[direction.rstrip(">").split()[-1]]
            result = compare(arrays[0], arrays[1])
        elif name == "stablehlo.select":
            result = np.where(arrays[0], arrays[1], arrays[2])
        elif name == "stablehlo.not":
            result = np.logical_not(arrays[0]) if arrays[0].dtype == np.bool_ else ~arrays[0]
        elif name == "stablehlo.negate":
            result = -arrays[0]
        elif name in ("stablehlo.convert", "stablehlo.reshape", "stablehlo.broadcast_in_dim"):
            if name == "stablehlo.broadcast_in_dim":
                dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
                shape = [1] * len(result_type.shape)
                for source_dim, target_dim in enumerate(dims):
                    shape[target_dim] = arrays[0].shape[source_dim]
                result = np.broadcast_to(arrays[0].reshape(shape), result_type.shape)
            else:
                result = arrays[0]
        elif name == "stablehlo.concatenate":
            axis = ir.IntegerAttr(op.attributes["dimension"]).value
            result = np.concatenate(arrays, axis=axis)
        else:
            return no_match(op, "unsupported op")
    _replace_with_constant(op, np.asarray(result), rewriter)
    return None


# Scalar float ops of shape computations (torch's arange sizes: ceil((end - start) / step)).
# Each is correctly rounded in IEEE arithmetic, so numpy computes what the code would.
_SCALAR_FLOAT: dict[str, Callable[..., np.ndarray]] = {
    "stablehlo.add": np.add,
    "stablehlo.subtract": np.subtract,
    "stablehlo.multiply": np.multiply,
    "stablehlo.divide": np.divide,
    "stablehlo.ceil": np.ceil,
    "stablehlo.floor": np.floor,
    "stablehlo.convert": lambda x: x,
}


def fold_scalar_float_op(op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool | None:
    """Evaluate a scalar float op (or a float-to-integer convert) of constant operands."""
    result_type = _foldable_result(op)
    if result_type is None or result_type.rank != 0:
        return no_match(op, "expected constant operands and a scalar numpy result")
    arrays = [constant_array(operand) for operand in op.operands]
    if any(a is None or a.ndim != 0 for a in arrays):
        return no_match(op, "expected scalar constant operands")
    if not any(np.issubdtype(a.dtype, np.floating) for a in arrays):  # type: ignore[union-attr]
        return no_match(op, "integer ops fold elsewhere")
    with np.errstate(all="ignore"):
        result = _SCALAR_FLOAT[op.name](*arrays)
    target = numpy_dtype(result_type.element_type)
    if np.issubdtype(target, np.integer):
        # Out of range or not finite: the conversion is the target's to define.
        if not np.isfinite(result) or not np.iinfo(target).min <= result <= np.iinfo(target).max:
            return no_match(op, "float-to-integer conversion out of range")
    _replace_with_constant(op, np.asarray(result), rewriter)
    return None


FOLDED_OPS = (
    *_BINARY,
    "stablehlo.compare",
    "stablehlo.select",
    "stablehlo.not",
    "stablehlo.negate",
    "stablehlo.convert",
    "stablehlo.reshape",
    "stablehlo.concatenate",
)


def folding_patterns() -> rewrite.FrozenRewritePatternSet:
    patterns = rewrite.RewritePatternSet()
    patterns.add("stablehlo.broadcast_in_dim", fold_broadcast_of_splat)
    patterns.add("stablehlo.broadcast_in_dim", fold_integer_op)
    patterns.add("stablehlo.get_dimension_size", fold_get_dimension_size)
    patterns.add("stablehlo.convert", fold_identity_convert, benefit=2)
    patterns.add("stablehlo.broadcast_in_dim", fold_identity_broadcast, benefit=2)
    for name in FOLDED_OPS:
        patterns.add(name, fold_integer_op)
    for name in _SCALAR_FLOAT:
        patterns.add(name, fold_scalar_float_op)
    return patterns.freeze()


def fold_constants(root: ir.Operation) -> None:
    """Apply the folding patterns greedily; also erases dead pure ops."""
    rewrite.apply_patterns_and_fold_greedily(root, folding_patterns())
