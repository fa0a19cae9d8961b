"""StableHLO's reference interpreter, as a test oracle and for ``shlo-run --target interpreter``.

It is never a fallback for compiled execution. It may abort the process on
bad input, so callers outside tests run it through ``shlo.isolation``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shlo._mlir_compat import eval_module, ir
from shlo.collectives import COLLECTIVES
from shlo.dtypes import mlir_element_type, numpy_dtype
from shlo.frontend import (
    check_array_sizes,
    default_max_bytes,
    element_bytes,
    error_at,
    find_function,
    function_types,
    keep_only_entry_public,
)
from shlo.io import load_module
from shlo.ir_utils import ops_named, tensor_type_text
from shlo.pipeline import run_pipeline

# The interpreter runs StableHLO, quantized ops included, but not CHLO or calls.
_FRONTEND = [
    # It aborts on deprecated ops (stablehlo.dot) instead of reporting them.
    "func.func(stablehlo-legalize-deprecated-ops{fail-on-unused=false})",
    "func.func(stablehlo-legalize-composite-to-call)",
    "inline",
    "symbol-dce",
    # As the compiler: checks broadcast_dimensions, which upstream trusts.
    "shlo-legalize-broadcasts",
    "func.func(chlo-legalize-to-stablehlo)",
]


# Ops the interpreter runs only under interpreter.run_parallel, which
# shlo-run does not use; outside it they abort or crash the process.
_NEEDS_REPLICAS = (*COLLECTIVES, "stablehlo.partition_id", "stablehlo.replica_id")
_NEEDS_CHANNELS = ("stablehlo.infeed", "stablehlo.outfeed", "stablehlo.recv", "stablehlo.send")
# Element types numpy reads from and writes to a DenseElementsAttr directly;
# the others (bf16, the fp8 family, sub-byte types) go through their bits.
_BUFFER_TYPES = frozenset(
    ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "f32", "f64"]
)


def _to_attribute(array: np.ndarray, context: ir.Context) -> ir.Attribute:
    name = mlir_element_type(array.dtype)
    data = np.ascontiguousarray(array)
    if name not in _BUFFER_TYPES:
        # The bindings cannot read ml_dtypes buffers; the raw bits with an
        # explicit element type build the same attribute.
        data = data.view(np.dtype(f"u{data.dtype.itemsize}"))
    with context:
        element = ir.Type.parse(name)
        return ir.DenseElementsAttr.get(data, type=element, shape=list(array.shape))


def _to_array(attribute: ir.Attribute, dtype: np.dtype) -> np.ndarray:
    tensor_type = ir.RankedTensorType(ir.DenseElementsAttr(attribute).type)
    # Splats come back as one element.
    return np.broadcast_to(np.array(attribute), tensor_type.shape).astype(dtype)


def _fft_error(op: ir.Operation) -> str | None:
    """Why the interpreter cannot run this stablehlo.fft, or None when it can.

    The verifier does not tie fft_length to the operand shape for FFT and
    IFFT, and the interpreter trusts it: a wrong length aborts or reads
    out of bounds.
    """
    attribute = op.attributes["fft_length"]
    lengths = [
        int(n)
        for n in (
            ir.DenseI64ArrayAttr(attribute)
            if isinstance(attribute, ir.DenseI64ArrayAttr)
            else ir.DenseIntElementsAttr(attribute)
        )
    ]
    operand = ir.RankedTensorType(op.operands[0].type)
    if not 1 <= len(lengths) <= min(3, operand.rank):
        return f"expected 1 to 3 fft_length values, at most the operand rank {operand.rank}"
    trailing = list(operand.shape[-len(lengths) :])
    expected = list(lengths)
    if "IRFFT" in str(op.attributes["fft_type"]):
        # IRFFT reads the half spectrum: n // 2 + 1 values along the last axis.
        expected[-1] = lengths[-1] // 2 + 1
    if trailing != expected:
        return (
            f"expected the operand's trailing dimensions {trailing} to be {expected} "
            f"for fft_length {lengths}"
        )
    return None


def _reduce_window_error(op: ir.Operation) -> str | None:
    """Why the interpreter cannot run this reduce_window, or None when it can.

    The verifier accepts negative padding that trims more than the whole
    input; the interpreter then aborts building the padded operand. It also
    aborts when that operand, dilated and padded, is too large to allocate
    (base dilations of 2^31 on a 5-element input: 34 GB).
    """
    operand = ir.RankedTensorType(op.operands[0].type)
    pads = [[0, 0]] * operand.rank
    if "padding" in op.attributes:
        attribute = ir.DenseIntElementsAttr(op.attributes["padding"])
        # Splats come back as one element.
        pads = np.broadcast_to(np.array(attribute), (operand.rank, 2)).tolist()
    bases = (
        list(ir.DenseI64ArrayAttr(op.attributes["base_dilations"]))
        if "base_dilations" in op.attributes
        else [1] * operand.rank
    )
    padded_shape = []
    for dim, (size, base, (low, high)) in enumerate(zip(operand.shape, bases, pads)):
        padded = (size - 1) * base + 1 + low + high if size else low + high
        if padded < 0:
            return (
                f"expected padding that leaves a non-negative padded size, got {padded} "
                f"in dimension {dim}"
            )
        padded_shape.append(padded)
    padded_bytes = math.prod(padded_shape) * element_bytes(operand.element_type)
    max_bytes = default_max_bytes()
    if padded_bytes > max_bytes:
        return (
            f"the interpreter builds the dilated and padded operand, of shape {padded_shape} "
            f"({padded_bytes} bytes), more than the limit of {max_bytes} bytes (raise it with "
            "SHLO_MAX_BYTES)"
        )
    return None


# The interpreter runs StableHLO and func ops only; anything else (an rng,
# which it asks to decompose, or another dialect's op) aborts it.
_INTERPRETED_DIALECTS = ("stablehlo.", "func.", "builtin.")
_NOT_INTERPRETED = ("stablehlo.rng",)


def _check_interpretable(module: ir.Module, filename: str) -> None:
    """A located ShloError for the ops that would abort the interpreter."""
    for op in ops_named(module.operation):
        if op.name in _NEEDS_REPLICAS:
            message = (
                f"'{op.name}' needs several replicas: the interpreter runs it only inside "
                "interpreter.run_parallel (compile it for the CPU instead)"
            )
        elif op.name in _NEEDS_CHANNELS:
            message = (
                f"'{op.name}' needs a host or another process to talk to: the interpreter "
                "runs it only inside interpreter.run_parallel"
            )
        elif op.name in _NOT_INTERPRETED or not op.name.startswith(_INTERPRETED_DIALECTS):
            message = f"the reference interpreter cannot run '{op.name}'"
        elif op.name == "stablehlo.custom_call":
            target = op.attributes["call_target_name"]
            message = f"the reference interpreter cannot run custom calls (this one calls {target})"
        elif op.name == "stablehlo.fft":
            message = _fft_error(op)
        elif op.name == "stablehlo.reduce_window":
            message = _reduce_window_error(op)
        else:
            continue
        if message is not None:
            raise error_at(op.location, message, filename)


def _widen_unreadable_results(main: ir.Operation) -> None:
    """Convert results whose type numpy cannot read from an attribute to one it can.

    bf16, the fp8 family and the sub-byte floats widen to f32 exactly (every
    value of theirs is an f32), sub-byte integers to i32 or ui32; the caller
    narrows them back.
    """
    function_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    results = list(function_type.results)
    for index, type_ in enumerate(results):
        element = ir.RankedTensorType(type_).element_type
        if str(element) in _BUFFER_TYPES:
            continue
        if isinstance(element, ir.IntegerType):
            wide: ir.Type = (
                ir.IntegerType.get_unsigned(32)
                if element.is_unsigned
                else ir.IntegerType.get_signless(32)
            )
        else:
            wide = ir.F32Type.get()
        results[index] = ir.RankedTensorType.get(ir.RankedTensorType(type_).shape, wide)
        for ret in ops_named(main, "func.return"):
            converted = ir.Operation.create(
                "stablehlo.convert",
                results=[results[index]],
                operands=[ret.operands[index]],
                loc=ret.location,
                ip=ir.InsertionPoint(ret),
            )
            ret.operands[index] = converted.results[0]
    main.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(function_type.inputs), results)
    )


def interpret(
    source: bytes | str | ir.Module,
    entry: str,
    args: Sequence[np.ndarray],
    filename: str = "<module>",
) -> list[np.ndarray]:
    """Results of ``entry`` on ``args``, computed by the reference interpreter."""
    module = load_module(source, filename=filename)
    context = module.context
    keep_only_entry_public(module, entry, filename)
    run_pipeline(module, _FRONTEND, filename)
    types = ",".join(tensor_type_text(a.shape, mlir_element_type(a.dtype)) for a in args)
    run_pipeline(module, [f"shlo-remove-dynamism{{types={types}}}"], filename)
    # Once static: the interpreter's own integer division raises SIGFPE.
    run_pipeline(module, ["shlo-guard-integer-division"], filename)
    _, results = function_types(module, "main", filename)
    main = find_function(module, "main", filename)
    dtypes = []
    for index, type_ in enumerate(results):
        element = type_.element_type if isinstance(type_, ir.RankedTensorType) else None
        if isinstance(element, ir.ComplexType):
            # The bindings abort the process converting a complex result.
            reason = "cannot return complex values (compile it for the CPU instead)"
        else:
            try:
                dtypes.append(numpy_dtype(str(element)))
                continue
            except ValueError:
                reason = "returns only tensors of integers, floats and booleans"
        raise error_at(
            main.location,
            f"result {index} of @{entry} has type {type_}; the reference interpreter {reason}",
            filename,
        )
    _check_interpretable(module, filename)
    # The interpreter's own allocation failure aborts it.
    check_array_sizes(module, default_max_bytes(), filename)
    with context, main.location:
        _widen_unreadable_results(main)
    try:
        values = eval_module(module, [_to_attribute(np.asarray(a), context) for a in args])
    except (RuntimeError, ValueError) as error:
        # It says no more than "interpreter failed": name the function at least.
        raise error_at(
            main.location, f"the interpreter failed on @{entry}: {error}", filename
        ) from None
    return [_to_array(value, dtype) for value, dtype in zip(values, dtypes)]
