"""The frontend every backend shares: from a program as exported to static StableHLO.

It loads the module, keeps the entry function, inlines composites and calls,
expands CHLO and quantized math, applies XLA's broadcasting semantics and
refines shapes (``prepare_static``), and checks array sizes against the
memory limit. Backends (``shlo.backends``) take it from there.

The parser and some upstream passes may crash the process on bad input, so
``shlo.compile`` runs this in a separate process (see ``shlo.isolation``).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from shlo import progress
from shlo._mlir_compat import ir, quant
from shlo.diagnostics import Diagnostic, ShloError, collect_diagnostics
from shlo.io import load_module, module_to_bytecode
from shlo.ir_utils import constant_index, ops_named, string_value
from shlo.isolation import positive_setting
from shlo.pipeline import run_pipeline

# Make every program a single static function of tensors: composites and
# calls are inlined, CHLO and quantized math become plain StableHLO.
FRONTEND = [
    "func.func(stablehlo-legalize-composite-to-call)",
    # Without the inliner's own canonicalize (0.7 ms even on a one-op
    # program); the canonicalize at the end does that work.
    "inline{default-pipeline=}",
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

# The largest array (argument, result or intermediate) a program may hold,
# unless the caller or SHLO_MAX_BYTES says otherwise: 16 GiB or half the
# physical memory, whichever is less. The generated code does not check its
# allocations, so this is checked before anything runs.
DEFAULT_MAX_BYTES = 16 << 30

# Shape and element type per parameter, None for dynamic sizes.
Params = list[tuple[tuple[int | None, ...], str]]


def default_max_bytes() -> int:
    """SHLO_MAX_BYTES when set, else DEFAULT_MAX_BYTES or half the physical memory."""
    value = positive_setting("SHLO_MAX_BYTES", int, "bytes")
    if value is not None:
        return int(value)
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return DEFAULT_MAX_BYTES
    return min(DEFAULT_MAX_BYTES, physical // 2)


@dataclass(frozen=True)
class EntrySignature:
    """What the host needs of a module: its bytecode and the entry's parameters."""

    module_bytecode: bytes
    params: Params


def symbol_name(op: ir.Operation | ir.OpView) -> str:
    """The op's sym_name; a name that is not valid UTF-8 gets replacement characters."""
    return string_value(op.attributes["sym_name"])


def find_function(module: ir.Module, entry: str, filename: str = "") -> ir.Operation:
    names = []
    for op in module.body.operations:
        if op.operation.name == "func.func":
            name = symbol_name(op)
            if name == entry:
                return op.operation
            names.append(name)
    listed = ", ".join("@" + name for name in names) or "no functions at its top level"
    message = f"no function @{entry} in the module; it has {listed}"
    # The implicit module of a file has no line: point at its first op, or line 1.
    location = module.operation.location
    if str(location).endswith(":0:0)") and len(module.body.operations):
        location = module.body.operations[0].location
    error = error_at(location, message, filename)
    if not any(d.line for d in error.diagnostics):
        where = error.diagnostics[0].file if error.diagnostics else filename
        error = ShloError(message, [Diagnostic("error", message, where or filename, 1, 1)])
    raise error


def function_types(
    module: ir.Module, entry: str, filename: str = ""
) -> tuple[list[ir.Type], list[ir.Type]]:
    """Argument and result types of ``entry``; ShloError when there is no such function."""
    function = find_function(module, entry, filename)
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    return list(function_type.inputs), list(function_type.results)


def error_at(location: ir.Location, message: str, filename: str) -> ShloError:
    """A ShloError whose diagnostic points at ``location`` (file:line:col when it has one)."""
    with collect_diagnostics(location.context, filename) as collector:
        location.emit_error(message)
    return ShloError(message, collector.diagnostics)


