"""shlo-lower-collectives: collective ops of a single-process program as plain data movement.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` has no
patterns for collectives. The CPU backend runs one replica of one partition
(``mhlo.num_replicas`` and ``mhlo.num_partitions`` on the module, 1 when
absent), so every process group is that one process: all_gather, all_reduce,
reduce_scatter, all_to_all and collective_broadcast return their operands
(converted to the computation's element type for reductions),
collective_permute returns the operand when the pairs hold (0, 0) and zeros
otherwise, collective_reduce returns its operand on the root, and replica_id
and partition_id are 0. Send, recv, infeed and outfeed need a peer or a host
queue that a single process on the CPU backend does not have: they are
errors. Unused after_all and create_token ops are erased.

  %0 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.replica_id : tensor<ui32>
  ==>
  %1 = stablehlo.constant dense<0> : tensor<ui32>
  (uses of %0 take %x)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.collectives import (
    COLLECTIVES,
    PROCESS_IDS,
    Grid,
    erase_dead_tokens,
    lower_rendezvous,
    process_id_constant,
    rendezvous,
)
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass, PassError

_HOST_IO = {
    "stablehlo.infeed": "expected no infeed: the CPU backend has no infeed queue",
    "stablehlo.outfeed": "expected no outfeed: the CPU backend has no outfeed queue",
}


def _grid(module: ir.Operation) -> Grid:
    def count(name: str) -> int:
        attr = module.attributes[name] if name in module.attributes else None
        return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else 1

    return Grid(count("mhlo.num_replicas"), count("mhlo.num_partitions"))


def _point_to_point_error(op: ir.Operation) -> PassError:
    host = (
        "is_host_transfer" in op.attributes and ir.BoolAttr(op.attributes["is_host_transfer"]).value
    )
    kind = op.name.removeprefix("stablehlo.")
    if host:
        return PassError(
            op.location, f"expected no host transfer: the CPU backend has no host {kind} channel"
        )
    peer = "to send to" if kind == "send" else "to receive from"
    return PassError(op.location, f"expected no {kind}: a single process has no peer {peer}")


@dataclass(frozen=True)
class LowerCollectivesPass(Pass):
    """Lower collective ops of a single-replica, single-partition program to data movement."""

    argument: ClassVar[str] = "shlo-lower-collectives"

    def run(self, module: ir.Operation) -> None:
        grid = _grid(module)
        single = grid == Grid(1, 1)
        names = (*COLLECTIVES, *PROCESS_IDS, "stablehlo.send", "stablehlo.recv", *_HOST_IO)
        for op in ops_named(module, *names):
            if op.name in _HOST_IO:
                raise PassError(op.location, _HOST_IO[op.name])
            if op.name in ("stablehlo.send", "stablehlo.recv"):
                raise _point_to_point_error(op)
            if not single:
                raise PassError(
                    op.location,
                    "expected a single replica and a single partition, got "
                    f"mhlo.num_replicas = {grid.num_replicas} and "
                    f"mhlo.num_partitions = {grid.num_partitions}",
                )
            if op.name in PROCESS_IDS:
                process_id_constant(op, 0)
                continue
            meeting = rendezvous(op, grid, (0, 0))
            with ir.InsertionPoint(op):
                lower_rendezvous({(0, 0): op}, meeting, grid)
        erase_dead_tokens(module)
