"""LLVM code generation on several cores: the module split by function, one shard per process.

LLVM compiles a module on one thread, and the ExecutionEngine holds the GIL
while it does, so threads do not help. In the worker process (where a crash
is already contained, and no other thread runs LLVM) the functions are split
into shards of about equal size, forked children compile one shard each
while the worker waits, and ``ld -r`` joins their objects into one. A
function another shard defines is only declared in this one (the kernels
have external linkage, so the linker resolves the calls); globals, all
constant, are copied into every shard. On GPT-2 (12 layers) this takes
LLVM's time from 0.93 to 0.58 s on two cores.

Anything unexpected (a mutable global, a child that fails, no C compiler to
join the objects) falls back to compiling the whole module in the worker.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable

from shlo._mlir_compat import ir
from shlo.isolation import kill_with_parent_thread

# Set by the worker process (shlo._worker): only there is forking safe.
fork_allowed = False
# A split pays when it takes at least this many LLVM ops off the longest
# shard: on 2 cores a fork and a join cost about 15-20 ms, what LLVM spends
# on 150-200 ops. Measured (serial -> split): attention, 724 ops off, 144 ->
# 116 ms; softmax and layernorm, 155 and 115 off, no change; the MLP, 114
# off, 54 -> 61 ms; elementwise, one kernel, 38 -> 60 ms.
MIN_SAVED_OPS = 400
# Glue functions are compiled without optimization: weigh them less.
_OPTNONE_WEIGHT = 0.2


def _defined_functions(module: ir.Module) -> list[ir.Operation]:
    return [
        op.operation
        for op in module.body.operations
        if op.operation.name == "llvm.func" and len(op.operation.regions[0].blocks)
    ]


def _name(function: ir.Operation) -> str:
    return ir.StringAttr(function.attributes["sym_name"]).value


def _weight(function: ir.Operation) -> float:
    """About how long LLVM takes on ``function``: its ops, nested ones (OpenMP regions) too."""
    ops = 0

    def count(_: ir.Operation) -> ir.WalkResult:
        nonlocal ops
        ops += 1
        return ir.WalkResult.ADVANCE

    function.walk(count)
    attributes = function.attributes
    glue = "passthrough" in attributes and "optnone" in str(attributes["passthrough"])
    return ops * _OPTNONE_WEIGHT if glue else ops


def _splittable(module: ir.Module) -> bool:
    """Whether every global is a constant (so copies of it in each shard are one)."""
    for op in module.body.operations:
        op = op.operation
        if op.name == "llvm.mlir.global" and "constant" not in op.attributes:
            return False
        if op.name not in ("llvm.func", "llvm.mlir.global"):
            return False  # e.g. comdats or aliases: not seen in our modules, not handled
    return True


def plan_shards(module: ir.Module, shards: int, first: str) -> list[list[str]] | None:
    """Function names per shard, ``first`` in shard 0, sizes balanced; None: do not split."""
    if not _splittable(module):
        return None
    functions = _defined_functions(module)
    weights = {_name(f): _weight(f) for f in functions}
    if first not in weights or len(weights) < shards:
        return None
    total = sum(weights.values())
    plan: list[list[str]] = [[] for _ in range(shards)]
    loads = [0.0] * shards
    plan[0].append(first)
    loads[0] = weights.pop(first)
    # Largest first into the lightest shard.
    for name in sorted(weights, key=weights.__getitem__, reverse=True):
        lightest = loads.index(min(loads))
        plan[lightest].append(name)
        loads[lightest] += weights[name]
    if not all(plan) or total - max(loads) < MIN_SAVED_OPS:
        return None
    return plan


def _declare_others(module: ir.Module, keep: set[str]) -> None:
    """Replace every function body outside ``keep`` with a declaration of the function."""
    for function in _defined_functions(module):
        if _name(function) in keep:
            continue
        attributes = {
            key: function.attributes[key]
            for key in ("sym_name", "function_type", "CConv", "linkage", "arg_attrs", "res_attrs")
            if key in function.attributes
        }
        with ir.InsertionPoint(function), function.location:
            ir.Operation.create("llvm.func", attributes=attributes, regions=1)
        function.erase()


def _die_with(parent: int) -> None:
    """End this forked child when ``parent`` (the worker) is killed, e.g. on a timeout."""
    kill_with_parent_thread()
    if os.getppid() != parent:  # killed before prctl ran
        os._exit(1)


def compile_in_parallel(
    module: ir.Module,
    compile_one: Callable[[ir.Module, str, list[str]], bytes],
    jobs: int,
    linker: str,
) -> bytes | None:
    """One object for the module, its shards compiled by ``jobs`` processes; None: not split.

    ``compile_one(module, symbol, elsewhere)`` is the object code for a
    module in which ``symbol`` is defined and the functions ``elsewhere``
    are only declared; ``linker`` (ld, or a C compiler driver) joins the
    objects with ``-r``. Each shard is compiled by a forked child, which cuts
    its copy of ``module`` down to the shard; ``module`` itself is unchanged.
    """
    if not fork_allowed or jobs < 2:
        return None
    plan = plan_shards(module, jobs, "main")
    if plan is None:
        return None
    elsewhere = [[n for other in plan if other is not names for n in other] for names in plan]
    with tempfile.TemporaryDirectory(prefix="shlo-shards-") as directory:
        paths = [os.path.join(directory, f"shard{index}.o") for index in range(len(plan))]
        children = []
        worker = os.getpid()
        for index, names in enumerate(plan):
            pid = os.fork()
            if pid == 0:  # the child: compile, write, leave without cleanup handlers
                status = 1
                try:
                    _die_with(worker)
                    _declare_others(module, set(names))
                    code = compile_one(module, names[0], elsewhere[index])
                    with open(paths[index], "wb") as file:
                        file.write(code)
                    status = 0
                finally:
                    os._exit(status)
            children.append(pid)
        failed = False
        for pid in children:
            _, status = os.waitpid(pid, 0)
            failed |= not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0
        if failed:
            return None
        joined = os.path.join(directory, "joined.o")
        result = subprocess.run(
            [linker, "-r", "-nostdlib", "-o", joined, *paths], capture_output=True, check=False
        )
        if result.returncode != 0:
            return None
        with open(joined, "rb") as file:
            return file.read()
