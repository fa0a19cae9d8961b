"""shlo-fuse-elementwise-by-indexing: copy a shared cheap producer into every fusion when each reads it once per element.

Ours because upstream is missing: ``linalg-fuse-elementwise-ops`` (the CPU
pipeline's fusion) fuses a producer only when it has a single use, so an
elementwise op feeding two fusions is written to memory and read back. XLA
duplicates such a producer into its consumer fusions, but not into one that
would read it through more than one distinct indexing map (each output
element would recompute it once per map) or read an element more than once.

The decision uses ``shlo.analysis.indexing``. For a cheap elementwise op
``P`` with several uses, each use is followed down single-use chains of
fusible ops (elementwise, ``broadcast_in_dim``, ``transpose``) to the op the
fusion ends at, its root (which may also be a ``reduce``). For each root the
maps from the root's output to ``P``'s output are composed and simplified
(``value_maps``). ``P`` is copied, one copy per root after the first, when
every root reads it through exactly one distinct map that reads each element
once (distinct dims or symbols up to constant offsets, covering every dim and
symbol of extent above 1); each copy then has a single use chain and linalg
fuses it, and ``P`` is never written to memory. Otherwise nothing is copied:
a root reading ``P`` through two maps, a map that rereads elements, or a use
outside any fusion (a ``return``, a ``dot_general``) keeps ``P``
materialized, and copies would only recompute it. Transcendental and
division-like producers are never copied (``EXPENSIVE``); the copies may
duplicate at most ``max-recompute`` ops in all (a copy takes along the cheap
producers only ``P`` reads) and number at most ``max-copies``.

  %c = stablehlo.multiply %x, %x : tensor<8x8xf32>
  %s = stablehlo.reduce(%c init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = stablehlo.reduce(%c init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  %p = stablehlo.multiply %y, %y : tensor<8x8xf32>
  %t = stablehlo.transpose %p, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = stablehlo.add %p, %t : tensor<8x8xf32>
  ==>
  %c_0 = stablehlo.multiply %x, %x : tensor<8x8xf32>    // copied for %s: one map each
  %c = stablehlo.multiply %x, %x : tensor<8x8xf32>
  %s = stablehlo.reduce(%c_0 init: %zero) ...
  %m = stablehlo.reduce(%c init: %ninf) ...
  %p = stablehlo.multiply %y, %y : tensor<8x8xf32>      // %a reads it through two maps: not copied
  %t = stablehlo.transpose %p, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = stablehlo.add %p, %t : tensor<8x8xf32>
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.analysis.indexing import ELEMENTWISE_OPS, IndexingMap, value_maps
from shlo.ir_utils import defining_op, functions
from shlo.pass_framework import Pass

logger = logging.getLogger("shlo.passes")

# Ops that the linalg lowering makes parallel linalg.generic ops, which fuse
# into their consumer: a fusion continues through them.
PASS_THROUGH = ELEMENTWISE_OPS - {"stablehlo.map"} | {
    "stablehlo.broadcast_in_dim",
    "stablehlo.transpose",
}
# Ops a fusion may end at: elementwise producers fuse into these.
ROOTS = PASS_THROUGH | {"stablehlo.reduce"}
# Too costly to compute twice.
EXPENSIVE = frozenset(
    "stablehlo." + name
    for name in (
        "atan2 cbrt cosine divide exponential exponential_minus_one log log_plus_one "
        "logistic map power remainder rsqrt sine sqrt tan tanh"
    ).split()
)

# Producers this pass may copy.
CANDIDATES = ELEMENTWISE_OPS - EXPENSIVE


def reads_each_element_once(indexing: IndexingMap) -> bool:
    """True when distinct points of the domain read distinct elements (sufficient test)."""
    seen: set[tuple[str, int]] = set()
    for expr in indexing.results:
        variable = expr[1] if expr[0] == "add" and expr[2][0] == "c" else expr
        if variable[0] == "c":
            continue
        if variable[0] not in ("d", "s") or variable in seen:
            return False
        seen.add(variable)
    extents = [("d", i, r) for i, r in enumerate(indexing.dim_ranges)]
    extents += [("s", j, r) for j, r in enumerate(indexing.symbol_ranges)]
    return all((kind, position) in seen or hi <= lo for kind, position, (lo, hi) in extents)


class _Block:
    def __init__(self, block: ir.Block) -> None:
        self.block = block
        self.position: dict[ir.Operation, float] = {
            op.operation: float(i) for i, op in enumerate(block.operations)
        }
        self.ops = self.position.keys()

    def in_order(self, ops: set[ir.Operation]) -> list[ir.Operation]:
        return sorted(ops, key=self.position.__getitem__)

    def insert_before(self, op: ir.Operation, anchor: ir.Operation, index: int) -> None:
        """Record ``op``, the ``index``-th op inserted right before ``anchor`` (never reordered)."""
        self.position[op] = self.position[anchor] - 1.0 / (index + 2)

    def fusion_root(self, user: ir.Operation) -> tuple[ir.Operation, set[ir.Operation]] | None:
        """The op the fusion starting at ``user`` ends at, and the ops on the way; None: no fusion."""
        if user not in self.ops or user.name not in ROOTS:
            return None
        chain = {user}
        current = user
        while current.name in PASS_THROUGH and len(current.results) == 1:
            uses = list(current.results[0].uses)
            if len(uses) != 1:
                break
            following = uses[0].owner.operation
            if following not in self.ops or following.name not in ROOTS:
                break
            current = following
            chain.add(current)
        return current, chain


def _exclusive_tree(producer: ir.Operation, scope: _Block) -> int:
    """How many ops one copy of ``producer`` duplicates: it and the cheap producers only it reads.

    Once ``producer`` is copied, those producers have one use per copy and are
    copied in turn (this pass visits consumers first).
    """
    tree = {producer}
    frontier = [producer]
    while frontier:
        op = frontier.pop()
        for operand in op.operands:
            owner = defining_op(operand)
            if owner is None:
                continue  # a block argument
            if owner in tree or owner not in scope.ops or owner.name not in CANDIDATES:
                continue
            if all(use.owner.operation in tree for use in operand.uses):
                tree.add(owner)
                frontier.append(owner)
    return len(tree)


def _copy_if_fused_everywhere(
    producer: ir.Operation,
    scope: _Block,
    max_copies: int,
    max_recompute: int,
    elementwise_steps: dict,
) -> None:
    """Copy ``producer`` into each fusion reading it when all of them read it once per element."""
    value = producer.results[0]
    roots: dict[ir.Operation, tuple[set[ir.Operation], list[ir.OpOperand]]] = {}
    for use in value.uses:
        found = scope.fusion_root(use.owner.operation)
        if found is None:
            # Materialized for this user anyway: copies would only recompute it.
            return
        root, chain = found
        ops, uses = roots.setdefault(root, (set(), []))
        ops |= chain
        uses.append(use)
    copies = len(roots) - 1
    if copies == 0:
        return  # one fusion: linalg fuses once the reads are deduplicated
    for root, (ops, _) in roots.items():
        try:
            maps = value_maps(root.results[0], scope.in_order(ops), elementwise_steps)
            maps = maps.get(value, [])
        except Exception:  # no rule, dynamic shapes, ...: keep the producer shared
            logger.debug("%s: no indexing maps for %s", producer.name, root.name, exc_info=True)
            return
        if len(maps) != 1 or not reads_each_element_once(maps[0]):
            logger.debug(
                "%s: %s reads it through %d maps%s: shared",
                producer.name,
                root.name,
                len(maps),
                "" if len(maps) != 1 else " rereading elements",
            )
            return
    if copies > max_copies or copies * _exclusive_tree(producer, scope) > max_recompute:
        return
    # The first fusion keeps the original.
    for index, (_, uses) in enumerate(list(roots.values())[1:]):
        clone = producer.clone(ip=ir.InsertionPoint(producer)).operation
        scope.insert_before(clone, producer, index)
        for use in uses:
            use.owner.operands[use.operand_number] = clone.results[0]


@dataclass(frozen=True)
class FuseElementwiseByIndexingPass(Pass):
    """Copy a shared elementwise producer into each fusion that reads it once per element."""

    argument: ClassVar[str] = "shlo-fuse-elementwise-by-indexing"
    max_copies: int = 4
    max_recompute: int = 2

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            for region in func.regions:
                for block in region.blocks:
                    self.run_on_block(block)

    def run_on_block(self, block: ir.Block) -> None:
        scope = _Block(block)
        elementwise_steps: dict = {}  # value_maps' cache
        # Consumers first: once a consumer is copied, its producer's uses are
        # the copies, each on its own fusion chain.
        for op in reversed(list(block.operations)):
            operation = op.operation
            if (
                operation.name in CANDIDATES
                and len(operation.results) == 1
                and len(list(operation.results[0].uses)) > 1
            ):
                _copy_if_fused_everywhere(
                    operation, scope, self.max_copies, self.max_recompute, elementwise_steps
                )
