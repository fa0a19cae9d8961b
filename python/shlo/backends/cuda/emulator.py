"""The CUDA backend's kernels run on the CPU, for testing without a GPU.

``emulate`` lowers a program as ``target="cuda"`` does, up to the outlined
kernels and their launches, then replaces each ``gpu.launch_func`` by a call
to a CPU function that runs the kernel's blocks and threads one after
another (``gpu.block_id``, ``gpu.thread_id``, ... becoming loop indices), and
compiles and runs the host code as the CPU backend does. So a machine
without a GPU checks what the CUDA-specific stages compute: the loop
tiling and mapping to blocks and threads, the kernels' bounds checks, the
reductions' partial sums and ``gpu.all_reduce``, the copies done by kernels
and the host code around them. With ``check_bounds`` every load and store
is checked against its buffer (``generate-runtime-verification``): an
access out of bounds aborts the process, so run it isolated.

What it does not check is the device stage: NVVM, libdevice, PTX (math runs
through the CPU's libm, so results may differ from the GPU's by an ulp).

A kernel that synchronizes its threads other than through one top-level
``gpu.all_reduce`` (barriers, shuffles) cannot run thread after thread and
raises ShloError.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import arith, ir, scf
from shlo.backends.cpu.runtime import LoadedFunction, fix_sub_byte
from shlo.backends.cuda import pipeline as cuda_pipeline
from shlo.diagnostics import ShloError
from shlo.io import module_to_bytecode
from shlo.ir_utils import index_constant, ops_named, remap_operands
from shlo.pipeline import run_pipeline

# gpu.all_reduce kind -> (float op, integer op) that combines two values.
_COMBINE = {
    "add": ("arith.addf", "arith.addi"),
    "mul": ("arith.mulf", "arith.muli"),
    "maximumf": ("arith.maximumf", None),
    "minimumf": ("arith.minimumf", None),
    "maxnumf": ("arith.maxnumf", None),
    "minnumf": ("arith.minnumf", None),
    "and": (None, "arith.andi"),
    "or": (None, "arith.ori"),
    "xor": (None, "arith.xori"),
    "maxsi": (None, "arith.maxsi"),
    "minsi": (None, "arith.minsi"),
    "maxui": (None, "arith.maxui"),
    "minui": (None, "arith.minui"),
}

_DIMENSIONS = ("x", "y", "z")


def _dimension(op: ir.Operation) -> int:
    return _DIMENSIONS.index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))


def _loop_nest(bounds: Sequence[ir.Value], body: Callable[[list[ir.Value]], None]) -> None:
    """Nested scf.for over [0, bound) for each bound, the first outermost."""
    if not bounds:
        body([])
        return
    loop = scf.ForOp(index_constant(0), bounds[0], index_constant(1))
    with ir.InsertionPoint(loop.body):
        _loop_nest(bounds[1:], lambda inner: body([loop.induction_variable, *inner]))
        scf.YieldOp([])


def _clone_ops(
    ops: Sequence[ir.Operation], mapping: dict[ir.Value, ir.Value], ids: dict[str, list[ir.Value]]
) -> None:
    """Clone ``ops`` at the insertion point, remapping operands; thread and block ids,
    block and grid sizes become ``ids``' values."""
    for op in ops:
        name = op.name
        if name in ("gpu.block_id", "gpu.thread_id", "gpu.block_dim", "gpu.grid_dim"):
            mapping[op.results[0]] = ids[name][_dimension(op)]
            continue
        if name == "gpu.return":
            continue
        clone = op.clone()
        remap_operands(clone, mapping)
        for old, new in zip(op.results, clone.results):
            mapping[old] = new


def _writes_memory(ops: Sequence[ir.Operation]) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if op.operation.name in ("memref.store", "memref.copy", "memref.atomic_rmw"):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    for op in ops:
        op.walk(visit)
    return found


def _combine(kind: str, left: ir.Value, right: ir.Value) -> ir.Value:
    floating = not isinstance(left.type, ir.IntegerType | ir.IndexType)
    name = _COMBINE[kind][0 if floating else 1]
    if name is None:
        raise ShloError(f"gpu.all_reduce {kind} on {left.type} cannot be emulated")
    return ir.Operation.create(name, results=[left.type], operands=[left, right]).result


def _emulated_kernel(kernel: ir.Operation, name: str, module: ir.Module) -> str:
    """A func.func ``name`` running ``kernel`` (a gpu.func) for every block and thread."""
    body = kernel.regions[0].blocks
    if len(body) != 1:
        raise ShloError(f"kernel {name}: control flow across blocks cannot be emulated")
    block = body[0]
    ops = [op.operation for op in block.operations]
    reductions = [op for op in ops if op.name == "gpu.all_reduce"]
    nested = [op for op in ops_named(kernel, "gpu.all_reduce") if op.operation.parent != kernel]
    if (
        len(reductions) > 1
        or nested
        or ops_named(kernel, "gpu.barrier")
        or ops_named(kernel, "gpu.shuffle")
    ):
        raise ShloError(f"kernel {name}: threads that synchronize cannot be emulated")
    argument_types = [a.type for a in block.arguments]
    index = ir.IndexType.get()
    with module.context, kernel.location, ir.InsertionPoint(module.body):
        function = ir.Operation.create(
            "func.func",
            regions=1,
            attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get([*argument_types, *[index] * 6], [])
                ),
                "sym_visibility": ir.StringAttr.get("private"),
            },
        )
        entry = function.regions[0].blocks.append(*argument_types, *[index] * 6)
        arguments = list(entry.arguments)
        grid, threads = arguments[-6:-3], arguments[-3:]
        with ir.InsertionPoint(entry):

            def per_block(block_ids: list[ir.Value]) -> None:
                ids = {
                    "gpu.block_id": list(reversed(block_ids)),
                    "gpu.block_dim": threads,
                    "gpu.grid_dim": grid,
                }
                base = dict(zip(block.arguments, arguments))
                thread_bounds = list(reversed(threads))
                if not reductions:
                    _loop_nest(
                        thread_bounds,
                        lambda t: _clone_ops(
                            ops, dict(base), {**ids, "gpu.thread_id": list(reversed(t))}
                        ),
                    )
                    return
                # Threads first run up to the all_reduce, folding their values into
                # one; then each runs the rest with the total.
                reduction = reductions[0]
                cut = ops.index(reduction)
                before, after = ops[:cut], ops[cut + 1 :]
                if _writes_memory(before):
                    raise ShloError(f"kernel {name}: writes before its all_reduce")
                kind = str(reduction.attributes["op"]).split()[-1].rstrip(">")
                total = _fold_threads(before, reduction, kind, base, ids, threads)
                _loop_nest(
                    thread_bounds,
                    lambda t: _clone_ops(
                        before + after,
                        {**base, reduction.results[0]: total},
                        {**ids, "gpu.thread_id": list(reversed(t))},
                    ),
                )

            _loop_nest(list(reversed(grid)), per_block)
            ir.Operation.create("func.return")
    return name