def keep_only_entry_public(module: ir.Module, entry: str, filename: str = "") -> None:
    """Rename ``entry`` to @main, make it public and every other function private.

    Renaming updates every call, so an entry that calls the old @main still
    calls that function; once inlined, symbol-dce drops the private ones.
    """
    find_function(module, entry, filename)
    with module.context:
        body = module.operation
        functions = [
            op.operation for op in module.body.operations if op.operation.name == "func.func"
        ]
        if entry != "main":
            for op in functions:
                if symbol_name(op) == "main":
                    fresh = "_shlo_renamed_main"
                    while any(symbol_name(f) == fresh for f in functions):
                        fresh = "_" + fresh
                    ir.SymbolTable.replace_all_symbol_uses("main", fresh, body)
                    ir.SymbolTable.set_symbol_name(op, fresh)
            ir.SymbolTable.replace_all_symbol_uses(entry, "main", body)
            ir.SymbolTable.set_symbol_name(find_function(module, entry), "main")
        for op in functions:
            if symbol_name(op) == "main":
                if "sym_visibility" in op.attributes:
                    del op.attributes["sym_visibility"]
            else:
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")


def inspect_entry(
    source: bytes | str | ir.Module, entry: str, filename: str = "<module>"
) -> EntrySignature:
    """Parse ``source`` and read the parameters of ``entry`` (in the worker: parsing may crash)."""
    return inspect_module(load_module(source, filename=filename), entry, filename)


def inspect_module(module: ir.Module, entry: str, filename: str = "<module>") -> EntrySignature:
    """``inspect_entry`` of a parsed module."""
    inputs, _ = function_types(module, entry, filename)
    params: Params = []
    for index, type_ in enumerate(inputs):
        if not isinstance(type_, ir.RankedTensorType):
            raise error_at(
                find_function(module, entry).location,
                f"argument {index} of @{entry} has type {type_}; expected a ranked tensor",
                filename,
            )
        shape = tuple(
            None if type_.is_dynamic_dim(d) else type_.shape[d] for d in range(type_.rank)
        )
        params.append((shape, str(type_.element_type)))
    return EntrySignature(module_to_bytecode(module), params)


def element_bytes(element: ir.Type) -> int:
    """Bytes one element of this type takes in memory."""
    if isinstance(element, ir.ComplexType):
        return 2 * element_bytes(element.element_type)
    if isinstance(element, (ir.IntegerType, ir.FloatType)):
        return max(1, math.ceil(element.width / 8))  # sub-byte values take a byte
    if isinstance(element, quant.QuantizedType):
        return max(1, math.ceil(element.storage_type_integral_width / 8))
    return 8  # index and anything else: the widest scalar


def array_bytes(type_: ir.Type) -> int | None:
    """Bytes of a static tensor or memref type, None for other types."""
    if not isinstance(type_, (ir.RankedTensorType, ir.MemRefType)) or not type_.has_static_shape:
        return None
    return math.prod(type_.shape) * element_bytes(type_.element_type)


def check_array_sizes(
    module: ir.Module, max_bytes: int, filename: str, ops: Sequence[str] = ()
) -> None:
    """ShloError naming the first value larger than ``max_bytes``.

    Checks the arguments and results of every function and the results of
    ``ops`` (every op when empty), before any of them is allocated.
    """
    for op in ops_named(module.operation, *ops):
        types = [(f"result {i}", r.type) for i, r in enumerate(op.results)]
        if op.name == "func.func":
            function_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            types = [(f"argument {i}", t) for i, t in enumerate(function_type.inputs)]
            types += [(f"result {i}", t) for i, t in enumerate(function_type.results)]
        for what, type_ in types:
            size = array_bytes(type_)
            if size is not None and size > max_bytes:
                raise error_at(
                    op.location,
                    f"{what} of {op.name} has type {type_} ({size} bytes), more than the "
                    f"limit of {max_bytes} bytes (raise it with max_bytes= or SHLO_MAX_BYTES)",
                    filename,
                )


# Ops that read or write one element at their index operands (after the
# tensor or buffer), and the operand that is the tensor or buffer.
_ELEMENT_ACCESSES = {
    "tensor.extract": 0,
    "tensor.insert": 1,
    "memref.load": 0,
    "memref.store": 1,
}


