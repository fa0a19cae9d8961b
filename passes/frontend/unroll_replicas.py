"""shlo-unroll-replicas: inline every process of interpreter.run_parallel and connect them.

Ours because upstream is missing: ``interpreter.run_parallel`` belongs to the
reference interpreter's dialect, which the wheel lacks; the conformance
runner rewrites it as ``stablehlo.custom_call @interpreter.run_parallel``
with the same ``programs`` (and ``infeed``) attributes. Each process's program
is inlined into the calling function, and the programs are interleaved at
their collectives: each collective becomes explicit data movement between
the copies (see ``shlo.collectives``), send and recv are paired by channel,
replica_id and partition_id become constants, infeed takes the results of
the next ``infeed`` queue function, and outfeed is dropped (nothing reads the
queue of run_parallel). Collectives, send, recv and infeed must sit at the
top level of a program, outside loops and conditionals, so they run once.

  %r:2 = stablehlo.custom_call @interpreter.run_parallel(%a, %b) {programs = [[@f], [@f]]}
  func.func @f(%x: tensor<2xi64>) -> tensor<4xi64> {
    %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<4xi64>
    return %0 : tensor<4xi64>
  }
  ==>
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  (both results of %r take %0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.collectives import (
    COLLECTIVES,
    POINT_TO_POINT,
    PROCESS_IDS,
    Grid,
    ProcessId,
    Rendezvous,
    channel_id,
    erase_dead_tokens,
    lower_rendezvous,
    process_groups,
    process_id_constant,
    rendezvous,
)
from shlo.ir_utils import ops_named, string_value
from shlo.pass_framework import Pass, PassError

RUN_PARALLEL = "interpreter.run_parallel"
_SYNC = (*COLLECTIVES, *POINT_TO_POINT)


def _symbols(attr: ir.Attribute) -> list[str] | None:
    if not isinstance(attr, ir.ArrayAttr):
        return None
    names = []
    for item in attr:
        if not isinstance(item, ir.FlatSymbolRefAttr):
            return None
        names.append(item.value)
    return names


def _function_type(function: ir.Operation) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)


def _body(function: ir.Operation) -> list[ir.Operation]:
    return [op.operation for op in function.regions[0].blocks[0].operations]


@dataclass
class _Step:
    """Move ``ops`` of ``process`` before the call, or lower one rendezvous of ``sync``."""

    process: ProcessId | None = None
    ops: list[ir.Operation] = field(default_factory=list)
    sync: dict[ProcessId, ir.Operation] = field(default_factory=dict)
    meeting: Rendezvous | None = None


class _Unroller:
    def __init__(self, call: ir.Operation, symbols: ir.SymbolTable) -> None:
        self.call = call
        self.symbols = symbols
        rows = call.attributes["programs"] if "programs" in call.attributes else None
        programs = [_symbols(row) for row in rows] if isinstance(rows, ir.ArrayAttr) else None
        if not programs or None in programs or len({len(row) for row in programs}) != 1:
            raise PassError(
                call.location, "expected programs as equally long lists of function symbols"
            )
        self.grid = Grid(len(programs), len(programs[0]))
        self.programs = {
            (r, p): name for r, row in enumerate(programs) for p, name in enumerate(row)
        }
        queue = call.attributes["infeed"] if "infeed" in call.attributes else None
        self.infeed = _symbols(queue) if queue is not None else []
        if self.infeed is None:
            raise PassError(call.location, "expected infeed as a list of function symbols")
        self.clones: dict[ProcessId, ir.Operation] = {}

    def _function(self, name: str) -> ir.Operation:
        try:
            function = self.symbols[name].operation
        except KeyError:
            function = None
        if function is None or function.name != "func.func" or not function.regions[0].blocks:
            raise PassError(self.call.location, f"expected @{name} to be a function with a body")
        return function

    def unroll(self) -> None:
        functions = {p: self._function(name) for p, name in self.programs.items()}
        self._check_signatures(functions)
        for process, function in functions.items():
            clone = function.clone(ip=ir.InsertionPoint(function))
            clone.attributes["sym_name"] = ir.StringAttr.get(
                f"{self.programs[process]}_process_{process[0]}_{process[1]}"
            )
            self.clones[process] = clone
        try:
            steps = self._plan()
        except PassError:
            for clone in self.clones.values():
                clone.erase()
            raise
        self._connect_arguments()
        for step in steps:
            if step.process is not None:
                for op in step.ops:
                    op.move_before(self.call)
                    self._localize(op, step.process)
            elif step.meeting is None:
                _send_recv(step.sync)
            else:
                with ir.InsertionPoint(self.call):
                    lower_rendezvous(step.sync, step.meeting, self.grid)
        self._connect_results()
        for clone in self.clones.values():
            clone.erase()
        function = self.call.parent
        self.call.erase()
        erase_dead_tokens(function)

    def _check_signatures(self, functions: dict[ProcessId, ir.Operation]) -> None:
        inputs = [t for f in functions.values() for t in _function_type(f).inputs]
        results = [t for f in functions.values() for t in _function_type(f).results]
        operands = [v.type for v in self.call.operands]
        if inputs != operands:
            raise PassError(
                self.call.location, "expected the operands to be the programs' arguments in order"
            )
        if results != [v.type for v in self.call.results]:
            raise PassError(
                self.call.location, "expected the results to be the programs' results in order"
            )

    def _connect_arguments(self) -> None:
        operands = list(self.call.operands)
        for process in self.grid.processes():
            block = self.clones[process].regions[0].blocks[0]
            for argument in block.arguments:
                argument.replace_all_uses_with(operands.pop(0))

    def _connect_results(self) -> None:
        results = list(self.call.results)
        for process in self.grid.processes():
            terminator = _body(self.clones[process])[-1]
            for value in terminator.operands:
                results.pop(0).replace_all_uses_with(value)

    # --- planning: which ops run when, and which collectives meet -----------------

    def _plan(self) -> list[_Step]:
        """Interleave the programs: run each up to its next collective, then meet.

        Everything is checked before the IR changes, so a PassError leaves it intact.
        """
        bodies = {p: _body(clone)[:-1] for p, clone in self.clones.items()}
        for process, ops in bodies.items():
            self._check_nesting(ops)
        infeeds = sum(op.name == "stablehlo.infeed" for ops in bodies.values() for op in ops)
        if infeeds > len(self.infeed):
            raise PassError(
                self.call.location,
                f"expected at least {infeeds} infeed queue functions, got {len(self.infeed)}",
            )
        cursors = dict.fromkeys(bodies, 0)
        steps: list[_Step] = []
        while True:
            for process, ops in bodies.items():
                start = end = cursors[process]
                while end < len(ops) and ops[end].name not in _SYNC:
                    end += 1
                if end > start:
                    steps.append(_Step(process=process, ops=ops[start:end]))
                    cursors[process] = end
            waiting = {p: ops[cursors[p]] for p, ops in bodies.items() if cursors[p] < len(ops)}
            if not waiting:
                return steps
            met: set[ProcessId] = set()
            for process in waiting:
                if process not in met:
                    step = self._meet(process, waiting, met)
                    if step is not None:
                        steps.append(step)
                        met.update(step.sync)
            if not met:
                process, op = next(iter(waiting.items()))
                raise PassError(
                    op.location,
                    f"expected the programs of run_parallel to reach matching collectives; "
                    f"process {process} waits forever at {op.name}",
                )
            for process in met:
                cursors[process] += 1

    def _check_nesting(self, ops: list[ir.Operation]) -> None:
        for op in ops:
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        nested = ops_named(inner.operation, *_SYNC, "stablehlo.infeed")
                        if nested:
                            raise PassError(
                                nested[0].location,
                                f"expected {nested[0].name} at the top level of a "
                                "run_parallel program, outside control flow",
                            )

    def _meet(
        self, process: ProcessId, waiting: dict[ProcessId, ir.Operation], met: set[ProcessId]
    ) -> _Step | None:
        """The rendezvous that ``process`` can complete now, if all its peers wait for it."""
        op = waiting[process]
        if op.name in POINT_TO_POINT:
            partner = "stablehlo.recv" if op.name == "stablehlo.send" else "stablehlo.send"
            for other, other_op in waiting.items():
                if (
                    other != process
                    and other not in met
                    and other_op.name == partner
                    and channel_id(other_op) == channel_id(op)
                ):
                    return _Step(sync={process: op, other: other_op})
            return None
        meeting = rendezvous(op, self.grid, process)
        groups = process_groups(op, self.grid)
        for member in meeting.members:
            other_op = waiting.get(member)
            if (
                other_op is None
                or member in met
                or other_op.name != op.name
                or channel_id(other_op) != channel_id(op)
                or process_groups(other_op, self.grid) != groups
            ):
                return None
        return _Step(sync={member: waiting[member] for member in meeting.members}, meeting=meeting)

    # --- lowering what does not need a peer ----------------------------------------

    def _localize(self, op: ir.Operation, process: ProcessId) -> None:
        """Give ``op`` (now before the call) its process's ids, infeed and outfeed."""
        replica, partition = process
        for inner in ops_named(op, *PROCESS_IDS, "stablehlo.outfeed", "stablehlo.infeed"):
            if inner.name == "stablehlo.replica_id":
                process_id_constant(inner, replica)
            elif inner.name == "stablehlo.partition_id":
                process_id_constant(inner, partition)
            elif inner.name == "stablehlo.outfeed":
                inner.results[0].replace_all_uses_with(inner.operands[len(inner.operands) - 1])
                inner.erase()
            else:
                self._read_infeed(inner)

    def _read_infeed(self, op: ir.Operation) -> None:
        queue = self._function(self.infeed.pop(0))
        copy = queue.clone(ip=ir.InsertionPoint(queue))
        body = _body(copy)
        payload = list(op.results)[:-1]
        if [v.type for v in body[-1].operands] != [v.type for v in payload]:
            copy.erase()
            raise PassError(op.location, "expected the infeed queue function to return its types")
        for inner in body[:-1]:
            inner.move_before(op)
        for old, new in zip(payload, body[-1].operands):
            old.replace_all_uses_with(new)
        op.results[len(op.results) - 1].replace_all_uses_with(op.operands[0])
        op.erase()
        copy.erase()


