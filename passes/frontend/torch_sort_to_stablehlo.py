"""shlo-torch-sort-to-stablehlo: torch's sorts, and topks of dynamic shape, as stable StableHLO sorts.

Ours because upstream is wrong: torch-mlir 20261001's conversion makes the
indices of ``torch.aten.sort`` and ``torch.aten.topk`` with a ``stablehlo.iota``
of the input's shape, which does not verify when a size is dynamic (a batch
of ``torch.topk`` for sampling, exported with a dynamic batch), and its sorts
are unstable, while torch's CPU sorts keep ties in order and
``torch.sort(stable=True)`` (decomposed to a sort, ``shlo.torch_decompositions``)
promises it. This pass, run on the torch dialect before that conversion,
does what the conversion does for static shapes with a
``stablehlo.dynamic_iota`` and a stable sort: the values and their indices
sorted along the dimension, descending for ``descending`` or ``largest``,
and for topk the first k of each. NaN sorts above every number, as in
torch (torch-mlir's comparator left NaNs where they were, a silent wrong
answer). It converts every sort, and each topk of floats or of dynamic
shape; an op whose dimension, direction or k is not a constant is left to
torch-mlir.

  %values, %indices = torch.aten.sort %x, %int1, %true
      : !torch.vtensor<[?,10],f32>, !torch.int, !torch.bool
      -> !torch.vtensor<[?,10],f32>, !torch.vtensor<[?,10],si64>
  ==>
  %0 = torch_c.to_builtin_tensor %x : !torch.vtensor<[?,10],f32> -> tensor<?x10xf32>
  %shape = ... stablehlo.get_dimension_size of %0, as tensor<2xi64> ...
  %iota = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi64>) -> tensor<?x10xi64>
  %1:2 = "stablehlo.sort"(%0, %iota) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i64>, %j: tensor<i64>):
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<?x10xf32>, tensor<?x10xi64>) -> (tensor<?x10xf32>, tensor<?x10xi64>)
  %values = torch_c.from_builtin_tensor %1#0 : tensor<?x10xf32> -> !torch.vtensor<[?,10],f32>
  %indices = torch_c.from_builtin_tensor %1#1 : tensor<?x10xi64> -> !torch.vtensor<[?,10],si64>
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, i64_attr, ops_named
from shlo.pass_framework import Pass

_VTENSOR = re.compile(r"!torch\.vtensor<\[([^\]]*)\],(\w+)>")
# torch's element types whose builtin type differs: integers are signless there.
_SIGNLESS = {"si8": "i8", "si16": "i16", "si32": "i32", "si64": "i64"}
_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _builtin_type(type_: ir.Type) -> ir.RankedTensorType | None:
    """The builtin tensor type of a ``!torch.vtensor`` type, None if unranked or unknown."""
    match = _VTENSOR.fullmatch(str(type_))
    if match is None:
        return None
    sizes = [_DYNAMIC if s == "?" else int(s) for s in match.group(1).split(",") if s]
    try:
        element = ir.Type.parse(_SIGNLESS.get(match.group(2), match.group(2)))
    except ValueError:
        return None
    return ir.RankedTensorType.get(sizes, element)


def _constant(value: ir.Value) -> int | bool | None:
    """The value of a ``torch.constant.int`` or ``torch.constant.bool``, else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation):
        return None
    op = owner.operation
    if op.name == "torch.constant.int":
        return ir.IntegerAttr(op.attributes["value"]).value
    if op.name == "torch.constant.bool":
        return ir.BoolAttr(op.attributes["value"]).value
    return None


def _scalar(type_: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([], type_)


def _i64(shape: list[int]) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(64))


def _sizes(value: ir.Value, rank: int) -> list[ir.Value]:
    """Each dimension size of ``value`` as a tensor<1xi64>."""
    sizes = []
    for dimension in range(rank):
        size = create_value(
            "stablehlo.get_dimension_size",
            [value],
            _scalar(ir.IntegerType.get_signless(32)),
            dimension=i64_attr(dimension),
        )
        size = create_value("stablehlo.convert", [size], _i64([]))
        sizes.append(create_value("stablehlo.reshape", [size], _i64([1])))
    return sizes


def _concatenate(values: list[ir.Value]) -> ir.Value:
    return create_value("stablehlo.concatenate", values, _i64([len(values)]), dimension=i64_attr(0))


def _i64_constant(values: list[int]) -> ir.Value:
    array = np.asarray(values, dtype=np.int64)
    type_ = _i64([len(values)])
    attribute = ir.DenseElementsAttr.get(array, type=type_.element_type, shape=[len(values)])
    return create_value("stablehlo.constant", [], type_, value=attribute)


def _comparison_type(element: ir.Type) -> str:
    if isinstance(element, ir.FloatType):
        return "FLOAT"
    if isinstance(element, ir.IntegerType) and element.is_unsigned:
        return "UNSIGNED"
    return "SIGNED"


