"""shlo-outline-kernels: move each loop nest into a function, one per distinct nest.

Ours because upstream is missing: MLIR has no pass that outlines loop nests
on buffers and merges identical ones. Without it every kernel of a program
is code in one function, and LLVM compiles a 12-layer transformer's twelve
identical layers twelve times (most of its compile time). XLA likewise
emits one function per fusion and compiles identical ones once.

Each top-level ``scf.for`` or ``scf.forall`` of a function (the kernels
after bufferization) becomes a private ``func.func`` whose arguments are the
values the nest reads from outside (buffers, indices); constants are copied
in, so loop bounds stay constants. So does each run of vector code outside
loops: where one register tile covers a small matmul, its accumulator's
read, k loop and write. Left in the glue, a tiny Flax BART's were 27,000 of
its 46,000 LLVM ops, and its compile took 3.4 s instead of 2.6. The bodies
of while loops, branches and loops that carry buffers are searched the same
way: a decoding loop over a model (GPT-2 greedy search) left the whole model
in ``@main``, 27,700 of its 36,800 LLVM ops, compiled apart from the same
layers outside the loop. Nests that print the same, up to the
function's name, share one function. A private function (a kernel, or a
function of shlo-outline-tensor-kernels) whose buffers all have static
layouts, and that frees none of them, is marked ``llvm.bareptr``: each call
passes a buffer as one pointer, not as a memref descriptor.

A function left with no loops or other regions is glue (allocations, views
and calls): it is marked ``noinline optnone`` for LLVM, which then neither
optimizes it nor inlines kernels into it. For GPT-2 (12 layers) that glue
is ~24,000 LLVM instructions whose optimization took 0.8 s and bought nothing.
A private function left with calls alone (and the views and constants they
take), most functions of shlo-outline-tensor-kernels, is put in place of
each call of it and erased: the training step's 100 of them cost LLVM 7%
of its time (1146 -> 1062 ms on one thread).

  func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) {
    scf.for %i = %c0 to %c8 step %c1 { ... %a ... }
    scf.for %i = %c0 to %c8 step %c1 { ... %b ... }
    return
  }
  ==>
  func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) {
    call @shlo_kernel_0(%a) : (memref<8xf32>) -> ()
    call @shlo_kernel_0(%b) : (memref<8xf32>) -> ()
    return
  }
  func.func private @shlo_kernel_0(%arg0: memref<8xf32>) attributes {llvm.bareptr} { ... }
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import (
    VIEW_OPS,
    defining_op,
    is_private,
    op_count,
    ops_named,
    string_value,
    viewed_buffer,
    within,
)
from shlo.pass_framework import Pass

KERNEL_PREFIX = "shlo_kernel_"
_LOOPS = ("scf.for", "scf.forall")
# Ops copied into each kernel instead of passed in: constants keep bounds static,
# and i1 vectors passed in registers crash x86 code generation ("Cannot emit
# physreg copy instruction").
_COPIED = ("arith.constant", "ub.poison", "vector.constant_mask")


def _captured(nested: list[ir.Operation]) -> dict[ir.Value, list[tuple[ir.Operation, int]]]:
    """Values the nest uses but does not define, in first-use order, each with its uses
    (op and operand number) there."""
    defined: set[ir.Value] = set()
    for op in nested:
        defined.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                defined.update(block.arguments)
    captured: dict[ir.Value, list[tuple[ir.Operation, int]]] = {}
    for op in nested:
        for index, operand in enumerate(op.operands):
            if operand not in defined:
                captured.setdefault(operand, []).append((op, index))
    return captured


# Producers of an output copied in with the op writing it: a fill of a tensor.empty.
_INIT_PRODUCERS = ("linalg.fill", "tensor.empty")


def init_chain(op: ir.Operation, value: ir.Value) -> list[ir.Operation]:
    """The fill (and its tensor.empty) of ``op``'s operand ``value`` that only ``op`` uses.

    Outermost first; empty when another op also uses the operand.
    """
    chain: list[ir.Operation] = []
    while True:
        producer = defining_op(value)
        if producer is None:
            return chain
        uses = list(value.uses)
        if (
            producer.name not in _INIT_PRODUCERS
            or producer.parent != op.parent
            or len(uses) != 1
            or len(producer.results) != 1
        ):
            return chain
        chain.insert(0, producer)
        if producer.name == "tensor.empty":
            return chain
        value = producer.operands[len(producer.operands) - 1]


def defined_functions(module: ir.Operation) -> list[ir.Operation]:
    """The ``func.func`` ops of ``module`` that have a body."""
    return [
        op.operation
        for op in module.regions[0].blocks[0].operations
        if op.operation.name == "func.func" and len(op.operation.regions[0].blocks)
    ]


def _outline_in(
    block: ir.Block, outline_kernel: Callable[[list[ir.Operation]], ir.Operation]
) -> bool:
    """Outline the kernels of ``block`` and of the regions of its control flow;
    whether the block is left glue (no region). Not a closure of the pass's
    ``run``: calling itself, it would be a reference cycle (``_copy_before``)."""
    glue = True
    run: list[ir.Operation] = []
    # Frees inside a run, moved after it: a buffer's last use may
    # be the k loop, with the accumulator's write still to come.
    frees: list[ir.Operation] = []
    for op in [*(op.operation for op in block.operations), None]:
        if op is not None and _joins_a_run(op):
            run.append(op)
            continue
        if op is not None and op.name == "memref.dealloc" and run:
            frees.append(op)
            continue
        if _worth_a_kernel(run):
            call = outline_kernel(run)
            for free in reversed(frees):
                free.move_after(call)
        elif any(len(member.regions) for member in run):
            glue = False
        run, frees = [], []
        if op is None:
            continue
        if op.name in _LOOPS and not len(op.results):
            outline_kernel([op])
        elif len(op.regions):
            # A while loop (a model's decoding loop) or a branch: its
            # body's kernels are kernels too, shared with the rest.
            glue = False
            for region in op.regions:
                for inner in region.blocks:
                    _outline_in(inner, outline_kernel)
    return glue


@dataclass(frozen=True)
class OutlineKernelsPass(Pass):
    """Outline the loop nests of every function; identical nests share a function."""

    argument: ClassVar[str] = "shlo-outline-kernels"

    def run(self, module: ir.Operation) -> None:
        kernels = DistinctFunctions()

        def outline_kernel(ops: list[ir.Operation]) -> ir.Operation:
            name = f"{KERNEL_PREFIX}{len(kernels)}"
            return outline(module, ops, name, kernels, noinline=True)

        for function in defined_functions(module):
            # A list, not a generator: every block is outlined, glue or not.
            glue = all([_outline_in(block, outline_kernel) for block in function.regions[0].blocks])
            if glue:
                function.attributes["llvm.passthrough"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get("noinline"), ir.StringAttr.get("optnone")]
                )
        _inline_forwarding_functions(module)
        # The kernels, and the functions of shlo-outline-tensor-kernels, now
        # glue: every private function has its callers here to convert too.
        for function in defined_functions(module):
            if is_private(function) and takes_bare_pointers(function):
                function.attributes["llvm.bareptr"] = ir.UnitAttr.get()


# What a forwarding function may hold besides calls: constants (often dead,
# since the kernels copied them in) and views of its arguments.
_FORWARDED = frozenset((*_COPIED, *VIEW_OPS))


def _forwarding_functions(module: ir.Operation) -> dict[str, ir.Operation]:
    """The private functions whose body only calls other functions (on views and constants).

    What is left of a function of shlo-outline-tensor-kernels whose loop nest
    became a kernel. Called through, each is one more function for LLVM:
    about 0.2 ms of its fixed cost per function, plus the packed wrapper the
    JIT adds (100 of the training step's 233 functions).
    """
    referenced = {_symbol(op.attributes["value"]) for op in ops_named(module, "func.constant")}
    forwarding = {}
    for function in defined_functions(module):
        name = string_value(function.attributes["sym_name"])
        blocks = function.regions[0].blocks
        if not is_private(function) or len(blocks) != 1 or name in referenced:
            continue
        ops = [op.operation for op in blocks[0].operations]
        body, end = ops[:-1], ops[-1]
        if end.name == "func.return" and all(
            op.name in _FORWARDED
            or (op.name == "func.call" and _symbol(op.attributes["callee"]) != name)
            for op in body
        ):
            forwarding[name] = function
    return forwarding


def _inline_forwarding_functions(module: ir.Operation) -> None:
    """Replace each call of a forwarding function with the calls it makes."""
    forwarding = _forwarding_functions(module)
    # Rounds, for a forwarding function that calls another; a cycle of them
    # (a program that never returns) keeps its calls after the last round.
    for _ in range(len(forwarding)):
        calls = [
            call
            for call in ops_named(module, "func.call")
            if _symbol(call.attributes["callee"]) in forwarding
        ]
        if not calls:
            break
        for call in calls:
            _inline_call(call, forwarding[_symbol(call.attributes["callee"])])
    remaining = {_symbol(call.attributes["callee"]) for call in ops_named(module, "func.call")}
    for name, function in forwarding.items():
        if name not in remaining:
            function.erase()


def _symbol(attribute: ir.Attribute) -> str:
    return ir.FlatSymbolRefAttr(attribute).value


def _inline_call(call: ir.Operation, function: ir.Operation) -> None:
    """Put the calls of ``function`` in place of ``call``, with the constants and views they
    take."""
    block = function.regions[0].blocks[0]
    values: dict[ir.Value, ir.Value] = dict(zip(block.arguments, call.operands))
    for op in block.operations:
        op = op.operation
        if op.name == "func.return":
            for result, returned in zip(call.results, op.operands):
                result.replace_all_uses_with(_copied_value(returned, call, values))
        elif op.name == "func.call":
            _copy_before(op, call, values)
    call.erase()


def _copy_before(op: ir.Operation, call: ir.Operation, values: dict[ir.Value, ir.Value]) -> None:
    """Copy ``op`` before ``call``, its operands mapped by ``values`` (which gets its results).

    Module-level functions rather than closures of ``_inline_call``: two
    closures that call each other are a reference cycle, which kept the
    module's context alive until Python's next collection."""
    operands = [_copied_value(operand, call, values) for operand in op.operands]  # copied first
    clone = op.clone(ir.InsertionPoint(call))
    for index, operand in enumerate(operands):
        clone.operands[index] = operand
    values.update(zip(op.results, clone.results))


def _copied_value(
    inner: ir.Value, call: ir.Operation, values: dict[ir.Value, ir.Value]
) -> ir.Value:
    if inner not in values:  # a constant or view of the function's, copied when used
        _copy_before(defining_op(inner), call, values)
    return values[inner]


def _joins_a_run(op: ir.Operation) -> bool:
    """Whether a top-level op is computation that may share a kernel with its neighbours.

    Vector, arith and math ops, scalar loads and stores, and ``scf.for`` loops
    that carry values: what vectorization leaves outside loops when one tile
    covers a whole op (a small matmul's accumulator read, k loop and write).
    Constants stay out (kernels copy them in), and so do other regions
    (``scf.while``, ``scf.if``), which hold glue of their own.
    """
    if op.name in _COPIED:
        return False
    if len(op.regions):
        # Loops that carry vectors or scalars; one that carries buffers is
        # control flow (a fori_loop over a model), whose body is outlined.
        return (
            op.name == "scf.for"
            and len(op.results) > 0
            and not any(
                isinstance(r.type, (ir.MemRefType, ir.UnrankedMemRefType, ir.RankedTensorType))
                for r in op.results
            )
        )
    return op.name.split(".")[0] in ("vector", "arith", "math") or op.name in (
        "memref.load",
        "memref.store",
    )


def _worth_a_kernel(run: list[ir.Operation]) -> bool:
    """Whether a run of top-level computation becomes a kernel: it holds a loop or a
    vector, and passes no vector to or from the glue (vectors stay in registers;
    i1 vectors passed in registers crash x86 code generation)."""
    if not run:
        return False
    members = set(run)

    def is_vector(value: ir.Value) -> bool:
        return isinstance(value.type, ir.VectorType)

    def from_outside(value: ir.Value) -> bool:
        producer = defining_op(value)
        return producer is None or (producer not in members and producer.name not in _COPIED)

    computes = any(
        len(op.regions) or any(is_vector(v) for v in (*op.operands, *op.results)) for op in run
    )
    vector_in = any(is_vector(v) and from_outside(v) for op in run for v in op.operands)
    vector_out = any(
        is_vector(result) and any(use.owner.operation not in members for use in result.uses)
        for op in run
        for result in op.results
    )
    return computes and not vector_in and not vector_out


def _static_layout(memref: ir.MemRefType) -> bool:
    """Whether a memref's shape, strides and offset are all known (a bare pointer suffices)."""
    if not memref.has_static_shape:
        return False
    strides, offset = memref.get_strides_and_offset()
    return not any(memref.is_dynamic_stride_or_offset(v) for v in (*strides, offset))


def takes_bare_pointers(function: ir.Operation) -> bool:
    """Whether the kernel may take each memref as its aligned pointer alone.

    FuncToLLVM passes a memref to a function marked ``llvm.bareptr`` as one
    pointer instead of its descriptor's 3 + 2 * rank values, which the
    optnone glue would otherwise unpack at every call (GPT-2: 16,000 of its
    21,500 LLVM ops). That needs a static layout, and the kernel must not
    free an argument: it sees the aligned pointer as the allocated one. Its
    own buffers it may free.
    """
    arguments = set(function.regions[0].blocks[0].arguments)
    for argument in arguments:
        type_ = argument.type
        if isinstance(type_, ir.UnrankedMemRefType):
            return False
        if isinstance(type_, ir.MemRefType) and not _static_layout(type_):
            return False
    deallocs = ops_named(function, "memref.dealloc")
    return not any(viewed_buffer(dealloc.operands[0]) in arguments for dealloc in deallocs)


@dataclass
class _Outlined:
    function: ir.Operation
    name: str
    text: bytes | None  # None until printed


class DistinctFunctions:
    """The functions ``outline`` made so far, one per way they print.

    Printing a kernel costs more than outlining it (the training step's 122
    loop nests: 13.5 of shlo-outline-kernels' 43 ms). Functions that print
    alike have as many ops and the same type, so a function is printed only
    once an earlier one has both: most never are.
    """

    def __init__(self) -> None:
        self._by_shape: dict[tuple[int, str], list[_Outlined]] = {}  # by op count and type
        self._count = 0

    def __len__(self) -> int:
        """How many distinct functions there are."""
        return self._count

    def earlier_alike(self, function: ir.Operation, name: str) -> str | None:
        """The name of an earlier function that prints like ``function`` (named
        ``name``); None when there is none, and ``function`` joins them."""
        shape = (op_count(function), str(function.attributes["function_type"]))
        earlier = self._by_shape.setdefault(shape, [])
        text = _text(function, name) if earlier else None
        for outlined in earlier:
            if outlined.text is None:
                outlined.text = _text(outlined.function, outlined.name)
            if outlined.text == text:
                return outlined.name
        earlier.append(_Outlined(function, name, text))
        self._count += 1
        return None


def _text(function: ir.Operation, name: str) -> bytes:
    """``function`` printed, its own name replaced."""
    # Local scope: printing with the module's names would walk all of it. As
    # bytes: decoding the text took a fifth of the printing's time.
    asm = function.get_asm(binary=True, use_local_scope=True, assume_verified=True)
    return re.sub(rb"@" + re.escape(name.encode()) + rb"\b", b"@FUNCTION", asm)


def outline(
    module: ir.Operation,
    ops: list[ir.Operation],
    name: str,
    functions: DistinctFunctions,
    noinline: bool = False,
) -> ir.Operation:
    """Move ``ops`` (in order, one block) into a private function ``name``; returns the call.

    The call takes the place of the last op, so the results of the others must
    be used only inside ``ops``; results used after it become the function's.
    Constants are copied in. ``functions`` holds the functions outlined
    before: a function that prints like one of them (up to its name) is
    dropped and the call goes to that one.

    ``noinline`` keeps LLVM from inlining the function. Its callers are glue,
    which LLVM never optimizes, but the JIT adds a packed wrapper
    (``_mlir_<name>``) to every external function, and LLVM inlined each
    kernel into its unused wrapper: a quarter of GPT-2's object code.
    """
    nested = [inner for op in ops for inner in ops_named(op)]
    captured = _captured(nested)
    copied = [v for v in captured if (d := defining_op(v)) is not None and d.name in _COPIED]
    copied_set = set(copied)
    arguments = [v for v in captured if v not in copied_set]
    # Each result used after the ops, with those uses (the call's results replace them).
    outside_uses = {}
    for op in ops:
        for result in op.results:
            uses = [u for u in result.uses if not within(u.owner.operation, ops)]
            if uses:
                outside_uses[result] = uses
    results = list(outside_uses)
    last = ops[-1]
    with ir.InsertionPoint(module.regions[0].blocks[0]), last.location:
        function = ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get([v.type for v in arguments], [r.type for r in results])
                ),
                "sym_visibility": ir.StringAttr.get("private"),
            },
            regions=1,
        )
    if noinline:
        function.attributes["llvm.passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
    entry = function.regions[0].blocks.append(*[v.type for v in arguments])
    with ir.InsertionPoint(entry), last.location:
        returned = ir.Operation.create("func.return", operands=results)
    # Constants first, then the ops, both before the return.
    replacements: dict[ir.Value, ir.Value] = dict(zip(arguments, entry.arguments))
    for value in copied:
        copy = defining_op(value).clone(ir.InsertionPoint(returned))
        replacements[value] = copy.results[0]
    with ir.InsertionPoint(last), last.location:
        call = ir.Operation.create(
            "func.call",
            results=[r.type for r in results],
            operands=arguments,
            attributes={"callee": ir.FlatSymbolRefAttr.get(name)},
        )
    for result, replacement in zip(results, call.results):
        for use in outside_uses[result]:
            use.owner.operands[use.operand_number] = replacement
    for op in ops:
        op.move_before(returned)
    # The ops' own operands, not every use: a constant may have thousands.
    for value, uses in captured.items():
        for op, index in uses:
            op.operands[index] = replacements[value]
    existing = functions.earlier_alike(function, name)
    if existing is None:
        return call
    call.attributes["callee"] = ir.FlatSymbolRefAttr.get(existing)
    function.erase()
    return call
