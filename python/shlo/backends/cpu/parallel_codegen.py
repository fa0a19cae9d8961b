"""LLVM code generation on several cores: the module split by function into shards.

LLVM compiles a module on one thread. ``compile_in_parallel`` splits the
functions into shards of about equal size, and threads compile one shard
each: ``write_object_file`` calls LLVM without the GIL. Their objects
travel as one ar archive, which the host links whole (``object_archive``).
A function another shard defines is only declared in this one (the kernels
have external linkage, so the linker resolves the calls); globals, all
constant, are copied into every shard.

``lower_in_parallel`` splits earlier, once the kernels are outlined: each
shard is also lowered to the LLVM dialect, the last MLIR passes, which work
on one function at a time. Those passes hold the GIL (some are Python), so
each shard is lowered and compiled in a forked child of the worker process,
where a crash is already contained. Each child lists the LLVM signature of
every function it defines or calls, and the shards are used only when
every call agrees with its callee's definition.

A function that no other shard names gets internal linkage in its shard's
object (``runtime.internalize``), as every function but the entry does in a
module compiled whole.

Anything unexpected (a mutable global, a shard that fails, signatures that
disagree, a call of a function another shard keeps internal, no C compiler
to link the objects) falls back to the whole module on one thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable

from shlo import progress
from shlo._mlir_compat import ir
from shlo.backends.cpu.runtime import object_archive
from shlo.io import module_to_bytecode
from shlo.ir_utils import is_optnone, is_private, op_count, ops_named
from shlo.isolation import kill_with_parent_thread

# Set by the worker process (shlo._worker): only there is forking safe.
fork_allowed = False
# A split pays when it takes at least this many LLVM ops off the longest
# shard: the copies of the module and a second JIT cost about 3.5 ms on 2
# cores, what LLVM spends on 50-60 ops. Measured (whole -> split, LLVM only):
# attention, 691 ops off, 82.5 -> 53.1 ms; the MLP, 252 off, 36.4 -> 26.5;
# conv2d, 138 off, 43.5 -> 28.0; softmax, 1 off, 34.6 -> 38.0.
MIN_SAVED_OPS = 100
# Glue functions are compiled without optimization: weigh them less.
_OPTNONE_WEIGHT = 0.2
# The same for a module split before its lowering to the LLVM dialect
# (lower_in_parallel), counted in the ops of its bufferized functions.
MIN_SAVED_FUNCTION_OPS = 400
# Split there, a glue function's ops cost the MLIR lowering as much as a
# kernel's: each function of GPT-2 and ResNet lowered and compiled alone
# took 0.13-0.15 ms per glue op, 0.13-0.24 per kernel op. Weighed at 0.2,
# main made the shard holding it the slower one by 25-50%.
_OPTNONE_FUNCTION_WEIGHT = 0.8


def _defined_functions(module: ir.Module | ir.Operation) -> list[ir.Operation]:
    return [
        op.operation
        for op in module.operation.regions[0].blocks[0].operations
        if op.operation.name == "llvm.func" and len(op.operation.regions[0].blocks)
    ]


def _name(function: ir.Operation) -> str:
    return ir.StringAttr(function.attributes["sym_name"]).value


def _weight(function: ir.Operation, optnone_weight: float = _OPTNONE_WEIGHT) -> float:
    """About how long LLVM takes on ``function``: its ops, nested ones (OpenMP regions) too.

    The same for a ``func.func``: its lowering to the LLVM dialect grows with its ops.
    """
    ops = op_count(function)
    return ops * optnone_weight if is_optnone(function) else ops


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
    weights = {_name(f): _weight(f) for f in _defined_functions(module)}
    return _balanced(weights, shards, first, MIN_SAVED_OPS)


def _balanced(
    weights: dict[str, float], shards: int, first: str, min_saved: float
) -> list[list[str]] | None:
    """Names per shard, ``first`` in shard 0, by weight; None when fewer than
    ``min_saved`` of the weight would leave the heaviest shard."""
    weights = dict(weights)
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
    if not all(plan) or total - max(loads) < min_saved:
        return None
    return plan


# The ops that name a function, and the attribute that holds the name.
_REFERENCES = {
    "func.call": "callee",
    "func.constant": "value",
    "llvm.call": "callee",
    "llvm.invoke": "callee",
    "llvm.mlir.addressof": "global_name",
    "llvm.dso_local_equivalent": "function_name",
}


def _referenced(root: ir.Operation) -> set[str]:
    """The symbols that calls and address-taking ops under ``root`` name."""
    names = set()
    for op in ops_named(root, *_REFERENCES):
        key = _REFERENCES[op.name]
        if key in op.attributes:  # an indirect call names none
            names.add(ir.FlatSymbolRefAttr(op.attributes[key]).value)
    return names


def _exported(plan: list[list[str]], referenced: list[set[str]]) -> list[set[str]]:
    """For each shard of ``plan``, the functions it defines that another shard names
    (``referenced``: the names each shard's code uses)."""
    exported = []
    for index, names in enumerate(plan):
        used_elsewhere = set().union(
            *(used for other, used in enumerate(referenced) if other != index)
        )
        exported.append(used_elsewhere.intersection(names))
    return exported


def _elsewhere(plan: list[list[str]]) -> list[list[str]]:
    """For each shard of ``plan``, the functions the other shards define."""
    return [[name for other in plan if other is not names for name in other] for names in plan]


def _declare_others(module: ir.Module | ir.Operation, keep: set[str]) -> None:
    """Replace every function body outside ``keep`` with a declaration of the function."""
    for function in _defined_functions(module):
        if _name(function) in keep:
            continue
        attributes = {
            key: function.attributes[key]
            for key in ("sym_name", "function_type", "CConv", "linkage", "arg_attrs", "res_attrs")
            if key in function.attributes
        }
        _replace_with_declaration(function, attributes)


def _replace_with_declaration(function: ir.Operation, attributes: dict[str, ir.Attribute]) -> None:
    """Put an op of ``function``'s kind with ``attributes`` and no body in its place."""
    with ir.InsertionPoint(function), function.location:
        ir.Operation.create(function.name, attributes=attributes, regions=1)
    function.erase()


def _die_with(parent: int) -> None:
    """End this forked child when ``parent`` (the worker) is killed, e.g. on a timeout."""
    kill_with_parent_thread()
    if os.getppid() != parent:  # killed before prctl ran
        os._exit(1)


def compile_in_parallel(
    module: ir.Module,
    compile_one: Callable[[ir.Operation, str, list[str], set[str]], bytes],
    jobs: int,
) -> bytes | None:
    """An archive of the objects of the module's shards, compiled on ``jobs``
    threads; None: not split.

    ``compile_one(module, symbol, elsewhere, exported)`` is the object code
    for a module in which ``symbol`` is defined, the functions ``elsewhere``
    are only declared, and the functions ``exported`` are called from other
    shards; it must release the GIL while LLVM works
    (``write_object_file``). Each shard is a copy of ``module`` cut down to
    its functions; ``module`` itself is unchanged.
    """
    if jobs < 2:
        return None
    plan = plan_shards(module, jobs, "main")
    if plan is None:
        return None
    progress.stage(f"LLVM code generation in {len(plan)} shards")
    shards = []
    for names in plan:
        shard = module.operation.clone()
        _declare_others(shard, set(names))
        shards.append(shard)
    elsewhere = _elsewhere(plan)
    exported = _exported(plan, [_referenced(shard) for shard in shards])
    codes: list[bytes | None] = [None] * len(plan)

    def compile_shard(index: int) -> None:
        with contextlib.suppress(Exception):  # None in codes: compiled whole instead
            codes[index] = compile_one(
                shards[index], plan[index][0], elsewhere[index], exported[index]
            )

    # The translation to LLVM IR reads the context's uniquers from every thread.
    module.context.enable_multithreading(True)
    started = []
    try:
        for index in range(len(plan)):
            thread = threading.Thread(target=compile_shard, args=(index,), name="shlo-codegen")
            thread.start()  # RuntimeError if the stack does not fit (SHLO_WORKER_MEMORY)
            started.append(thread)
    except RuntimeError:
        pass  # that shard's code stays None
    finally:
        for thread in started:
            thread.join()
        module.context.enable_multithreading(False)
    if any(code is None for code in codes):
        return None
    return object_archive(codes)  # type: ignore[arg-type]


def _in_children(
    shards: int,
    work: Callable[[int, str], None],
    consistent: Callable[[str], bool],
) -> bytes | None:
    """An archive of the objects that ``work(index, directory)`` writes to
    ``directory/shard<index>.o`` in forked children; None when a child fails
    or ``consistent(directory)`` says the shards do not fit together."""
    with tempfile.TemporaryDirectory(prefix="shlo-shards-") as directory:
        paths = [os.path.join(directory, f"shard{index}.o") for index in range(shards)]
        children = []
        worker = os.getpid()
        for index in range(shards):
            pid = os.fork()
            if pid == 0:  # the child: compile, write, leave without cleanup handlers
                status = 1
                try:
                    _die_with(worker)
                    progress.set_reporter(None)  # the worker's replies are its own
                    work(index, directory)
                    status = 0
                finally:
                    os._exit(status)
            children.append(pid)
        failed = False
        for pid in children:
            _, status = os.waitpid(pid, 0)
            failed |= not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0
        if failed or not consistent(directory):
            return None
        objects = []
        for path in paths:
            with open(path, "rb") as file:
                objects.append(file.read())
        return object_archive(objects)


def _function_weights(module: ir.Module) -> dict[str, float] | None:
    """The weight of each ``func.func`` with a body; None when the module holds
    anything but functions and constant memref globals (copied into every shard)."""
    weights = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "memref.global" and "constant" in op.attributes:
            continue
        if op.name != "func.func":
            return None
        if len(op.regions[0].blocks):
            weights[_name(op)] = _weight(op, _OPTNONE_FUNCTION_WEIGHT)
    return weights


def _declare_other_functions(module: ir.Module, keep: set[str]) -> None:
    """Replace the body of every ``func.func`` outside ``keep`` with nothing: a private
    declaration with the same attributes, so it lowers to the same LLVM signature;
    the public entry, which no function calls, goes."""
    for op in list(module.body.operations):
        function = op.operation
        if function.name != "func.func" or not len(function.regions[0].blocks):
            continue
        if _name(function) in keep:
            continue
        if not is_private(function):
            function.erase()
            continue
        attributes = {name: function.attributes[name] for name in function.attributes}
        _replace_with_declaration(function, attributes)


def _llvm_signatures(module: ir.Module) -> dict[str, list[object]]:
    """Each ``llvm.func``: [whether this module defines it, its type]."""
    return {
        _name(op.operation): [
            bool(len(op.operation.regions[0].blocks)),
            str(op.operation.attributes["function_type"]),
        ]
        for op in module.body.operations
        if op.operation.name == "llvm.func"
    }


def _signatures_fit(directory: str, visible: list[set[str]]) -> bool:
    """Whether every function is defined once, and declared where it is called
    with the type of its definition (one calling convention across shards);
    and whether each function a shard calls but does not define is among
    those its defining shard keeps ``visible`` (external)."""
    shards = []
    for index in range(len(visible)):
        with open(os.path.join(directory, f"shard{index}.json")) as file:
            shards.append(json.load(file))
    defined: dict[str, tuple[str, int]] = {}
    for index, shard in enumerate(shards):
        for name, (is_defined, type_) in shard["functions"].items():
            if is_defined:
                if name in defined:
                    return False
                defined[name] = (type_, index)
    for shard in shards:
        for name, (is_defined, type_) in shard["functions"].items():
            if is_defined or name not in defined:
                continue
            defined_type, owner = defined[name]
            if defined_type != type_ or (name in shard["calls"] and name not in visible[owner]):
                return False
    return True


def lower_in_parallel(
    module: ir.Module,
    finish: Callable[[ir.Module], None],
    compile_one: Callable[[ir.Module, str, list[str], set[str]], bytes],
    jobs: int,
) -> tuple[bytes, list[bytes]] | None:
    """``compile_in_parallel`` one stage earlier: ``module``'s functions (bufferized,
    kernels outlined) split into shards, each lowered by ``finish`` to the LLVM
    dialect and compiled in a forked child; an archive of their objects and each shard's
    LLVM-dialect bytecode. None: not split, ``module`` unchanged.

    The lowering after kernel outlining is per function: a child sees the
    other shards' functions as declarations with their attributes, and the
    LLVM signature of each call must be that of its definition, which the
    children's lists of signatures check before the objects are used.
    """
    if not fork_allowed or jobs < 2:
        return None
    weights = _function_weights(module)
    plan = None if weights is None else _balanced(weights, jobs, "main", MIN_SAVED_FUNCTION_OPS)
    if plan is None:
        return None
    progress.stage(f"LLVM dialect and code generation in {len(plan)} shards")
    elsewhere = _elsewhere(plan)
    functions = {_name(op.operation): op.operation for op in module.body.operations}
    exported = _exported(
        plan, [set().union(*(_referenced(functions[name]) for name in names)) for names in plan]
    )

    def lower_shard(index: int, directory: str) -> None:
        _declare_other_functions(module, set(plan[index]))
        finish(module)
        with open(os.path.join(directory, f"shard{index}.json"), "w") as file:
            json.dump(
                {
                    "functions": _llvm_signatures(module),
                    "calls": sorted(_referenced(module.operation)),
                },
                file,
            )
        with open(os.path.join(directory, f"shard{index}.mlirbc"), "wb") as file:
            file.write(module_to_bytecode(module))
        code = compile_one(module, plan[index][0], elsewhere[index], exported[index])
        with open(os.path.join(directory, f"shard{index}.o"), "wb") as file:
            file.write(code)

    shards: list[bytes] = []

    def fits(directory: str) -> bool:
        visible = [{names[0], *names_exported} for names, names_exported in zip(plan, exported)]
        if not _signatures_fit(directory, visible):
            return False
        for index in range(len(plan)):
            with open(os.path.join(directory, f"shard{index}.mlirbc"), "rb") as file:
                shards.append(file.read())
        return True

    archive = _in_children(len(plan), lower_shard, fits)
    return None if archive is None else (archive, shards)