def check_constant_indices(module: ir.Module, filename: str) -> None:
    """ShloError naming the first element access at a constant index outside its array.

    Such an access is undefined behavior in MLIR, and the compiled code would
    read or write memory that is not the array's: hand-written IR gets an
    error here instead of code that may crash the process calling it.
    (StableHLO's own indexing ops clamp their indices.)
    """
    for op in ops_named(module.operation, *_ELEMENT_ACCESSES):
        container = _ELEMENT_ACCESSES[op.name]
        type_ = op.operands[container].type
        if not isinstance(type_, (ir.RankedTensorType, ir.MemRefType)):
            continue
        indices = list(op.operands)[container + 1 :]
        for dimension, index in enumerate(indices[: type_.rank]):
            value = constant_index(index)
            size = type_.shape[dimension]
            if value is None or type_.is_dynamic_dim(dimension) or 0 <= value < size:
                continue
            raise error_at(
                op.location,
                f"{op.name} at index {value} of dimension {dimension} of {type_}: "
                f"expected an index in [0, {size})",
                filename,
            )


# Whether prepare_static verifies the module after every pass, or once after
# each of its two pipelines. The verifier after each of GPT-2's frontend passes
# took 45 of its 105 ms. A compilation that fails or crashes runs again with
# it (``retry_verifying_each_pass``, ``shlo.isolation``), so that input which
# makes a pass produce invalid IR is still reported at that pass, before a
# later pass can crash on it.
_verify_each_pass: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "shlo_verify_each_pass", default=False
)

_Result = TypeVar("_Result")


@contextlib.contextmanager
def verifying_each_pass() -> Iterator[None]:
    """Within it, ``prepare_static`` verifies the module after every pass."""
    token = _verify_each_pass.set(True)
    try:
        yield
    finally:
        _verify_each_pass.reset(token)


def verifies_each_pass() -> bool:
    """Whether ``prepare_static`` verifies the module after every pass here."""
    return _verify_each_pass.get()


def retry_verifying_each_pass(
    run: Callable[[], _Result], may_retry: Callable[[], bool] = lambda: True
) -> _Result:
    """``run()``; when it raises ShloError and ``may_retry()``, ``run()`` again
    verifying after every frontend pass, whose error (or result) it gives."""
    if verifies_each_pass():
        return run()
    try:
        return run()
    except ShloError:
        if not may_retry():
            raise
    with verifying_each_pass():
        return run()


def prepare_static(
    source: bytes | str | ir.Module,
    entry: str,
    arg_types: Sequence[str] | None,
    filename: str,
    max_bytes: int,
) -> tuple[ir.Module, list[ir.Type], list[ir.Type]]:
    """``entry`` of ``source`` as a static StableHLO @main, with its input and result types.

    ``arg_types`` (MLIR tensor type strings) refine a shape-polymorphic entry
    through shlo-remove-dynamism; None keeps the declared static types. Every
    value larger than ``max_bytes`` is an error.
    """
    progress.stage("frontend")
    module = load_module(source, filename=filename)
    function_types(module, entry, filename)  # a clear error before any pass runs
    keep_only_entry_public(module, entry, filename)
    verify_each = verifies_each_pass()
    run_pipeline(module, FRONTEND, filename, verify_each)
    progress.stage("shape refinement")
    from shlo.passes.frontend.remove_dynamism import is_static_stablehlo

    # A program of static types may still hold dynamic ops with constant shape
    # operands: only one with nothing to refine takes the short pipeline.
    if arg_types is not None:
        options = f"{{types={','.join(arg_types)}}}"
    else:
        options = "{static-program=true}" if is_static_stablehlo(module.operation) else ""
    run_pipeline(module, [f"shlo-remove-dynamism{options}"], filename, verify_each)
    inputs, results = function_types(module, "main")
    for type_ in [*inputs, *results]:
        if not isinstance(type_, ir.RankedTensorType) or not type_.has_static_shape:
            raise error_at(
                find_function(module, "main").location,
                f"@{entry} has a dynamic or non-tensor type {type_} after refinement; "
                "expected static tensors",
                filename,
            )
    check_array_sizes(module, max_bytes, filename)
    check_constant_indices(module, filename)
    return module, inputs, results
