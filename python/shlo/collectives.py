"""StableHLO's collective ops as explicit data movement between the processes of a grid.

Shared by ``shlo-lower-collectives`` (a grid of one process) and
``shlo-unroll-replicas`` (every process of ``interpreter.run_parallel``
inlined into one function). Both hand this module the ops that take part in
one rendezvous, one op per process; it computes every process's results
from the operands of all of them, at the current insertion point, and erases
the ops. Process groups follow the spec's "Collective ops" section: the
``cross_replica``, ``cross_partition``, ``cross_replica_and_partition`` and
``flattened_ids`` strategies, with ``-1`` padding dropped from ragged groups.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shlo._mlir_compat import ir, quant
from shlo.ir_utils import concatenate, create_value, ops_named, slice_dimension
from shlo.pass_framework import PassError

ProcessId = tuple[int, int]  # (replica_id, partition_id)

# Ops whose results depend on other processes' operands.
COLLECTIVES = (
    "stablehlo.all_gather",
    "stablehlo.all_reduce",
    "stablehlo.all_to_all",
    "stablehlo.collective_broadcast",
    "stablehlo.collective_permute",
    "stablehlo.collective_reduce",
    "stablehlo.reduce_scatter",
)
POINT_TO_POINT = ("stablehlo.send", "stablehlo.recv")
PROCESS_IDS = ("stablehlo.replica_id", "stablehlo.partition_id")
TOKEN_PRODUCERS = ("stablehlo.after_all", "stablehlo.create_token")

# Ops whose process groups come from all_reduce's three strategies.
_REPLICA_AND_PARTITION_OPS = (
    "stablehlo.all_gather",
    "stablehlo.all_reduce",
    "stablehlo.reduce_scatter",
    # The spec's section names cross_partition, but the op carries
    # use_global_device_ids; the reference interpreter uses these strategies.
    "stablehlo.collective_reduce",
)
# Ops where a process outside every group gets zeros instead of an error.
_ZEROS_OUTSIDE_GROUPS = (
    "stablehlo.collective_broadcast",
    "stablehlo.collective_permute",
    "stablehlo.collective_reduce",
)
_CHANNEL = re.compile(r"handle\s*=\s*(-?\d+)")


@dataclass(frozen=True)
class Grid:
    """The process grid: ``num_replicas`` x ``num_partitions`` processes."""

    num_replicas: int
    num_partitions: int

    def processes(self) -> list[ProcessId]:
        """Every process, replica-major (the order of run_parallel's ``programs``)."""
        return [(r, p) for r in range(self.num_replicas) for p in range(self.num_partitions)]


@dataclass(frozen=True)
class Rendezvous:
    """The processes whose ops execute one collective together.

    ``members`` are in process-group order; for collective_permute they are
    the processes connected by source_target_pairs. ``in_group`` is false for
    a process outside every group (it gets zeros on its own).
    """

    members: tuple[ProcessId, ...]
    in_group: bool


# --- reading attributes -------------------------------------------------------------------


def channel_id(op: ir.Operation) -> int:
    if "channel_handle" not in op.attributes:
        return 0
    match = _CHANNEL.search(str(op.attributes["channel_handle"]))
    return int(match.group(1)) if match else 0


def _int_attr(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _has_unit(op: ir.Operation, name: str) -> bool:
    if name not in op.attributes:
        return False
    attr = op.attributes[name]
    return ir.BoolAttr(attr).value if isinstance(attr, ir.BoolAttr) else True


# More ids than any replica or partition grid the tools can run has.
_MAX_IDS = 1 << 20


def _id_lists(op: ir.Operation, name: str) -> list[list[int]]:
    """A 2-d id attribute as lists, without the ``-1`` padding of ragged groups."""
    attr = op.attributes[name]
    if not isinstance(attr, ir.DenseIntElementsAttr):
        raise PassError(op.location, f"expected {name} as a dense tensor of ids")
    shape = ir.ShapedType(attr.type).shape
    if len(shape) != 2:
        raise PassError(op.location, f"expected {name} of rank 2")
    if shape[1] == 0:
        return []  # only empty groups, however many rows the type claims
    if shape[0] * shape[1] > _MAX_IDS:
        # A splat can claim billions of ids; no real grid has that many processes.
        raise PassError(op.location, f"expected {name} with at most {_MAX_IDS} ids, got {shape}")
    if attr.is_splat:
        rows = np.full(shape, ir.IntegerAttr(attr.get_splat_value()).value, dtype=np.int64)
    else:
        rows = np.array(attr, dtype=np.int64).reshape(shape)
    return [[int(i) for i in row if i != -1] for row in rows]


# --- process groups -----------------------------------------------------------------------


def _check_ids(op: ir.Operation, ids: Sequence[int], limit: int, what: str) -> None:
    for id_ in ids:
        if not 0 <= id_ < limit:
            raise PassError(op.location, f"expected {what} ids in [0, {limit}), got {id_}")


def _cross_replica(op: ir.Operation, groups: list[list[int]], grid: Grid) -> list[list[ProcessId]]:
    _check_ids(op, [i for g in groups for i in g], grid.num_replicas, "replica")
    return [[(r, p) for r in group] for group in groups for p in range(grid.num_partitions)]


def _cross_partition(
    op: ir.Operation, groups: list[list[int]], grid: Grid
) -> list[list[ProcessId]]:
    _check_ids(op, [i for g in groups for i in g], grid.num_partitions, "partition")
    return [[(r, p) for p in group] for group in groups for r in range(grid.num_replicas)]


def _cross_replica_and_partition(
    op: ir.Operation, groups: list[list[int]], grid: Grid
) -> list[list[ProcessId]]:
    _check_ids(op, [i for g in groups for i in g], grid.num_replicas, "replica")
    return [[(r, p) for p in range(grid.num_partitions) for r in group] for group in groups]


def _flattened_ids(op: ir.Operation, groups: list[list[int]], grid: Grid) -> list[list[ProcessId]]:
    count = grid.num_replicas * grid.num_partitions
    _check_ids(op, [i for g in groups for i in g], count, "flattened process")
    return [[divmod(i, grid.num_partitions) for i in group] for group in groups]


def process_groups(op: ir.Operation, grid: Grid) -> list[list[ProcessId]]:
    """The spec's process groups of ``op`` (pairs for collective_permute)."""
    name = op.name
    if name == "stablehlo.collective_permute":
        pairs = _id_lists(op, "source_target_pairs")
        if channel_id(op) > 0:
            return _cross_partition(op, pairs, grid)
        return _cross_replica(op, pairs, grid)
    groups = _id_lists(op, "replica_groups")
    if not any(groups):
        # XLA's convention: no groups means one group of everything.
        size = grid.num_replicas
        if name in ("stablehlo.all_to_all", "stablehlo.collective_broadcast") and channel_id(op):
            size = grid.num_partitions
        elif _has_unit(op, "use_global_device_ids"):
            size = grid.num_replicas * grid.num_partitions
        groups = [list(range(size))]
    if name in _REPLICA_AND_PARTITION_OPS:
        global_ids = _has_unit(op, "use_global_device_ids")
        if channel_id(op) <= 0:
            if global_ids:
                raise PassError(
                    op.location, "expected a positive channel_id with use_global_device_ids"
                )
            return _cross_replica(op, groups, grid)
        if global_ids:
            return _flattened_ids(op, groups, grid)
        return _cross_replica_and_partition(op, groups, grid)
    if channel_id(op) > 0:
        return _cross_partition(op, groups, grid)
    return _cross_replica(op, groups, grid)


def rendezvous(op: ir.Operation, grid: Grid, process: ProcessId) -> Rendezvous:
    """Which processes execute ``op`` together with ``process``."""
    groups = process_groups(op, grid)
    if op.name == "stablehlo.collective_permute":
        # Every process linked to this one by a chain of pairs.
        members, frontier = {process}, [process]
        while frontier:
            current = frontier.pop()
            for source, target in groups:
                for a, b in ((source, target), (target, source)):
                    if a == current and b not in members:
                        members.add(b)
                        frontier.append(b)
        return Rendezvous(tuple(sorted(members)), True)
    for group in groups:
        if process in group:
            return Rendezvous(tuple(group), True)
    if op.name in _ZEROS_OUTSIDE_GROUPS:
        return Rendezvous((process,), False)
    raise PassError(op.location, f"expected process {process} in one of the process groups")


# --- building ops -------------------------------------------------------------------------


def _tensor(value: ir.Value) -> ir.RankedTensorType:
    return ir.RankedTensorType(value.type)


def zeros(type_: ir.RankedTensorType) -> ir.Value:
    """A constant of ``type_`` holding zeros (the zero point for quantized types)."""
    element = type_.element_type
    if isinstance(element, quant.UniformQuantizedType):
        storage = ir.RankedTensorType.get(type_.shape, element.storage_type)
        value = ir.DenseElementsAttr.get_splat(
            storage, ir.IntegerAttr.get(element.storage_type, element.zero_point)
        )
    elif isinstance(element, ir.ComplexType):
        dtype = np.complex128 if str(element.element_type) == "f64" else np.complex64
        value = ir.DenseElementsAttr.get(np.zeros(type_.shape, dtype), type=type_)
    elif isinstance(element, ir.IntegerType):
        value = ir.DenseElementsAttr.get_splat(type_, ir.IntegerAttr.get(element, 0))
    elif isinstance(element, ir.FloatType):
        value = ir.DenseElementsAttr.get_splat(type_, ir.FloatAttr.get(element, 0.0))
    else:
        raise PassError(ir.Location.current, f"expected a tensor type with a zero, got {type_}")
    return create_value("stablehlo.constant", [], type_, value=value)


def process_id_constant(op: ir.Operation, value: int) -> None:
    """Replace replica_id or partition_id by the constant ``value``, before ``op``."""
    type_ = ir.RankedTensorType(op.results[0].type)
    with ir.InsertionPoint(op), op.location:
        attr = ir.DenseElementsAttr.get_splat(type_, ir.IntegerAttr.get(type_.element_type, value))
        constant = create_value("stablehlo.constant", [], type_, value=attr)
    op.results[0].replace_all_uses_with(constant)
    op.erase()


def _reshape(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    type_ = _tensor(value)
    if list(type_.shape) == list(shape):
        return value
    return create_value(
        "stablehlo.reshape", [value], ir.RankedTensorType.get(shape, type_.element_type)
    )


def _convert(value: ir.Value, element: ir.Type) -> ir.Value:
    type_ = _tensor(value)
    if type_.element_type == element:
        return value
    return create_value("stablehlo.convert", [value], ir.RankedTensorType.get(type_.shape, element))


def _apply(region_owner: ir.Operation, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``computation(lhs, rhs)`` elementwise: a stablehlo.map over a copy of the region."""
    copy = region_owner.clone(ip=ir.InsertionPoint(region_owner))
    type_ = _tensor(lhs)
    mapped = ir.Operation.create(
        "stablehlo.map",
        results=[type_],
        operands=[lhs, rhs],
        attributes={"dimensions": ir.DenseI64ArrayAttr.get(list(range(type_.rank)))},
        regions=1,
    )
    copy.regions[0].blocks[0].append_to(mapped.regions[0])
    copy.erase()
    return mapped.result


def _reduce(ops: Sequence[ir.Operation], operand_index: int) -> ir.Value:
    """The left fold of the computation over ``ops``' operands, in process-group order.

    The spec allows any schedule whose in-order traversal is the group order;
    this is the linear one.
    """
    element = ir.RankedTensorType(ops[0].regions[0].blocks[0].arguments[0].type).element_type
    values = [_convert(op.operands[operand_index], element) for op in ops]
    result = values[0]
    for value in values[1:]:
        result = _apply(ops[0], result, value)
    return result


def _root_index(op: ir.Operation, index: int) -> ir.Value:
    """Element ``index`` of a dynamic-root operand (the last one) as a tensor<i32>."""
    roots = op.operands[len(op.operands) - 1]
    return _reshape(slice_dimension(roots, 0, index, index + 1), [])


def _select_by_index(index: ir.Value, values: Sequence[ir.Value]) -> ir.Value:
    """``values[index]``; an out-of-range index is clamped (the spec leaves it undefined)."""
    type_ = _tensor(values[0])
    stacked = concatenate([_reshape(v, [1, *type_.shape]) for v in values], 0)
    zero = create_value(
        "stablehlo.constant",
        [],
        ir.RankedTensorType.get([], _tensor(index).element_type),
        value=ir.DenseElementsAttr.get_splat(
            _tensor(index), ir.IntegerAttr.get(_tensor(index).element_type, 0)
        ),
    )
    picked = create_value(
        "stablehlo.dynamic_slice",
        [stacked, index, *[zero] * type_.rank],
        ir.RankedTensorType.get([1, *type_.shape], type_.element_type),
        slice_sizes=ir.DenseI64ArrayAttr.get([1, *type_.shape]),
    )
    return _reshape(picked, list(type_.shape))


def _data_count(op: ir.Operation) -> int:
    dynamic = _has_unit(op, "has_dynamic_root")
    return len(op.operands) - (1 if dynamic else 0)


# --- the collectives ------------------------------------------------------------------------

_Ops = dict[ProcessId, ir.Operation]
_Results = dict[ProcessId, list[ir.Value]]


def _all_gather(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    group = [ops[p] for p in meeting.members]
    dimension = _int_attr(group[0], "all_gather_dim")
    gathered = [
        concatenate([op.operands[i] for op in group], dimension)
        for i in range(len(group[0].operands))
    ]
    return {p: gathered for p in meeting.members}


def _all_reduce(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    group = [ops[p] for p in meeting.members]
    reduced = [_reduce(group, i) for i in range(len(group[0].operands))]
    return {p: reduced for p in meeting.members}


def _reduce_scatter(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    group = [ops[p] for p in meeting.members]
    dimension = _int_attr(group[0], "scatter_dimension")
    reduced = _reduce(group, 0)
    size = _tensor(reduced).shape[dimension] // len(group)
    return {
        p: [slice_dimension(reduced, dimension, j * size, (j + 1) * size)]
        for j, p in enumerate(meeting.members)
    }


def _all_to_all(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    group = [ops[p] for p in meeting.members]
    first = group[0]
    split, concat = _int_attr(first, "split_dimension"), _int_attr(first, "concat_dimension")
    count = _int_attr(first, "split_count")
    if count != len(group):
        raise PassError(
            first.location, f"expected split_count {count} equal to the group size {len(group)}"
        )
    results = {}
    for j, p in enumerate(meeting.members):
        values = []
        for i in range(len(first.operands)):
            size = _tensor(first.operands[i]).shape[split] // count
            parts = [
                slice_dimension(op.operands[i], split, j * size, (j + 1) * size) for op in group
            ]
            values.append(concatenate(parts, concat))
        results[p] = values
    return results


def _collective_broadcast(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    if not meeting.in_group:
        (p,) = meeting.members
        return {p: [zeros(ir.RankedTensorType(r.type)) for r in ops[p].results]}
    group = [ops[p] for p in meeting.members]
    dynamic = _has_unit(group[0], "has_dynamic_root")
    results = {}
    for p in meeting.members:
        values = []
        for i in range(_data_count(group[0])):
            if dynamic:
                # Each process picks the root with its own root operand.
                candidates = [op.operands[i] for op in group]
                values.append(_select_by_index(_root_index(ops[p], i), candidates))
            else:
                values.append(group[0].operands[i])
        results[p] = values
    return results


def _collective_permute(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    pairs = process_groups(ops[meeting.members[0]], grid)
    results = {}
    for p in meeting.members:
        sources = [source for source, target in pairs if target == p]
        if sources:
            results[p] = [ops[sources[0]].operands[0]]
        else:
            results[p] = [zeros(ir.RankedTensorType(ops[p].results[0].type))]
    return results


def _collective_reduce(ops: _Ops, meeting: Rendezvous, grid: Grid) -> _Results:
    if not meeting.in_group:
        (p,) = meeting.members
        return {p: [zeros(ir.RankedTensorType(r.type)) for r in ops[p].results]}
    group = [ops[p] for p in meeting.members]
    dynamic = _has_unit(group[0], "has_dynamic_root")
    results: dict[ProcessId, list[ir.Value]] = {p: [] for p in meeting.members}
    for i in range(_data_count(group[0])):
        reduced = _reduce(group, i)
        zero = zeros(_tensor(reduced)) if len(group) > 1 or dynamic else reduced
        for j, p in enumerate(meeting.members):
            if not dynamic:
                results[p].append(reduced if j == 0 else zero)
                continue
            # Only the root (picked by this process's own root operand) keeps the sum.
            index = _root_index(ops[p], i)
            mine = create_value(
                "stablehlo.constant",
                [],
                _tensor(index),
                value=ir.DenseElementsAttr.get_splat(
                    _tensor(index), ir.IntegerAttr.get(_tensor(index).element_type, j)
                ),
            )
            is_root = create_value(
                "stablehlo.compare",
                [index, mine],
                ir.RankedTensorType.get([], ir.IntegerType.get_signless(1)),
                comparison_direction=ir.Attribute.parse("#stablehlo<comparison_direction EQ>"),
            )
            results[p].append(
                create_value("stablehlo.select", [is_root, reduced, zero], reduced.type)
            )
    return results


_LOWERINGS = {
    "stablehlo.all_gather": _all_gather,
    "stablehlo.all_reduce": _all_reduce,
    "stablehlo.all_to_all": _all_to_all,
    "stablehlo.collective_broadcast": _collective_broadcast,
    "stablehlo.collective_permute": _collective_permute,
    "stablehlo.collective_reduce": _collective_reduce,
    "stablehlo.reduce_scatter": _reduce_scatter,
}


def lower_rendezvous(ops: dict[ProcessId, ir.Operation], meeting: Rendezvous, grid: Grid) -> None:
    """Replace the results of ``ops`` (one per member) at the current insertion point."""
    first = ops[meeting.members[0]]
    with first.location:
        results = _LOWERINGS[first.name](ops, meeting, grid)
    for p in meeting.members:
        op = ops[p]
        for old, new in zip(op.results, results[p]):
            if old.type != new.type:
                raise PassError(op.location, f"expected result type {new.type}, got {old.type}")
            old.replace_all_uses_with(new)
    for p in meeting.members:
        ops[p].erase()


def erase_dead_tokens(root: ir.Operation) -> None:
    """Erase after_all and create_token ops whose tokens nothing uses any more."""
    changed = True
    while changed:
        changed = False
        for op in ops_named(root, *TOKEN_PRODUCERS):
            if not list(op.results[0].uses):
                op.erase()
                changed = True
