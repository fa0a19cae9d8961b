"""The CPU backend's lowering: static StableHLO -> LLVM dialect -> object code.

Everything here may crash the process on bad input (some upstream passes,
LLVM's code generator), so ``shlo.compile`` runs it in the worker process
(``shlo.isolation``): the host only reads the bytecode and object code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shlo import progress
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import parallel_codegen
from shlo.backends.cpu.pipeline import (
    NARROW_FLOAT_PASSES,
    CpuPipeline,
    default_threads,
    uses_narrow_floats,
)
from shlo.backends.cpu.runtime import compile_object, linker, object_code
from shlo.frontend import check_array_sizes, default_max_bytes, prepare_static
from shlo.io import module_to_bytecode
from shlo.pipeline import run_pipeline
from shlo.to_linalg import LEGALIZE_TO_LINALG


@dataclass(frozen=True)
class Lowered:
    """The LLVM dialect module (bytecode) and the static types of its entry function.

    ``object_code`` is the ELF object LLVM generated from it, when asked for,
    or an ar archive of the objects of its shards (``parallel_codegen``). When
    the module was lowered in shards too, ``llvm_bytecode`` is empty and
    ``llvm_shards`` holds each shard's module.
    """

    llvm_bytecode: bytes
    input_types: tuple[str, ...]
    result_types: tuple[str, ...]
    object_code: bytes = b""
    llvm_shards: tuple[bytes, ...] = ()


# The last pass before which a function's lowering needs the others' bodies:
# it marks each private function that may take bare pointers, which changes
# its callers' code too. The rest lowers each function on its own.
LAST_WHOLE_MODULE_PASS = "shlo-outline-kernels"


def lower_to_llvm(
    source: bytes | str | ir.Module,
    entry: str,
    arg_types: Sequence[str] | None,
    pipeline: CpuPipeline | None = None,
    filename: str = "<module>",
    max_bytes: int | None = None,
) -> Lowered:
    """Lower ``entry`` of ``source`` to the LLVM dialect, specialized to ``arg_types``.

    ``arg_types`` (MLIR tensor type strings) refine a shape-polymorphic entry
    through shlo-remove-dynamism; None keeps the declared static types. Every
    array larger than ``max_bytes`` (default ``default_max_bytes()``) is an error.
    """
    module, inputs, results, rest = _lower(source, entry, arg_types, pipeline, filename, max_bytes)
    run_pipeline(module, rest, filename, verify_each=False)
    return Lowered(module_to_bytecode(module), inputs, results)


def lower_to_object(
    source: bytes | str | ir.Module,
    entry: str,
    arg_types: Sequence[str] | None,
    pipeline: CpuPipeline | None = None,
    filename: str = "<module>",
    max_bytes: int | None = None,
) -> Lowered:
    """``lower_to_llvm``, plus the object code LLVM generates from it.

    In the worker, a large module's functions are lowered to the LLVM dialect
    and compiled in shards on every core it may use, once the kernels are
    outlined (``parallel_codegen.lower_in_parallel``).
    """
    module, inputs, results, rest = _lower(source, entry, arg_types, pipeline, filename, max_bytes)
    # A pipeline without the pass (the scalar strategy) is not known to lower
    # each function on its own at any point: it runs whole.
    split = rest.index(LAST_WHOLE_MODULE_PASS) + 1 if LAST_WHOLE_MODULE_PASS in rest else len(rest)
    run_pipeline(module, rest[:split], filename, verify_each=False)
    if linker() is not None and split < len(rest):  # which links the shards' objects
        sharded = parallel_codegen.lower_in_parallel(
            module,
            lambda shard: run_pipeline(shard, rest[split:], filename, verify_each=False),
            object_code,
            default_threads(),
        )
        if sharded is not None:
            code, shards = sharded
            return Lowered(b"", inputs, results, code, tuple(shards))
    run_pipeline(module, rest[split:], filename, verify_each=False)
    llvm_bytecode = module_to_bytecode(module)
    progress.stage("LLVM code generation")
    return Lowered(llvm_bytecode, inputs, results, compile_object(module))


def _lower(
    source: bytes | str | ir.Module,
    entry: str,
    arg_types: Sequence[str] | None,
    pipeline: CpuPipeline | None,
    filename: str,
    max_bytes: int | None,
) -> tuple[ir.Module, tuple[str, ...], tuple[str, ...], list[str]]:
    """The module of ``lower_to_llvm`` before its loops are lowered, its entry's input
    and result types, and the pipeline elements that lower the rest."""
    limit = default_max_bytes() if max_bytes is None else max_bytes
    pipeline = pipeline or CpuPipeline()
    module, inputs, results = prepare_static(source, entry, arg_types, filename, limit)
    # The code generation passes are ours and upstream's, not the user's
    # input: the module is verified once per run, not after every pass. The
    # first run ends with upstream's legalization to linalg, whose patterns
    # make invalid IR of some bad input (a window of -2^63 elements) that the
    # next canonicalize crashed on.
    through_bufferization = pipeline.elements(through="bufferize")
    legalized = through_bufferization.index(LEGALIZE_TO_LINALG) + 1
    rest = pipeline.elements()[len(through_bufferization) :]
    if not uses_narrow_floats(module):
        rest = [element for element in rest if element not in NARROW_FLOAT_PASSES]
    progress.stage("linalg, tiling and vectorization")
    run_pipeline(module, through_bufferization[:legalized], filename, verify_each=False)
    run_pipeline(module, through_bufferization[legalized:], filename, verify_each=False)
    check_array_sizes(module, limit, filename, ("memref.alloc", "memref.alloca", "func.func"))
    progress.stage("loops to LLVM")
    return module, tuple(str(t) for t in inputs), tuple(str(t) for t in results), rest


def joined_llvm_bytecode(shards: Sequence[bytes]) -> bytes:
    """One LLVM-dialect module (bytecode) of the shards ``lower_to_object`` lowered apart:
    each function's definition in place of its declarations, one copy of each global."""
    context = new_context()
    joined = ir.Module.parse(shards[0], context)
    symbols = {
        ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
        for op in joined.body.operations
    }
    for shard in shards[1:]:
        module = ir.Module.parse(shard, context)  # alive while its ops move
        for op in list(module.body.operations):
            op = op.operation
            name = ir.StringAttr(op.attributes["sym_name"]).value
            present = symbols.get(name)
            defines = op.name == "llvm.func" and len(op.regions[0].blocks)
            if present is not None and not defines:
                continue
            if present is None:
                joined.body.append(op)
            else:
                op.move_before(present)
                present.erase()
            symbols[name] = op
    return module_to_bytecode(joined)