def _send_recv(sync: dict[ProcessId, ir.Operation]) -> None:
    """The recv's payload is the send's data; both tokens pass through."""
    send = next(op for op in sync.values() if op.name == "stablehlo.send")
    recv = next(op for op in sync.values() if op.name == "stablehlo.recv")
    data = list(send.operands)[:-1]
    payload = list(recv.results)[:-1]
    if [v.type for v in data] != [v.type for v in payload]:
        raise PassError(recv.location, "expected recv to receive the types that send sends")
    for old, new in zip(payload, data):
        old.replace_all_uses_with(new)
    recv.results[len(recv.results) - 1].replace_all_uses_with(recv.operands[0])
    send.results[0].replace_all_uses_with(send.operands[len(send.operands) - 1])
    recv.erase()
    send.erase()


def _symbol_table_of(op: ir.Operation) -> ir.SymbolTable:
    parent = op.parent
    while parent is not None and parent.name != "builtin.module":
        parent = parent.parent
    assert parent is not None, "run_parallel outside a module"
    return ir.SymbolTable(parent)


@dataclass(frozen=True)
class UnrollReplicasPass(Pass):
    """Inline every process of interpreter.run_parallel and turn collectives into data movement."""

    argument: ClassVar[str] = "shlo-unroll-replicas"

    def run(self, module: ir.Operation) -> None:
        for call in ops_named(module, "stablehlo.custom_call"):
            target = string_value(call.attributes["call_target_name"])
            if target == RUN_PARALLEL:
                _Unroller(call, _symbol_table_of(call)).unroll()
