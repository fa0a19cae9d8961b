"""shlo-lower-scatter: lower stablehlo.scatter to a loop nest over the update elements.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.scatter`` alone. Each scatter becomes one ``scf.for`` per update
dimension, in row-major order, so updates to the same element apply in
update-index order. The innermost body computes the result index from the
scatter, batching and window indices, skips it when it is out of bounds (per
element, as the StableHLO spec and its interpreter do), and otherwise runs the
update computation, moved inline, on 0-d tensors. Loops carry unsigned
tensors bitcast to signless, and read indices converted to i64. A
computation of elementwise ops runs without a branch: out of bounds, the
element at index 0 is computed and written back unchanged (a select), so
that bufferization never allocates inside a branch (below).

Whole rows at once: when the updates' last dimension is a window over all
of the result's last dimension, which no index moves, and the update
computation is elementwise ops on its two arguments (a scatter-add, -max,
...), the loops stop one dimension short, one bounds check covers the row,
and the computation runs on the row as 1-D slices, which vectorize.
``jax.ops.segment_sum`` of [100000, 16] into 1000 segments: 0.92 -> 0.30
ms (XLA 0.32; with ``eliminate-empty-tensors``, without which each row's
result was a fresh buffer copied back: 4.1 ms).

  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<
      inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<5xf32>
  ==>
  %0 = scf.for %k = %c0 to %c2 step %c1 iter_args(%acc = %x) -> (tensor<5xf32>) {
    %start = tensor.extract %i[%k, %c0] : tensor<2x1xi64>
    %in = arith.andi %start_ge_0, %start_lt_5 : i1
    %j = arith.select %in, %start_index, %c0 : index
    %a = tensor.from_elements %acc_at_j : tensor<f32>
    %b = tensor.from_elements %u_at_k : tensor<f32>
    %s = stablehlo.add %a, %b : tensor<f32>
    %v = arith.select %in, %s_scalar, %acc_at_j : f32
    %n = tensor.insert %v into %acc[%j] : tensor<5xf32>
    scf.yield %n : tensor<5xf32>
  }

Other computations, and whole rows, are updated in an ``scf.if %in``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from shlo._mlir_compat import arith, ir, scf, tensor
from shlo.analysis.indexing import ELEMENTWISE_OPS
from shlo.ir_utils import attribute_dict, index_constant, is_static, ops_named
from shlo.pass_framework import Pass, PassError

# Besides ELEMENTWISE_OPS but stablehlo.map (whose region holds anything), what an
# update computation may hold to run without a bounds check.
_SPECULATABLE = frozenset(("stablehlo.constant", "stablehlo.return"))

_DIMENSION_FIELD = re.compile(r"(\w+)\s*=\s*(\[[^\]]*\]|-?\d+)")


@dataclass(frozen=True)
class ScatterDims:
    """The fields of a ``#stablehlo.scatter<...>`` attribute (omitted lists are empty)."""

    update_window_dims: tuple[int, ...] = ()
    inserted_window_dims: tuple[int, ...] = ()
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()
    scatter_dims_to_operand_dims: tuple[int, ...] = ()
    index_vector_dim: int = 0

    @classmethod
    def of(cls, op: ir.Operation) -> ScatterDims:
        # Parsed from the printed attribute: the pinned bindings' attribute
        # class is not exported through _mlir_compat.
        values: dict[str, Any] = {}
        for name, raw in _DIMENSION_FIELD.findall(str(op.attributes["scatter_dimension_numbers"])):
            if name not in cls.__dataclass_fields__:
                raise PassError(
                    op.location, f"expected known scatter dimension numbers, got {name}"
                )
            values[name] = (
                tuple(int(v) for v in raw[1:-1].split(",") if v.strip())
                if raw.startswith("[")
                else int(raw)
            )
        return cls(**values)


def _storage_type(element: ir.Type) -> ir.Type:
    """Signless integers replace unsigned ones in values the loops carry."""
    if isinstance(element, ir.IntegerType) and element.is_unsigned:
        return ir.IntegerType.get_signless(element.width)
    return element


# Elementwise ops a whole-row update may apply (a scatter-add, -mul, -max...).
_ROW_OPS = frozenset(
    f"stablehlo.{name}"
    for name in ("add", "multiply", "maximum", "minimum", "subtract", "and", "or", "xor")
)


