"""Object code for modules that are only glue, from one LLVM target machine kept for the process.

A program whose work is all in precompiled kernels (matmuls, convolutions,
reductions, softmax) lowers to an entry that only calls them: ``optnone``
glue, which LLVM does not optimize. The ExecutionEngine sets LLVM up again
for every module (a JIT, a target machine, the host's CPU features): most
of the 5.3 ms it took for the bench matmul's module. Here llvmlite's LLVM
compiles such a module with a target machine made once per process
(``prepare``: the worker makes it while it waits for its first request,
anywhere else the first glue module does), in 1.2 ms.

Modules with kernels stay with the ExecutionEngine, whose LLVM is MLIR's
own. On those, llvmlite's older LLVM was slower at -O2 (the bench MLP's
module: 23 ms against 20).

The object is the one the ExecutionEngine dumps: x86-64 ELF for the large
code model, statically relocated, with the entry's packed wrapper
``_mlir_<entry>``. The loader and the linker take it unchanged.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from shlo._mlir_compat import ir, translate_module_to_llvmir
from shlo.ir_utils import is_optnone, ops_named
from shlo.llvmlite_ir import to_llvmlite_syntax

# A global larger than this goes through LLVM IR text twice (printed and
# parsed): such a module goes to the ExecutionEngine.
MAX_GLOBAL_ELEMENTS = 4096

_lock = threading.Lock()
_tried = False
_llvm: Any = None  # llvmlite.binding, once prepare() made the target machine
_machine: Any = None


def prepare() -> bool:
    """Make the target machine for this host and compile a little glue with it,
    once (about 30 ms, most of it importing llvmlite); whether there is one.
    Without llvmlite, glue goes to the ExecutionEngine like the rest."""
    global _llvm, _machine, _tried
    with _lock:
        if not _tried:
            _tried = True
            try:
                import llvmlite.binding as llvm

                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                _machine = llvm.Target.from_default_triple().create_target_machine(
                    cpu=llvm.get_host_cpu_name(),
                    features=llvm.get_host_cpu_features().flatten(),
                    # Glue is optnone: -O0's far shorter pass pipeline gives it the
                    # same code (the bench matmul's: 1.2 instead of 2.1 ms).
                    opt=0,
                    reloc="static",
                    codemodel="large",
                )
                _llvm = llvm
            except Exception:  # not installed, or no target for this host
                _machine = None
                return False
            try:
                # LLVM sets up its parser and code generation on first use: the bench
                # matmul's first glue took 4.0-4.5 ms to compile, later ones 1.3-1.6.
                _machine.emit_object(_llvm.parse_assembly(_WARM_UP_GLUE))
            except Exception:  # the first real glue pays it
                pass
        return _machine is not None


# Glue's kind of code: a load, a call of a function defined elsewhere.
_WARM_UP_GLUE = """
declare void @kernel(ptr)
define void @glue(ptr %arguments) #0 {
  %first = load ptr, ptr %arguments
  call void @kernel(ptr %first)
  ret void
}
attributes #0 = { noinline optnone }
"""


def _small_global(op: ir.Operation) -> bool:
    if "value" not in op.attributes:
        return len(op.regions[0].blocks) == 0 or len(op.regions[0].blocks[0].operations) < 64
    try:
        value = op.attributes["value"]
    except TypeError:  # the bindings cannot read dense complex values: the JIT takes them
        return False
    if isinstance(value, ir.DenseElementsAttr):
        return math.prod(ir.ShapedType(value.type).shape) <= MAX_GLOBAL_ELEMENTS
    if isinstance(value, ir.StringAttr):
        return len(value.value_bytes) <= MAX_GLOBAL_ELEMENTS
    return isinstance(value, (ir.IntegerAttr, ir.FloatAttr))


def only_glue(module: ir.Module | ir.Operation) -> bool:
    """Whether every function ``module`` (LLVM dialect) defines is ``optnone``, none
    runs OpenMP regions (which become functions LLVM optimizes) and its globals
    are small."""
    for op in module.operation.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "llvm.func":
            if len(op.regions[0].blocks) and not is_optnone(op):
                return False
        elif op.name == "llvm.mlir.global":
            if not _small_global(op):
                return False
    return not ops_named(module.operation, "omp.parallel")


def _add_packed_wrapper(module: ir.Operation, entry: str) -> ir.Operation:
    """``_mlir_<entry>(void **args)``, which calls ``entry(*(void **)args[0])``, as the
    ExecutionEngine adds to the functions it exports (the entry takes one pointer:
    shlo-pack-entry-arguments)."""
    with module.context, module.location:
        pointer = ir.Type.parse("!llvm.ptr")
        with ir.InsertionPoint(module.regions[0].blocks[0]):
            wrapper = ir.Operation.create(
                "llvm.func",
                attributes={
                    "sym_name": ir.StringAttr.get(f"_mlir_{entry}"),
                    "function_type": ir.TypeAttr.get(ir.Type.parse("!llvm.func<void (ptr)>")),
                },
                regions=1,
            )
        block = wrapper.regions[0].blocks.append(pointer)
        with ir.InsertionPoint(block):
            packed = block.arguments[0]
            slot = ir.Operation.create("llvm.load", results=[pointer], operands=[packed])
            argument = ir.Operation.create("llvm.load", results=[pointer], operands=[slot.result])
            ir.Operation.create(
                "llvm.call",
                operands=[argument.result],
                attributes={
                    "callee": ir.FlatSymbolRefAttr.get(entry),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0]),
                    "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
                },
            )
            ir.Operation.create("llvm.return")
    return wrapper


def _entry_takes_one_pointer(module: ir.Operation, entry: str) -> bool:
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
            return str(ir.TypeAttr(op.attributes["function_type"]).value) == (
                "!llvm.func<void (ptr)>"
            )
    return False


def object_code(module: ir.Module | ir.Operation, entry: str) -> bytes | None:
    """The object code of ``module`` (LLVM dialect), which exports ``entry``; None
    unless the module is only glue (``only_glue``), its entry takes one pointer
    and llvmlite reads it. Adds the entry's packed wrapper to ``module``."""
    op = module.operation
    if not only_glue(op) or not _entry_takes_one_pointer(op, entry) or not prepare():
        return None
    wrapper = _add_packed_wrapper(op, entry)
    try:
        text = to_llvmlite_syntax(translate_module_to_llvmir(op))
        # llvmlite parses into one global LLVM context: one module at a time.
        with _lock:
            llvm_module = _llvm.parse_assembly(text)
            llvm_module.triple = _machine.triple
            llvm_module.data_layout = str(_machine.target_data)
            return bytes(_machine.emit_object(llvm_module))
    except Exception:  # IR llvmlite's older LLVM cannot read: the JIT says what is wrong
        # The ExecutionEngine adds its own wrapper.
        wrapper.erase()
        return None
