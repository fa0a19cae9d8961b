"""From a StableHLO module to the LLVM dialect for one call signature.

This is the part of compilation that may abort the process on bad input
(some upstream passes do), so ``shlo.compile`` runs it in a separate process
(see ``shlo.isolation``) and only JIT-compiles the verified result itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shlo._mlir_compat import ir
from shlo.cpu_pipeline import CpuPipeline
from shlo.diagnostics import ShloError
from shlo.io import load_module, module_to_bytecode
from shlo.pipeline import run_pipeline

# Make every program a single static function of tensors: composites and
# calls are inlined, CHLO and quantized math become plain StableHLO.
FRONTEND = [
    "func.func(stablehlo-legalize-composite-to-call)",
    "inline",
    "symbol-dce",
    # XLA's broadcasting semantics, with fewer ops than upstream; upstream
    # then expands the CHLO ops that do not broadcast (erf, top_k, ...).
    "shlo-legalize-broadcasts",
    "func.func(chlo-legalize-to-stablehlo)",
    # Unsigned storage and region ops are beyond upstream's quantized lowering.
    "shlo-widen-unsigned-quantized",
    "shlo-legalize-quantized-regions",
    "func.func(stablehlo-legalize-quantized-op-to-qdq)",
    "func.func(stablehlo-legalize-quant-to-math)",
    # The quantized math is written in CHLO broadcasting ops.
    "shlo-legalize-broadcasts",
    "func.func(chlo-legalize-to-stablehlo)",
    # Before canonicalize folds ops that upstream gets wrong (i1 add as xor).
    "shlo-fix-elementwise-semantics",
    "canonicalize",
]


@dataclass(frozen=True)
class Lowered:
    """The LLVM dialect module (bytecode) and the static types of its entry function."""

    llvm_bytecode: bytes
    input_types: tuple[str, ...]
    result_types: tuple[str, ...]


def function_types(module: ir.Module, entry: str) -> tuple[list[ir.Type], list[ir.Type]]:
    """Argument and result types of ``entry``; ShloError when there is no such function."""
    for op in module.body.operations:
        if (
            op.operation.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == entry
        ):
            function_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            return list(function_type.inputs), list(function_type.results)
    names = [
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in module.body.operations
        if op.operation.name == "func.func"
    ]
    listed = ", ".join("@" + name for name in names) or "no functions"
    raise ShloError(f"no function @{entry} in the module; it has {listed}")


def keep_only_entry_public(module: ir.Module, entry: str) -> None:
    """Other functions become private so that, once inlined, symbol-dce drops them."""
    with module.context:
        for op in module.body.operations:
            if op.operation.name != "func.func":
                continue
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if name == entry:
                op.attributes["sym_name"] = ir.StringAttr.get("main")
            else:
                if name == "main":
                    op.attributes["sym_name"] = ir.StringAttr.get("_shlo_renamed_main")
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")


def lower_to_llvm(
    source: bytes | str | ir.Module,
    entry: str,
    arg_types: Sequence[str] | None,
    pipeline: CpuPipeline | None = None,
    filename: str = "<module>",
) -> Lowered:
    """Lower ``entry`` of ``source`` to the LLVM dialect, specialized to ``arg_types``.

    ``arg_types`` (MLIR tensor type strings) refine a shape-polymorphic entry
    through shlo-remove-dynamism; None keeps the declared static types.
    """
    module = load_module(source)
    function_types(module, entry)  # a clear error before any pass runs
    keep_only_entry_public(module, entry)
    run_pipeline(module, FRONTEND, filename)
    # Static programs may still hold dynamic ops with constant shape operands.
    types = f"{{types={','.join(arg_types)}}}" if arg_types is not None else ""
    run_pipeline(module, [f"shlo-remove-dynamism{types}"], filename)
    inputs, results = function_types(module, "main")
    for type_ in [*inputs, *results]:
        if not isinstance(type_, ir.RankedTensorType) or not type_.has_static_shape:
            raise ShloError(f"@{entry} has a dynamic or non-tensor type {type_} after refinement")
    run_pipeline(module, (pipeline or CpuPipeline()).elements(), filename)
    return Lowered(
        module_to_bytecode(module),
        tuple(str(t) for t in inputs),
        tuple(str(t) for t in results),
    )