def _fold_threads(
    before: list[ir.Operation],
    reduction: ir.Operation,
    kind: str,
    base: dict[ir.Value, ir.Value],
    ids: dict[str, list[ir.Value]],
    threads: list[ir.Value],
) -> ir.Value:
    """The all_reduce of every thread's value: one loop over the block's threads folds them."""
    zero, one = index_constant(0), index_constant(1)

    # The first thread's value starts the fold, so no identity is needed.
    def value_at(thread: list[ir.Value]) -> ir.Value:
        mapping = dict(base)
        _clone_ops(before, mapping, {**ids, "gpu.thread_id": thread})
        return mapping[reduction.operands[0]]

    first = value_at([zero, zero, zero])
    count = arith.MulIOp(arith.MulIOp(threads[0], threads[1]).result, threads[2]).result
    outer = scf.ForOp(one, count, one, [first])
    with ir.InsertionPoint(outer.body):
        linear = outer.induction_variable
        x = arith.RemUIOp(linear, threads[0]).result
        rest = arith.DivUIOp(linear, threads[0]).result
        y = arith.RemUIOp(rest, threads[1]).result
        z = arith.DivUIOp(rest, threads[1]).result
        value = value_at([x, y, z])
        scf.YieldOp([_combine(kind, outer.inner_iter_args[0], value)])
    return outer.results[0]


def emulate_kernels(module: ir.Module) -> None:
    """Replace every gpu.launch_func of ``module`` by a call to its kernel emulated on the CPU
    (see the module doc), and erase the gpu.modules."""
    emulated: dict[str, str] = {}
    kernel_modules = [
        op.operation for op in module.body.operations if op.operation.name == "gpu.module"
    ]
    with module.context:
        for kernel_module in kernel_modules:
            module_name = ir.StringAttr(kernel_module.attributes["sym_name"]).value
            for op in kernel_module.regions[0].blocks[0].operations:
                op = op.operation
                if op.name != "gpu.func":
                    continue
                kernel_name = ir.StringAttr(op.attributes["sym_name"]).value
                name = f"__emulated_{module_name}_{kernel_name}"
                emulated[f"@{module_name}::@{kernel_name}"] = _emulated_kernel(op, name, module)
        for launch in ops_named(module.operation, "gpu.launch_func"):
            target = str(launch.attributes["kernel"])
            # async dependencies, grid x y z, block x y z, cluster x y z, dynamic shared
            # memory, kernel operands, async object.
            segments = list(ir.DenseI32ArrayAttr(launch.attributes["operandSegmentSizes"]))
            if segments[0] or any(segments[7:11]) or segments[12] or len(launch.results):
                raise ShloError("a launch with async tokens, clusters or shared memory")
            operands = list(launch.operands)
            sizes, arguments = operands[:6], operands[6 : 6 + segments[11]]
            with launch.location, ir.InsertionPoint(launch):
                ir.Operation.create(
                    "func.call",
                    operands=[*arguments, *sizes],
                    attributes={"callee": ir.FlatSymbolRefAttr.get(emulated[target])},
                )
            launch.erase()
        for kernel_module in kernel_modules:
            kernel_module.erase()


def emulate(
    source: bytes | str, entry: str = "main", check_bounds: bool = False
) -> Callable[..., Any]:
    """A function running ``entry`` with the CUDA backend's kernels emulated on the CPU.

    Called with numpy arrays of the entry's (static) input types, it returns
    its results as numpy arrays. Runs in this process (no isolation).
    """
    module, (inputs, results) = cuda_pipeline.prepare_for_cuda(
        source, entry, None, "<emulated>", 1 << 34
    )
    cuda_pipeline.outline_kernels(module, "<emulated>")
    emulate_kernels(module)
    checks = ["generate-runtime-verification"] if check_bounds else []
    host = [*checks, "canonicalize", *cuda_pipeline.HOST_STAGE]
    run_pipeline(module, host, "<emulated>", verify_each=False)
    function = LoadedFunction(module_to_bytecode(module), inputs, results)

    def call(*arrays: np.ndarray) -> list[np.ndarray]:
        prepared = [
            np.ascontiguousarray(a).reshape(t.shape).view(t.dtype)
            for a, t in zip(arrays, function.inputs)
        ]
        outputs = function(prepared)
        return [fix_sub_byte(o, t.element_type) for o, t in zip(outputs, function.results)]

    return call