def _sort(values: ir.Value, dimension: int, descending: bool) -> tuple[ir.Value, ir.Value]:
    """``values`` sorted along ``dimension``, and the index each one came from."""
    type_ = ir.RankedTensorType(values.type)
    indices_type = _i64(list(type_.shape))
    if type_.has_static_shape:
        iota = create_value("stablehlo.iota", [], indices_type, iota_dimension=i64_attr(dimension))
    else:
        shape = _concatenate(_sizes(values, type_.rank))
        iota = create_value(
            "stablehlo.dynamic_iota", [shape], indices_type, iota_dimension=i64_attr(dimension)
        )
    sort = ir.Operation.create(
        "stablehlo.sort",
        results=[type_, indices_type],
        operands=[values, iota],
        attributes={"dimension": i64_attr(dimension), "is_stable": ir.BoolAttr.get(True)},
        regions=1,
    )
    element, index = _scalar(type_.element_type), _scalar(indices_type.element_type)
    block = sort.regions[0].blocks.append(element, element, index, index)
    with ir.InsertionPoint(block):
        a, b = block.arguments[0], block.arguments[1]
        comparison_type = _comparison_type(type_.element_type)
        before = _compare("GT" if descending else "LT", a, b, comparison_type)
        if comparison_type == "FLOAT":
            # torch orders NaN above every number: last ascending, first
            # descending (and topk's largest). A NaN compares false to
            # anything, so without this it stays where it was.
            a_nan, b_nan = _compare("NE", a, a, "FLOAT"), _compare("NE", b, b, "FLOAT")
            first_nan, second_nan = (a_nan, b_nan) if descending else (b_nan, a_nan)
            nan_first = _and(first_nan, _not(second_nan))
            before = create_value("stablehlo.or", [before, nan_first], before.type)
        ir.Operation.create("stablehlo.return", operands=[before])
    return sort.results[0], sort.results[1]


def _compare(direction: str, lhs: ir.Value, rhs: ir.Value, comparison_type: str) -> ir.Value:
    return create_value(
        "stablehlo.compare",
        [lhs, rhs],
        _scalar(ir.IntegerType.get_signless(1)),
        comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {comparison_type}>"),
    )


def _and(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    return create_value("stablehlo.and", [lhs, rhs], lhs.type)


def _not(value: ir.Value) -> ir.Value:
    return create_value("stablehlo.not", [value], value.type)


def _first(value: ir.Value, dimension: int, count: int, result: ir.RankedTensorType) -> ir.Value:
    """The first ``count`` elements of ``value`` along ``dimension``."""
    rank = result.rank
    limits = _sizes(value, rank)
    limits[dimension] = _i64_constant([count])
    return create_value(
        "stablehlo.real_dynamic_slice",
        [value, _i64_constant([0] * rank), _concatenate(limits), _i64_constant([1] * rank)],
        result,
    )


def _from_builtin(value: ir.Value, torch_type: ir.Type) -> ir.Value:
    return create_value("torch_c.from_builtin_tensor", [value], torch_type)


@dataclass(frozen=True)
class TorchSortToStablehloPass(Pass):
    """Convert torch's sorts, and topks of dynamic shape, to stable StableHLO sorts."""

    argument: ClassVar[str] = "shlo-torch-sort-to-stablehlo"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "torch.aten.sort") + ops_named(module, "torch.aten.topk"):
            self._convert(op)

    def _convert(self, op: ir.Operation) -> None:
        builtin = _builtin_type(op.operands[0].type)
        is_topk = op.name == "torch.aten.topk"
        if builtin is None or (
            is_topk
            and builtin.has_static_shape
            and not isinstance(builtin.element_type, ir.FloatType)
        ):
            return  # torch-mlir's conversion takes it
        # sort(self, dim, descending); topk(self, k, dim, largest, sorted)
        k, dim, descending = (
            (_constant(op.operands[1]), _constant(op.operands[2]), _constant(op.operands[3]))
            if is_topk
            else (None, _constant(op.operands[1]), _constant(op.operands[2]))
        )
        if dim is None or descending is None or (is_topk and k is None):
            return
        dim = int(dim) % builtin.rank
        with ir.InsertionPoint(op), op.location:
            values = create_value("torch_c.to_builtin_tensor", [op.operands[0]], builtin)
            results = list(_sort(values, dim, bool(descending)))
            if is_topk:
                results = [
                    _first(result, dim, int(k), _builtin_type(torch_result.type))
                    for result, torch_result in zip(results, op.results, strict=True)
                ]
            for result, torch_result in zip(results, op.results, strict=True):
                torch_result.replace_all_uses_with(_from_builtin(result, torch_result.type))
        op.erase()
