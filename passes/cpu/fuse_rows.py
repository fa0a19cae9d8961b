"""shlo-fuse-rows: compute a reduction and the ops that reuse its rows one block of rows at a time.

Ours because upstream is missing: MLIR has the transforms
(``tile_using_forall``, ``fuse_into_containing_op``) but nothing that picks
the ops to fuse; this is XLA's row-reduction fusion. After elementwise fusion,
softmax over [2048, 8192] is four loop nests (max, exp, sum, divide) that
stream its 67 MB arrays through memory six times: 400 MB of traffic. In one
loop over blocks of rows, a block stays in cache from the first nest to the
last: 134 MB, the input read once and the result written once.

A group grows from a ``linalg.generic`` reduction whose leading loops are
parallel, the rows. It takes in the ``linalg.generic`` and ``linalg.fill`` ops
connected to it that walk the same rows: each operand of each member either
starts with the row dimensions, in order, or does not depend on them (a bias,
a scalar), and values passed between members start with them. Only the last
member may be used outside the group: the group grows no further past a
member used outside, and such a member that is not the last stays out, with
what feeds it. A group is kept when a reduction's result is read by another
member, at least two members walk whole rows, and its values (``min-bytes``,
by default 4 MiB) would not stay in a core's L2 cache between loop nests:
softmax over [2048, 8192] (64 MB) ran in 9.0 ms instead of 13.7, and over
[512, 4096] (24 MB of values, which the separate nests read from the L3
cache) in 0.65 ms instead of 0.91 (``bench/fuse_rows.py``).

With ``stage-long-chains`` (the default), an elementwise op whose body is a
long chain of math functions is cut in two ops (``chain_stages``), and the two
form a group of their own: blocks of 1024 values that stay in the L1 cache
between the stages, so that each loop's body is half as long and the core
overlaps its iterations (the bench's chain of tanh, exp and sqrt: 1.50 ->
1.27 ms, the same bits).

The pass tags the members and writes a transform sequence that
``transform-interpreter`` applies next: the last member is tiled by an
``scf.forall`` over blocks of rows (as many rows as keep the block's values in
the L1 cache, and enough blocks for ``threads``), and the other members are
fused into it, last first. ``shlo-plan-vector-codegen`` then vectorizes each
member inside the block, without threads of its own.

  %max = linalg.generic {... ["parallel", "reduction"]} ins(%x) outs(%fill0)  // rows: d0
  %e = linalg.generic {... ["parallel", "parallel"]} ins(%max, %x) outs(...)  // exp(x - max)
  %sum = linalg.generic {... ["parallel", "reduction"]} ins(%e) outs(%fill1)
  %y = linalg.generic {... ["parallel", "parallel"]} ins(%sum, %e) outs(...)  // e / sum
  ==>  (x: tensor<2048x8192xf32>; a row's values take just over 96 KB: blocks of 1 row)
  %y = scf.forall (%i) in (2048) shared_outs(%out = %empty) -> (tensor<2048x8192xf32>) {
    // the four ops (and fills) on tensor<1x8192xf32> and tensor<1xf32> slices
  }
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.backends.cpu.codegen_recipes import (
    canonicalize_functions,
    main_sequence,
    sizes_text,
    suppressed_sequence,
)
from shlo.ir_utils import defining_op, linalg_generic_parts, static_shape
from shlo.pass_framework import Pass
from shlo.passes.cpu.chain_stages import heavy_enough, split_long_chain
from shlo.passes.cpu.insert_codegen_recipes import append_transform_sequence

TAG = "shlo.row_op"
# The values of one block of rows should fit in this much cache: the L1 data
# cache of Zen 4 (Intel's AVX-512 cores have 48 KB), where they stay from
# the first loop nest to the last (a row larger than that is a block of its
# own). With the 192 KB of an L2-sized block, softmax [512, 4096] ran in
# blocks of 2 rows and layernorm [1024, 1024] of 16; with 32 KB, of 1 and 2
# rows, 1.07x and 1.14x as fast in a loop of calls, 1.14x and 1.17x right
# after the machine idled (bench/README.md, "Blocks of rows").
BLOCK_BYTES = 32 << 10
# A block whose rows need more than this has no cache to stay in.
MAX_ROW_BYTES = 4 << 20
# Groups whose values fit in a core's L2 cache (1-2 MiB) stay there between
# loop nests. Above it the nests stream from L3, and blocks of rows were
# 0.71-0.82x their time from 4 MB of input up; until the runtime kept freed
# blocks per thread, the blocks' buffers met on one lock and groups below the
# 32 MiB L3 cache gained nothing (0.87-1.07x).
MIN_GROUP_BYTES = 4 << 20
# A staged chain's block of values: its input and two stages' results in 12
# KB, 1024 f32 values of each (the bench's chain: 1.255 ms against 1.296 for
# 2048 and 1.277 for 512, medians of 150 interleaved calls). Blocks hold at
# least MIN_STAGED_BLOCK values (a loop over fewer pays its start for too
# little work: 64 values a block ran 1.13x as long as 256 or 1024 in C).
STAGED_BLOCK_BYTES = 12 << 10
MIN_STAGED_BLOCK = 256


@dataclass(frozen=True)
class _Member:
    """What grouping needs of one op: its loops and how its operands walk the rows."""

    op: ir.Operation
    sizes: tuple[int, ...]
    reduces: bool
    # The number of leading parallel loops every operand either starts with or ignores.
    max_rows: int
    # Per operand: how many leading loops (d0, d1, ...) its map starts with.
    leading: tuple[int, ...]
    row_bytes: int  # bytes of the result per point of its row loops (all loops but rows)
    # The IR around it, read once: grouping walks it for every reduction it
    # tries (the training step: 42 groups tried, 11,500 steps).
    producers: tuple[ir.Operation | None, ...]  # per operand, the op defining it
    users: tuple[tuple[ir.Operation, int], ...]  # the result's uses: owner, operand number


def _dims(map_: ir.AffineMap) -> list[int] | None:
    """The loop each result of ``map_`` walks (-1 for a constant 0); None for other expressions."""
    dims = []
    for expr in map_.results:
        if isinstance(expr, ir.AffineDimExpr):
            dims.append(ir.AffineDimExpr(expr).position)
        elif isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0:
            dims.append(-1)
        else:
            return None
    return dims


def _leading(dims: list[int]) -> int:
    count = 0
    while count < len(dims) and dims[count] == count:
        count += 1
    return count


def _element_bytes(value: ir.Value) -> int:
    element = ir.ShapedType(value.type).element_type
    return max(getattr(element, "width", 64) // 8, 1)


def _member(op: ir.Operation) -> _Member | None:
    if len(op.results) != 1 or static_shape(op.results[0]) is None:
        return None
    if op.name == "linalg.fill":
        shape = tuple(static_shape(op.results[0]) or ())
        rank = len(shape)
        row_bytes = _element_bytes(op.results[0])
        return _Member(op, shape, False, rank, (0, rank), row_bytes, *_neighbours(op))
    parts = linalg_generic_parts(op)
    operands = [*parts.inputs, *parts.outputs]
    maps = [ir.AffineMapAttr(m).value for m in (*parts.input_map_attrs, *parts.output_map_attrs)]
    kinds = ["parallel" in str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    sizes: list[int | None] = [None] * len(kinds)
    all_dims = []
    for operand, map_ in zip(operands, maps):
        dims = _dims(map_)
        if dims is None:
            return None
        all_dims.append(dims)
        if not isinstance(operand.type, ir.ShapedType):
            continue
        shape = static_shape(operand)
        if shape is None:
            return None
        for position, dim in enumerate(dims):
            if dim >= 0:
                sizes[dim] = shape[position]
    if None in sizes or not sizes:
        return None
    parallel_prefix = _leading([i if kind else -2 for i, kind in enumerate(kinds)])
    output_dims = all_dims[len(parts.inputs) :]
    max_rows = min([parallel_prefix, *(_leading(d) for d in output_dims)])
    # Each operand starts with the rows or ignores them.
    while max_rows and not all(
        _leading(d) >= max_rows or all(dim < 0 or dim >= max_rows for dim in d) for d in all_dims
    ):
        max_rows -= 1
    result_shape = static_shape(op.results[0]) or []
    row_bytes = math.prod(result_shape[max_rows:]) * _element_bytes(op.results[0])
    return _Member(
        op,
        tuple(sizes),  # type: ignore[arg-type]
        not all(kinds),
        max_rows,
        tuple(_leading(d) for d in all_dims),
        row_bytes,
        *_neighbours(op),
    )


def _neighbours(
    op: ir.Operation,
) -> tuple[tuple[ir.Operation | None, ...], tuple[tuple[ir.Operation, int], ...]]:
    producers = tuple(defining_op(operand) for operand in op.operands)
    users = tuple((use.owner.operation, use.operand_number) for use in op.results[0].uses)
    return producers, users


@dataclass(frozen=True)
class FuseRowsPass(Pass):
    """Tag row-reduction groups and staged long chains and write their tiling over blocks of rows."""

    argument: ClassVar[str] = "shlo-fuse-rows"
    threads: int = 1
    # Groups with fewer bytes of values than this are left alone.
    min_bytes: int = MIN_GROUP_BYTES
    # Long elementwise chains in two stages, a block of values at a time
    # (chain_stages); off where a precompiled kernel takes them instead.
    stage_long_chains: bool = True

    def run(self, module: ir.Operation) -> None:
        plans: list[str] = []
        tagged = 0
        for function in module.regions[0].blocks[0].operations:
            if function.operation.name != "func.func" or not function.regions[0].blocks:
                continue
            block = function.regions[0].blocks[0]
            groups = self._groups(block)
            if self.stage_long_chains:
                taken = {member.op for group in groups for member in group.members}
                groups += self._staged_chains(block, taken)
            for group in groups:
                first = tagged
                for member in group.members:
                    member.op.attributes[TAG] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), tagged
                    )
                    tagged += 1
                plans.append(_plan(group, first))
        # transform-interpreter needs a sequence, even an empty one.
        body = "".join(plans) + (_AFTER_FUSION if plans else "")
        append_transform_sequence(module, main_sequence(body))

    def _groups(self, block: ir.Block) -> list[_Group]:
        """The row-reduction groups of ``block``."""
        position: dict[ir.Operation, int] = {}
        members: dict[ir.Operation, _Member] = {}
        for index, op in enumerate(block.operations):
            op = op.operation
            position[op] = index
            if op.name in ("linalg.generic", "linalg.fill"):
                member = _member(op)
                if member is not None and member.max_rows:
                    members[op] = member
        taken: set[ir.Operation] = set()
        groups = []
        for op, seed in members.items():
            if op in taken or not seed.reduces:
                continue
            rows = seed.max_rows
            group = self._grow(seed, rows, members, taken)
            group = _keep_one_exit(group, rows, position)
            ordered = sorted(group.values(), key=lambda m: position[m.op])
            row_bytes = _bytes_per_row(ordered, rows)
            if _worth_fusing(group, rows, row_bytes, self.min_bytes):
                block_rows = self._block(ordered[-1].sizes[:rows], row_bytes, BLOCK_BYTES)
                groups.append(_Group(ordered, rows, block_rows))
                taken.update(group)
        return groups

    @staticmethod
    def _grow(
        seed: _Member, rows: int, members: dict[ir.Operation, _Member], taken: set[ir.Operation]
    ) -> dict[ir.Operation, _Member]:
        row_sizes = seed.sizes[:rows]

        def fits(op: ir.Operation | None) -> _Member | None:
            member = members.get(op) if op is not None else None
            if member is None or op in taken or member.max_rows < rows:
                return None
            return member if member.sizes[:rows] == row_sizes else None

        group = {seed.op: seed}
        work = [seed]
        while work:
            member = work.pop()
            for index, defined_by in enumerate(member.producers):
                producer = fits(defined_by)
                if producer and producer.op not in group and member.leading[index] >= rows:
                    group[producer.op] = producer
                    work.append(producer)
            # A member used outside the group ends it: nothing after it joins.
            consumers = [fits(owner) for owner, _ in member.users]
            if not all(
                c and _reads_rows(number, c, rows)
                for (_, number), c in zip(member.users, consumers, strict=True)
            ):
                continue
            for consumer in consumers:
                if consumer and consumer.op not in group:
                    group[consumer.op] = consumer
                    work.append(consumer)
        return group

    def _staged_chains(self, block: ir.Block, taken: set[ir.Operation]) -> list[_Group]:
        """Each long elementwise chain (``chain_stages``) cut in two, as a group of its
        two stages, where blocks of at least ``MIN_STAGED_BLOCK`` values fit."""
        groups = []
        for op in list(block.operations):
            op = op.operation
            if op.name != "linalg.generic" or op in taken or not heavy_enough(op):
                continue
            member = _member(op)
            if member is None or not member.max_rows or member.reduces:
                continue
            found = self._staged_block(member, len(op.operands) + 1)
            if found is None:
                continue
            stages = split_long_chain(op)
            if stages is not None:
                # The stages' operands are the op's: they walk its rows as it does.
                members = [_member(stage) for stage in stages]
                groups.append(_Group(members, *found))  # type: ignore[arg-type]
        return groups

    def _staged_block(self, member: _Member, arrays: int) -> tuple[int, int] | None:
        """The row loops and the rows of a block for a staged chain over ``arrays``
        f32 arrays (its inputs and both stages' results, at most): as many row loops
        as leave a block of at least ``MIN_STAGED_BLOCK`` values within
        ``STAGED_BLOCK_BYTES`` (a 4-D activation's blocks are rows of its last two
        dimensions, not whole planes that spill out of L1); None if none does."""
        for rows in range(member.max_rows, 0, -1):
            values_per_row = math.prod(member.sizes[rows:])
            if values_per_row * 4 * arrays > STAGED_BLOCK_BYTES:
                return None
            block = self._block(
                member.sizes[:rows], values_per_row * 4 * arrays, STAGED_BLOCK_BYTES
            )
            if block * values_per_row >= MIN_STAGED_BLOCK:
                return rows, block
        return None

    def _block(self, row_sizes: Sequence[int], row_bytes: int, budget: int) -> int:
        """The largest block of rows within ``budget`` bytes, leaving every thread
        blocks to run."""
        outer_blocks = math.prod(row_sizes[:-1])
        last = row_sizes[-1]
        wanted = min(4 * self.threads, last * outer_blocks)
        # From the largest that fits down: a chain's row loop may have millions.
        for candidate in range(min(last, budget // max(row_bytes, 1)), 1, -1):
            if last % candidate == 0 and outer_blocks * (last // candidate) >= wanted:
                return candidate
        return 1


@dataclass(frozen=True)
class _Group:
    """Ops that run in one loop over blocks of their rows: the members in order, the
    number of row loops, and the rows of the last row loop that make a block."""

    members: list[_Member]
    rows: int
    block: int


def _plan(group: _Group, first: int) -> str:
    """The transform that tiles the last member by an scf.forall over blocks of rows
    and fuses the others into it, last first; ``first``: the first member's tag."""
    members, rows = group.members, group.rows
    tile = [1] * (rows - 1) + [group.block] + [0] * (len(members[-1].sizes) - rows)
    lines = [
        f"%sink = transform.structured.match attributes {{{TAG} = {first + len(members) - 1}"
        " : i64} in %r : (!transform.any_op) -> !transform.any_op",
        "%tiled, %loop0 = transform.structured.tile_using_forall %sink"
        f" tile_sizes {sizes_text(tile)}"
        " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)",
    ]
    for step, index in enumerate(range(first + len(members) - 2, first - 1, -1)):
        lines += [
            f"%member{step} = transform.structured.match attributes {{{TAG} = {index} : i64}}"
            " in %r : (!transform.any_op) -> !transform.any_op",
            f"%fused{step}, %loop{step + 1} = transform.structured.fuse_into_containing_op"
            f" %member{step} into %loop{step}"
            " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)",
        ]
    return suppressed_sequence(lines)


# Fusion tiles a member once per use inside the loop: CSE merges the copies,
# and canonicalization erases the ops the loop replaced.
_AFTER_FUSION = """\
    %funcs = transform.structured.match ops{["func.func"]} in %root
      : (!transform.any_op) -> !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
""" + canonicalize_functions("%funcs", "%canonical")


def _reads_rows(operand_number: int, consumer: _Member, rows: int) -> bool:
    return consumer.leading[operand_number] >= rows


def _exits(group: dict[ir.Operation, _Member], rows: int) -> list[ir.Operation]:
    """Members used outside the group, or by a member that needs all their rows at once."""
    found = []
    for op, member in group.items():
        for owner, number in member.users:
            if owner not in group or not _reads_rows(number, group[owner], rows):
                found.append(op)
                break
    return found


def _keep_one_exit(
    group: dict[ir.Operation, _Member], rows: int, position: dict[ir.Operation, int]
) -> dict[ir.Operation, _Member]:
    """The group without the members, other than the last, whose results leave it."""
    group = dict(group)
    while True:
        exits = _exits(group, rows)
        if len(exits) <= 1:
            return group
        last = max(exits, key=lambda op: position[op])
        for op in exits:
            if op != last:
                del group[op]


def _bytes_per_row(group: list[_Member], rows: int) -> int:
    """The bytes of one row of every member's result and of every row-walking input."""
    inside = {member.op for member in group}
    inputs: dict[ir.Value, int] = {}
    for member in group:
        for index, (operand, producer) in enumerate(
            zip(member.op.operands, member.producers, strict=True)
        ):
            shape = static_shape(operand)
            if shape is None or member.leading[index] < rows or producer in inside:
                continue
            if producer is not None and producer.name == "tensor.empty":
                continue  # an init whose contents are never read
            inputs[operand] = math.prod(shape[rows:]) * _element_bytes(operand)
    return sum(m.row_bytes for m in group) + sum(inputs.values())


def _worth_fusing(
    group: dict[ir.Operation, _Member], rows: int, row_bytes: int, min_bytes: int
) -> bool:
    """A reduction read by another member, two members that walk whole rows, and at
    least ``min_bytes`` of values."""
    if len(_exits(group, rows)) != 1:
        return False
    reused = any(
        member.reduces and any(owner in group for owner, _ in member.users)
        for member in group.values()
    )
    whole_rows = [m for m in group.values() if len(m.sizes) > rows and m.op.name != "linalg.fill"]
    group_bytes = row_bytes * math.prod(next(iter(group.values())).sizes[:rows])
    return (
        reused and len(whole_rows) >= 2 and row_bytes <= MAX_ROW_BYTES and group_bytes >= min_bytes
    )