def _row_slice(rank: int, length: int) -> tuple[ir.Attribute, ir.Attribute, ir.Attribute]:
    """The static offsets (all dynamic), sizes and strides of a slice of one row of
    ``length`` at the end of a tensor of ``rank``."""
    return (
        ir.DenseI64ArrayAttr.get([ir.ShapedType.get_dynamic_size()] * rank),
        ir.DenseI64ArrayAttr.get([1] * (rank - 1) + [length]),
        ir.DenseI64ArrayAttr.get([1] * rank),
    )


def _tensor_type(shape: list[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, element)


def _stablehlo(name: str, value: ir.Value, result: ir.Type) -> ir.Value:
    return ir.Operation.create(name, results=[result], operands=[value]).result


def _cast(value: ir.Value, element: ir.Type, op_name: str = "stablehlo.convert") -> ir.Value:
    """``value`` with element type ``element`` (a no-op when it already has it)."""
    value_type = ir.RankedTensorType(value.type)
    if value_type.element_type == element:
        return value
    return _stablehlo(op_name, value, _tensor_type(list(value_type.shape), element))


def _i64(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(64), value).result


def _to_storage(value: ir.Value, element: ir.Type) -> ir.Value:
    """``value`` converted to ``element``, then bitcast to its storage type."""
    return _cast(_cast(value, element), _storage_type(element), "stablehlo.bitcast_convert")


class _ScatterLowering:
    """Builds the loop nest replacing one scatter op."""

    def __init__(self, op: ir.Operation) -> None:
        self.op = op
        count = len(op.results)
        operands = list(op.operands)
        if not all(is_static(v.type) for v in [*operands, *op.results]):
            raise PassError(op.location, "expected statically shaped operands")
        self.inputs = operands[:count]
        self.indices = operands[count]
        self.updates = operands[count + 1 :]
        self.block = op.regions[0].blocks[0]
        self.dims = ScatterDims.of(op)
        self.result_types = [ir.RankedTensorType(r.type) for r in op.results]
        self.operand_shape = list(self.result_types[0].shape)
        self.update_shape = list(ir.RankedTensorType(self.updates[0].type).shape)
        self.indices_rank = ir.RankedTensorType(self.indices.type).rank
        # The element types the update computation takes: results, then updates.
        self.region_types = [ir.RankedTensorType(a.type).element_type for a in self.block.arguments]
        # Operand dimensions that update_window_dims index, in order.
        self.window_dims = [
            d
            for d in range(len(self.operand_shape))
            if d not in self.dims.inserted_window_dims and d not in self.dims.input_batching_dims
        ]
        self.scatter_dims = [
            d for d in range(len(self.update_shape)) if d not in self.dims.update_window_dims
        ]
        self.row_ops = self._row_computation()

    def lower(self) -> None:
        count = len(self.inputs)
        with ir.InsertionPoint(self.op), self.op.location:
            # Indices of any integer type are read as i64 (unsigned ones zero-extended).
            self.indices_i64 = _cast(self.indices, ir.IntegerType.get_signless(64))
            inits = [
                _to_storage(value, result_type.element_type)
                for value, result_type in zip(self.inputs, self.result_types)
            ]
            self.update_values = [
                _to_storage(value, element)
                for value, element in zip(self.updates, self.region_types[count:])
            ]
            if 0 in self.operand_shape or 0 in self.update_shape:
                # Nothing to update, or every update is out of bounds.
                results = inits
            else:
                results = self._loops(0, [], inits)
            for old, new, result_type in zip(self.op.results, results, self.result_types):
                old.replace_all_uses_with(
                    _cast(new, result_type.element_type, "stablehlo.bitcast_convert")
                )
        self.op.erase()

    def _loops(self, dim: int, ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        """Loops over update dimensions ``dim``.. in row-major order, then the body."""
        if self.row_ops is not None and dim == len(self.update_shape) - 1:
            return self._body(ivs, carried, rows=True)
        if dim == len(self.update_shape):
            return self._body(ivs, carried)
        loop = scf.ForOp(
            index_constant(0), index_constant(self.update_shape[dim]), index_constant(1), carried
        )
        with ir.InsertionPoint(loop.body):
            inner = self._loops(
                dim + 1, [*ivs, loop.induction_variable], list(loop.inner_iter_args)
            )
            scf.YieldOp(inner)
        return list(loop.results)

    def _row_computation(self) -> list[ir.Operation] | None:
        """The update computation's ops, if whole rows can be updated at once; else None.

        Rows: one result and update, the updates' last dimension a window over
        all of the result's last dimension (which no index moves, so one
        bounds check covers the row), and a computation of elementwise ops
        on its arguments only (no constants, which are 0-d).
        """
        dims, last = self.dims, len(self.update_shape) - 1
        operand_last = len(self.operand_shape) - 1
        if len(self.inputs) != 1 or last not in dims.update_window_dims:
            return None
        if self.window_dims[dims.update_window_dims.index(last)] != operand_last:
            return None
        if operand_last in dims.scatter_dims_to_operand_dims:
            return None
        if self.update_shape[last] != self.operand_shape[operand_last]:
            return None
        ops = [op.operation for op in self.block.operations]
        if ops[-1].name != "stablehlo.return" or len(ops) < 2:
            return None
        known = set(self.block.arguments)
        for op in ops[:-1]:
            if op.name not in _ROW_OPS or not all(v in known for v in op.operands):
                return None
            known.update(op.results)
        if self.region_types[0] != self.region_types[1]:
            return None
        return ops

    def _update_row(
        self, ivs: list[ir.Value], result_index: list[ir.Value], carried: list[ir.Value]
    ) -> list[ir.Value]:
        """The computation on the row at ``result_index`` and the update row at ``ivs``."""
        (target,) = carried
        length = self.operand_shape[-1]
        storage = ir.RankedTensorType(target.type).element_type
        row_type = _tensor_type([length], storage)

        def row(source: ir.Value, offsets: list[ir.Value]) -> ir.Value:
            rank = ir.RankedTensorType(source.type).rank
            return tensor.ExtractSliceOp(
                row_type, source, offsets, [], [], *_row_slice(rank, length)
            ).result

        element = self.region_types[0]
        values = {
            self.block.arguments[0]: _cast(
                row(target, result_index), element, "stablehlo.bitcast_convert"
            ),
            self.block.arguments[1]: _cast(
                row(self.update_values[0], [*ivs, index_constant(0)]),
                element,
                "stablehlo.bitcast_convert",
            ),
        }
        for op in self.row_ops[:-1]:
            operands = [values[v] for v in op.operands]
            result = ir.RankedTensorType(op.results[0].type)
            created = ir.Operation.create(
                op.name,
                results=[_tensor_type([length], result.element_type)],
                operands=operands,
                attributes=attribute_dict(op),
            )
            values[op.results[0]] = created.results[0]
        computed = _cast(values[self.row_ops[-1].operands[0]], storage, "stablehlo.bitcast_convert")
        rank = len(self.operand_shape)
        inserted = tensor.InsertSliceOp(
            computed, target, result_index, [], [], *_row_slice(rank, length)
        ).result
        return [inserted]

    def _result_index(self, ivs: list[ir.Value]) -> tuple[list[ir.Value], ir.Value | None]:
        """The result index of update element ``ivs`` and whether it is in bounds (None: always)."""
        dims = self.dims
        scatter_index = [ivs[d] for d in self.scatter_dims]
        vector_dim = dims.index_vector_dim
        start: dict[int, ir.Value] = {}
        for k, operand_dim in enumerate(dims.scatter_dims_to_operand_dims):
            position = list(scatter_index)
            if vector_dim < self.indices_rank:
                position.insert(vector_dim, index_constant(k))
            start[operand_dim] = tensor.ExtractOp(self.indices_i64, position).result
        batching = {
            operand_dim: scatter_index[d if d < vector_dim else d - 1]
            for operand_dim, d in zip(dims.input_batching_dims, dims.scatter_indices_batching_dims)
        }
        window = {
            operand_dim: ivs[update_dim]
            for operand_dim, update_dim in zip(self.window_dims, dims.update_window_dims)
        }
        i64 = ir.IntegerType.get_signless(64)
        index_type = ir.IndexType.get()
        result_index: list[ir.Value] = []
        in_bounds: ir.Value | None = None
        for d, size in enumerate(self.operand_shape):
            if d in start:
                # start + window in [0, size), compared as start in [-window, size - window)
                # so that huge start indices cannot overflow.
                s = start[d]
                low, high = _i64(0), _i64(size)
                if d in window:
                    w = arith.IndexCastOp(i64, window[d]).result
                    low = arith.SubIOp(low, w).result
                    high = arith.SubIOp(high, w).result
                above = arith.CmpIOp(arith.CmpIPredicate.sge, s, low).result
                below = arith.CmpIOp(arith.CmpIPredicate.slt, s, high).result
                check = arith.AndIOp(above, below).result
                in_bounds = check if in_bounds is None else arith.AndIOp(in_bounds, check).result
                value = arith.IndexCastOp(index_type, s).result
                if d in window:
                    value = arith.AddIOp(value, window[d]).result
            elif d in batching:
                value = batching[d]
            elif d in window:
                value = window[d]
            else:
                value = index_constant(0)
            result_index.append(value)
        return result_index, in_bounds

    def _body(
        self, ivs: list[ir.Value], carried: list[ir.Value], rows: bool = False
    ) -> list[ir.Value]:
        """The update of element ``ivs``, or of its whole row (``rows``: ``ivs`` lacks the
        last index), when in bounds."""
        update = self._update_row if rows else self._update
        result_index, in_bounds = self._result_index([*ivs, index_constant(0)] if rows else ivs)
        if in_bounds is None:
            return update(ivs, result_index, carried)
        if not rows and self._speculatable():
            # Without a branch: an update out of bounds writes element 0 back as it is.
            # Under an scf.if, a scatter into a tensor bufferization may not write
            # (a constant) copied it into a buffer the branch allocated and yielded,
            # which shlo-free-after-last-use leaves to upstream's deallocation
            # (wav2vec2's attention mask: 130 ms of its compile).
            zero = index_constant(0)
            clamped = [arith.SelectOp(in_bounds, i, zero).result for i in result_index]
            return self._update(ivs, clamped, carried, in_bounds)
        branch = scf.IfOp(in_bounds, [v.type for v in carried], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp(update(ivs, result_index, carried))
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp(carried)
        return list(branch.results)

    def _element(self, source: ir.Value, index: list[ir.Value], element: ir.Type) -> ir.Value:
        """``source[index]`` as a 0-d tensor of ``element``."""
        scalar = tensor.ExtractOp(source, index).result
        storage = _tensor_type([], scalar.type)
        zero_d = tensor.FromElementsOp(storage, [scalar]).result
        return _cast(zero_d, element, "stablehlo.bitcast_convert")

    def _speculatable(self) -> bool:
        """Whether the update computation may run where no update applies: elementwise
        ops and constants only (integer division is guarded by its lowering)."""
        return all(
            op.operation.name in _SPECULATABLE
            or (op.operation.name in ELEMENTWISE_OPS and op.operation.name != "stablehlo.map")
            for op in self.block.operations
        )

    def _update(
        self,
        ivs: list[ir.Value],
        result_index: list[ir.Value],
        carried: list[ir.Value],
        applies: ir.Value | None = None,
    ) -> list[ir.Value]:
        """Apply the update computation at ``result_index``; the updated tensors. Where
        ``applies`` is false, each keeps its element there."""
        count = len(carried)
        arguments = [
            self._element(value, result_index, element)
            for value, element in zip(carried, self.region_types[:count])
        ] + [
            self._element(value, ivs, element)
            for value, element in zip(self.update_values, self.region_types[count:])
        ]
        for block_argument, value in zip(self.block.arguments, arguments):
            block_argument.replace_all_uses_with(value)
        # The computation runs once per element, so its ops move here unchanged.
        insertion = ir.InsertionPoint.current
        returned: list[ir.Value] = []
        for inner in list(self.block.operations):
            if inner.operation.name == "stablehlo.return":
                returned = list(inner.operands)
                inner.operation.erase()
                break
            insertion.insert(inner.operation.detach_from_parent())
        updated = []
        for value, target in zip(returned, carried):
            element = ir.RankedTensorType(target.type).element_type
            scalar = tensor.ExtractOp(_cast(value, element, "stablehlo.bitcast_convert"), []).result
            if applies is not None:
                kept = tensor.ExtractOp(target, result_index).result
                scalar = arith.SelectOp(applies, scalar, kept).result
            updated.append(tensor.InsertOp(scalar, target, result_index).result)
        return updated


@dataclass(frozen=True)
class LowerScatterPass(Pass):
    """Lower stablehlo.scatter to a loop nest over the update elements."""

    argument: ClassVar[str] = "shlo-lower-scatter"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.scatter"):
            _ScatterLowering(op).lower()
