"""Run StableHLO's executable conformance tests through a backend (the CPU by default).

Each test function's checks (``check.*`` ops, or ``stablehlo.custom_call
@check.*`` in the JAX-generated testdata) are removed. By default
(``--inputs=arguments``) the test's inputs (the constants ``@inputs()``
returns, or the constants of a hand-written test) become run-time arguments
of the compiled function, so the compiler cannot fold the computation away,
and the expected values (``@expected()`` and the ``*_const`` checks'
literals) are decoded in numpy on the host. ``--inputs=constants`` compiles
the inputs and expected values into the program instead, as the original
files do. What a check compares that is neither becomes an extra result.
The function is compiled by our CPU pipeline, run, and the results are
compared in numpy with upstream's tolerances. Every file runs in a child
process of its own, because some passes abort on input they do not expect.

    python -m shlo.conformance /path/to/conformance/stablehlo [--report DIR]
"""

from __future__ import annotations

import argparse
import faulthandler
import itertools
import json
import multiprocessing
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.runtime import LoadedFunction
from shlo.diagnostics import ShloError
from shlo.dtypes import numpy_dtype
from shlo.io import module_to_bytecode
from shlo.ir_utils import callee_name, defining_op, string_value
from shlo.pass_framework import split_top_level
from shlo.pipeline import run_pipeline

# Upstream's tolerances (stablehlo-translate --interpret).
ALMOST_EQ_TOLERANCE = 1e-3
CHECK_EQ_FLOAT_TOLERANCE = 1e-4
MAX_ULP_DIFFERENCE = 3
FILE_TIMEOUT_S = 300

_CHECK_LINE = re.compile(r"^(\s*)check\.(\w+)\s+(.*?)\s*:\s*([^:]+)$")
_TRAILING_ATTRIBUTES = re.compile(r"\s*\{([^{}]*)\}\s*$")
_EXPECTED_NAMES = itertools.count()
_GENERIC_CHECK = re.compile(r'^(\s*)"check\.(\w+)"\((.*?)\)\s*<?\{(.*)\}>?\s*:\s*(.*)$')


@dataclass
class CaseResult:
    case: str  # "path" or "path#chunk:function"
    status: str  # pass, fail, error, crash, timeout, unsupported
    message: str = ""
    seconds: float = 0.0


# --- turning checks into results ------------------------------------------------------


def _attribute(key: str, value: str) -> str:
    if value.startswith('"') or ":" in value:
        return f"{key} = {value}"
    return f"{key} = {value} : {'f64' if '.' in value or 'e' in value else 'i64'}"


def _as_custom_call(
    indent: str, name: str, operands: list[str], types: list[str], attributes: list[str]
) -> str:
    """One check as custom call text; a ``value`` attribute becomes a constant operand."""
    lines = []
    for attribute in list(attributes):
        key, _, value = attribute.partition("=")
        if key.strip() == "value":
            attributes.remove(attribute)
            literal, _, type_ = value.strip().rpartition(" : ")
            expected = f"%shlo_expected_{next(_EXPECTED_NAMES)}"
            lines.append(f"{indent}{expected} = stablehlo.constant {literal} : {type_}")
            operands, types = [*operands, expected], [*types, type_]
    attrs = ", ".join([*attributes, "has_side_effect = true"])
    lines.append(
        f"{indent}stablehlo.custom_call @check.{name}({', '.join(operands)}) {{{attrs}}} : "
        f"({', '.join(types)}) -> ()"
    )
    return "\n".join(lines)


def _join_check_lines(lines: list[str]) -> Iterator[str]:
    """Lines, with each check op that spans several lines joined into one."""
    pending = ""
    for line in lines:
        if pending or line.lstrip().startswith(("check.", '"check.')):
            pending = f"{pending} {line.strip()}" if pending else line
            opened = sum(pending.count(c) for c in "<([{") - sum(pending.count(c) for c in ">)]}")
            # "->" in a generic op's type is not a closing bracket.
            if opened + pending.count("->") > 0 or pending.rstrip().endswith(","):
                continue
            line, pending = pending, ""
        yield line
    if pending:
        yield pending


def checks_as_custom_calls(text: str) -> str:
    """``check`` dialect ops as ``stablehlo.custom_call @check.*``.

    The wheel lacks the check dialect, and its parser ignores
    ``allow_unregistered_dialect``, so the checks are rewritten as text.
    """
    lines = []
    # A trailing "// comment" after a check (all_reduce.mlir has some) is dropped.
    source = [
        re.sub(r"\s+//.*$", "", line) if line.lstrip().startswith("check.") else line
        for line in text.splitlines()
    ]
    for line in _join_check_lines(source):
        generic = _GENERIC_CHECK.match(line)
        if generic:
            indent, name, operands, attributes, types = generic.groups()
            operand_list = split_top_level(operands)
            type_list = split_top_level(types.split("->")[0].strip()[1:-1])
            lines.append(
                _as_custom_call(indent, name, operand_list, type_list, split_top_level(attributes))
            )
            continue
        # A trailing attribute dictionary: "... : tensor<f64> {tolerance = 0.1 : f64}".
        trailing = _TRAILING_ATTRIBUTES.search(line) if line.lstrip().startswith("check.") else None
        if trailing:
            line = line[: trailing.start()]
        match = _CHECK_LINE.match(line)
        if not match:
            lines.append(line)
            continue
        indent, name, head, types = match.groups()
        operands, attributes = [], [trailing.group(1).strip()] if trailing else []
        for item in split_top_level(head):
            if item.startswith("%"):
                operands.append(item)
            elif "=" in item and not item.startswith("dense"):
                key, value = (part.strip() for part in item.split("=", 1))
                attributes.append(_attribute(key, value))
            else:  # the expected value of a *_const check
                attributes.append(f"value = {item} : {types.strip()}")
        operand_types = split_top_level(types)
        if len(operand_types) < len(operands):
            operand_types = operand_types * len(operands)
        lines.append(
            _as_custom_call(indent, name, operands, operand_types[: len(operands)], attributes)
        )
    return "\n".join(lines)


_RUN_PARALLEL = re.compile(r'"interpreter\.run_parallel"(\([^()]*\)\s*)\{')


def run_parallel_as_custom_calls(text: str) -> str:
    """``interpreter.run_parallel`` as a custom call that shlo-unroll-replicas expands.

    The interpreter dialect is not in the wheel; its ``programs`` and
    ``infeed`` attributes stay as they are.
    """
    return _RUN_PARALLEL.sub(
        r'"stablehlo.custom_call"\1{call_target_name = "interpreter.run_parallel", ', text
    )


@dataclass
class Check:
    kind: str  # expect_eq, expect_almost_eq, expect_close, eq, ...
    # Per operand: the index of the result holding it, or its value decoded on the host.
    operands: list[int | np.ndarray]
    tolerance: float | None
    max_ulp: int


def _check_name(op: ir.Operation) -> str | None:
    if op.name == "stablehlo.custom_call":
        target = string_value(op.attributes["call_target_name"])
        if target.startswith("check."):
            return target[len("check.") :]
    return None


def _float_attr(op: ir.Operation, name: str) -> float | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    try:
        return float(ir.FloatAttr(attr).value)
    except ValueError:
        return float(ir.IntegerAttr(attr).value)


def _create(name: str, result_type: ir.Type, value: ir.Attribute, before: ir.Operation) -> ir.Value:
    op = ir.Operation.create(
        name, results=[result_type], attributes={"value": value}, loc=before.location
    )
    ir.InsertionPoint(before).insert(op)
    return op.result


# --- decoding constants on the host -----------------------------------------------------

_LITERAL_TOKEN = re.compile(r"[\[\]()]|[^\s\[\](),]+")
# Operands that give a result's shape: they must stay constants for the program
# to have static shapes, so they are never made arguments.
_SHAPE_OPERANDS = {
    "stablehlo.dynamic_broadcast_in_dim": {1},
    "stablehlo.dynamic_reshape": {1},
    "stablehlo.dynamic_iota": {0},
    "stablehlo.dynamic_pad": {2, 3, 4},
    "stablehlo.real_dynamic_slice": {1, 2, 3},
    "stablehlo.dynamic_gather": {2},
    "stablehlo.dynamic_conv": {2},
    "stablehlo.rng": {2},
}


def _scalar(token: str, dtype: np.dtype[Any]) -> Any:
    """One literal element: a decimal, true/false, or a float's bits as 0x hex."""
    if dtype.kind == "b":
        if token not in ("true", "false", "0", "1"):
            raise ValueError(f"bad i1 literal {token}")
        return token in ("true", "1")
    if token.startswith(("0x", "0X")) and dtype.kind not in "iu":
        bits = np.array(int(token, 16), dtype=f"u{dtype.itemsize}")
        return bits.view(dtype)[()]
    return int(token) if dtype.kind in "iu" else float(token)


def _decode_hex(data: bytes, dtype: np.dtype[Any]) -> np.ndarray:
    """MLIR's raw hex form: each element's bytes, little-endian; one element is a splat."""
    if dtype.kind == "b":
        return np.frombuffer(data, np.uint8) != 0  # one byte per i1, as MLIR parses it
    if dtype.name in ("int2", "int4", "uint2", "uint4"):
        raise ValueError("sub-byte hex literals are not decoded")
    return np.frombuffer(data, dtype=dtype).copy()


def decode_literal(literal: str, tensor_type: str) -> np.ndarray:
    """The value of ``dense<...>`` of MLIR type ``tensor_type`` as a numpy array.

    Raises ValueError for what numpy cannot hold (quantized or token types,
    sparse or resource literals).
    """
    parsed_type = re.fullmatch(r"tensor<((?:\d+x)*)(.+)>", tensor_type.strip())
    if not parsed_type or not literal.startswith("dense<") or not literal.endswith(">"):
        raise ValueError(f"cannot decode {literal[:40]} : {tensor_type}")
    shape = tuple(int(d) for d in parsed_type.group(1).split("x") if d)
    element = parsed_type.group(2)
    complex_part = re.fullmatch(r"complex<(\w+)>", element)
    dtype = numpy_dtype(element)
    count = int(np.prod(shape))
    body = literal[len("dense<") : -1].strip()
    if body.startswith('"0x'):
        array = _decode_hex(bytes.fromhex(body[3:-1]), dtype)
    else:
        scalar_dtype = numpy_dtype(complex_part.group(1)) if complex_part else dtype
        tokens = [t for t in _LITERAL_TOKEN.findall(body) if t not in "[]"]
        if complex_part:
            # "(re", "im)" pairs: the parentheses are separate tokens.
            numbers = [t for t in tokens if t not in "()"]
            parts = [_scalar(t, scalar_dtype) for t in numbers]
            values = [complex(re_, im) for re_, im in zip(parts[::2], parts[1::2])]
        else:
            values = [_scalar(t, dtype) for t in tokens]
        array = np.empty(len(values), dtype)
        for index, value in enumerate(values):
            array[index] = value
    if array.size == 1 and count != 1:
        return np.broadcast_to(array.reshape(()), shape).copy()
    if array.size != count:
        raise ValueError(f"{array.size} elements in a literal of {tensor_type}")
    return array.reshape(shape)


def _constant_value(op: ir.Operation) -> np.ndarray | None:
    """The value of a ``stablehlo.constant`` as numpy holds it, or None."""
    if op.name != "stablehlo.constant":
        return None
    # str(op), not op.attributes: the bindings cannot wrap complex literals.
    match = re.search(r"stablehlo\.constant (dense<.*>) : (tensor<.*>)$", str(op).strip(), re.S)
    if not match:
        return None
    try:
        return decode_literal(match.group(1), match.group(2))
    except ValueError:
        return None


def _callee(op: ir.Operation) -> ir.Operation | None:
    """The function a ``func.call`` in a module calls."""
    if op.name != "func.call":
        return None
    name = callee_name(op)
    module = op.parent.parent
    for candidate in module.regions[0].blocks[0].operations:
        if (
            candidate.operation.name == "func.func"
            and string_value(candidate.attributes["sym_name"]) == name
        ):
            return candidate.operation
    return None


def host_value(value: ir.Value) -> np.ndarray | None:
    """``value`` decoded on the host: a constant, or what a call returns as a constant."""
    owner = defining_op(value)
    if owner is None:
        return None
    if owner.name == "stablehlo.constant":
        return _constant_value(owner)
    callee = _callee(owner)
    if callee is None or not callee.regions[0].blocks:
        return None
    returned = list(list(callee.regions[0].blocks[0].operations)[-1].operands)
    index = ir.OpResult(value).result_number
    defining = returned[index].owner
    if not isinstance(defining, (ir.Operation, ir.OpView)):
        return None
    return _constant_value(defining.operation)


def _erase_if_unused(op: ir.Operation) -> None:
    if all(not list(result.uses) for result in op.results):
        op.erase()


def extract_checks(function: ir.Operation, on_host: bool = False) -> list[Check]:
    """Turn the checks in ``function`` into extra results; returns what to compare.

    The expected value of a ``*_const`` check is a ``stablehlo.constant``
    operand by now (see ``checks_as_custom_calls``). With ``on_host``, the
    expected operands that are constants (or that a call returns as
    constants, as ``@expected()`` does) are decoded in numpy instead of being
    computed; the actual operand is always computed, so that a check of a
    constant still tests the compiled code.
    """
    block = function.regions[0].blocks[0]
    terminator = list(block.operations)[-1]
    checks: list[Check] = []
    check_operands: list[ir.Value] = []
    with function.context, function.location:
        for op in list(block.operations):
            kind = _check_name(op)
            if kind is None:
                continue
            operands: list[int | np.ndarray] = []
            decoded_owners: list[ir.Operation] = []
            # The quantized testdata's check.eq takes (expected, actual).
            actual = len(op.operands) - 1 if kind == "eq" else 0
            for index, value in enumerate(op.operands):
                decoded = host_value(value) if on_host and index != actual else None
                if decoded is None:
                    operands.append(len(check_operands))
                    check_operands.append(value)
                else:
                    operands.append(decoded)
                    owner = value.owner.operation
                    if not any(owner == seen for seen in decoded_owners):
                        decoded_owners.append(owner)
            checks.append(
                Check(
                    kind=kind.removesuffix("_const"),
                    operands=operands,
                    tolerance=_float_attr(op, "tolerance"),
                    max_ulp=int(_float_attr(op, "max_ulp_difference") or MAX_ULP_DIFFERENCE),
                )
            )
            for result in op.results:
                # check.eq yields its verdict; nothing downstream may depend on it.
                true = ir.DenseElementsAttr.get_splat(result.type, ir.BoolAttr.get(True))
                result.replace_all_uses_with(_create("stablehlo.constant", result.type, true, op))
            op.erase()
            # The expected values' constants and calls, now that nothing reads them.
            for owner in decoded_owners:
                _erase_if_unused(owner)
        # Read the returned values only now: a function may return a check's
        # verdict, which was just replaced by a constant (the old value is gone).
        returned = list(terminator.operands)
        for check in checks:
            check.operands = [
                o + len(returned) if isinstance(o, int) else o for o in check.operands
            ]
        returned += check_operands
        ir.InsertionPoint(terminator).insert(
            ir.Operation.create(terminator.name, operands=returned, loc=terminator.location)
        )
        terminator.erase()
        _set_function_type(function, None, [v.type for v in returned])
        if "res_attrs" in function.attributes:
            del function.attributes["res_attrs"]
    return checks


def _set_function_type(
    function: ir.Operation, inputs: list[ir.Type] | None, results: list[ir.Type] | None
) -> None:
    old_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(
            list(old_type.inputs) if inputs is None else inputs,
            list(old_type.results) if results is None else results,
        )
    )


def _liftable(value: ir.Value) -> bool:
    """Whether ``value`` may become an argument.

    Not when a use needs it constant for its shape, nor when a check reads it
    directly (it is returned by now): that check tests the constant itself.
    """
    for use in value.uses:
        if use.owner.name == "func.return":
            return False
        if use.operand_number in _SHAPE_OPERANDS.get(use.owner.name, ()):
            return False
    return True


def inputs_as_arguments(function: ir.Operation) -> list[np.ndarray]:
    """Make ``function``'s inputs run-time arguments; returns their values.

    The inputs are the results of ``call @inputs()`` (the JAX testdata), or
    else the function's own top-level constants (the hand-written tests).
    What numpy cannot hold (quantized types) and shape operands stay constants.
    """
    block = function.regions[0].blocks[0]
    if len(block.arguments):
        return []
    sources: list[tuple[ir.Value, np.ndarray]] = []
    calls = [op for op in block.operations if op.name == "func.call"]
    input_calls = [op for op in calls if callee_name(op) == "inputs"]
    candidates = (
        [result for op in input_calls for result in op.results]
        if input_calls
        else [op.result for op in block.operations if op.name == "stablehlo.constant"]
    )
    for value in candidates:
        if not list(value.uses) or not _liftable(value):
            continue
        decoded = host_value(value)
        if decoded is not None:
            sources.append((value, decoded))
    with function.context, function.location:
        lifted: list[ir.Operation] = []
        for value, _ in sources:
            value.replace_all_uses_with(block.add_argument(value.type, function.location))
            owner = value.owner.operation
            if not any(owner == seen for seen in lifted):
                lifted.append(owner)
        for op in lifted:
            _erase_if_unused(op)
        _set_function_type(function, [a.type for a in block.arguments], None)
    return [array for _, array in sources]


# --- comparing ----------------------------------------------------------------------


def _ordered_bits(array: np.ndarray) -> np.ndarray:
    """Integers whose differences count ULPs between floats of the same type."""
    bits = array.view(f"u{array.dtype.itemsize}").astype(np.int64)
    sign = np.int64(1) << (8 * array.dtype.itemsize - 1)
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def _float_parts(array: np.ndarray) -> list[np.ndarray]:
    if np.iscomplexobj(array):
        return [np.ascontiguousarray(array.real), np.ascontiguousarray(array.imag)]
    return [array]


def _is_float(array: np.ndarray) -> bool:
    return np.iscomplexobj(array) or array.dtype.kind == "f" or "float" in array.dtype.name


def _describe_differences(
    wrong: np.ndarray, got: np.ndarray, want: np.ndarray, prefix: str, show: Callable[[Any], str]
) -> str:
    """Empty when nothing is ``wrong``, else how many elements differ and the first one."""
    if not np.any(wrong):
        return ""
    index = tuple(int(i) for i in np.argwhere(wrong)[0])
    return (
        f"{prefix}{int(np.sum(wrong))} of {wrong.size} elements differ; "
        f"at {index}: {show(got[index])} != {show(want[index])}"
    )


def compare(
    kind: str, actual: np.ndarray, expected: np.ndarray, tolerance: float | None, max_ulp: int
) -> str:
    """Empty when ``actual`` passes the check, else what went wrong."""
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != expected {expected.shape}"
    if not _is_float(actual):
        wrong = (
            actual.astype(np.int64) != expected.astype(np.int64)
            if actual.dtype.kind != "b"
            else actual != expected.astype(bool)
        )
        return _describe_differences(wrong, actual, expected, "", str)
    for got, want in zip(_float_parts(actual), _float_parts(expected.astype(actual.dtype))):
        got64, want64 = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(got64) & np.isnan(want64)
        if kind == "expect_close":
            ulps = np.abs(_ordered_bits(got) - _ordered_bits(want))
            wrong = ~both_nan & (ulps > max_ulp)
        elif kind == "expect_eq":
            wrong = ~both_nan & (got64 != want64)
        else:
            limit = (
                tolerance
                if tolerance is not None
                else (CHECK_EQ_FLOAT_TOLERANCE if kind == "eq" else ALMOST_EQ_TOLERANCE)
            )
            with np.errstate(invalid="ignore"):
                wrong = ~both_nan & ~(np.abs(got64 - want64) <= limit) & ~(got64 == want64)
        problem = _describe_differences(wrong, got, want, f"{kind}: ", repr)
        if problem:
            return problem
    return ""


# --- running one file ------------------------------------------------------------------


def _chunks(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each ``// -----`` chunk."""
    chunks, line = [], 1
    for chunk in re.split(r"^// -----\s*$", text, flags=re.MULTILINE):
        chunks.append((line, chunk))
        line += chunk.count("\n")
    return chunks


def _is_executable(text: str) -> bool:
    return any("--interpret" in line for line in text.splitlines() if line.startswith("// RUN"))


def _test_functions(module: ir.Module) -> list[str]:
    names = []
    for op in module.body.operations:
        if op.operation.name != "func.func" or not op.regions[0].blocks:
            continue
        block = op.regions[0].blocks[0]
        if any(_check_name(inner) is not None for inner in block.operations):
            names.append(string_value(op.attributes["sym_name"]))
    return names


def _function(module: ir.Module, name: str) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func" and string_value(op.attributes["sym_name"]) == name:
            return op.operation
    raise KeyError(name)


def run_function(
    text: str, name: str, filename: str, inputs: str = "arguments", target: str = "cpu"
) -> tuple[str, str]:
    """(status, message) of one test function of one chunk.

    ``inputs`` is "arguments" (inputs passed at run time, expected values
    decoded on the host) or "constants" (both compiled into the program).
    ``target`` is one of ``TARGETS``.
    """
    context = new_context()
    module = ir.Module.parse(text, context)
    function = _function(module, name)
    as_arguments = inputs == "arguments" and "interpreter.run_parallel" not in text
    checks = extract_checks(function, on_host=as_arguments)
    if any(c.kind.startswith("expect_serialized") for c in checks):
        return "unsupported", "check.expect_serialized_eq compares interpreter probe files"
    arguments = inputs_as_arguments(function) if as_arguments else []
    try:
        if "interpreter.run_parallel" in text:
            run_pipeline(module, ["inline", "shlo-unroll-replicas"], filename)
        if target == "cuda-ptx":
            return compile_for_cuda(module, name, filename)
        if target == "cuda":
            loaded = _load_for_cuda(module, name, filename)
        elif target == "cuda-emulated":
            from shlo.backends.cuda.emulator import emulate

            emulated = emulate(module_to_bytecode(module), name, check_bounds=True)
            loaded = lambda arrays: emulated(*arrays)  # noqa: E731
        else:
            lowered = lower_to_llvm(module, name, None, filename=filename)
            loaded = LoadedFunction(
                lowered.llvm_bytecode, lowered.input_types, lowered.result_types
            )
    except ShloError as error:
        return "error", str(error).splitlines()[0] if str(error) else error.summary
    outputs = loaded([np.ascontiguousarray(a) for a in arguments])
    problems = []
    for check in checks:
        values = [outputs[o] if isinstance(o, int) else o for o in check.operands]
        # The quantized testdata's check.eq takes (expected, actual).
        actual, expected = reversed(values) if check.kind == "eq" else values
        problem = compare(check.kind, actual, expected, check.tolerance, check.max_ulp)
        if problem:
            problems.append(problem)
    if problems:
        return "fail", "; ".join(problems)
    return "pass", ""


# cpu: compile and run on the CPU; cuda-ptx: compile to PTX and have ptxas
# accept it for every architecture of CUDA_PTX_ARCHS (no GPU needed); cuda:
# compile and run on the GPU; cuda-emulated: the CUDA backend's kernels run
# on the CPU with every access bounds-checked (shlo.backends.cuda.emulator).
TARGETS = ("cpu", "cuda-ptx", "cuda", "cuda-emulated")
CUDA_PTX_ARCHS = ("sm_80", "sm_90")


def _lower_for_cuda(source: bytes, name: str, filename: str, arch: str) -> Any:
    """The CUDA backend's lowering of ``name`` for ``arch``, with a 16 GiB array limit."""
    from shlo.backends.cuda import CudaBackend, CudaOptions

    return CudaBackend().lower(source, name, None, CudaOptions(arch), filename, 16 << 30)


def compile_for_cuda(module: ir.Module, name: str, filename: str) -> tuple[str, str]:
    """("pass", "") when ``name`` compiles to PTX that ptxas accepts for every CUDA_PTX_ARCHS."""
    source = module_to_bytecode(module)
    for arch in CUDA_PTX_ARCHS:
        lowered = _lower_for_cuda(source, name, filename, arch)
        if lowered.kernels and lowered.cubin is None:
            return "error", "ptxas is missing (install the cuda extra)"
    return "pass", ""


def _device_arch() -> str:
    """This machine's GPU architecture where the backend supports it, else the oldest (its PTX
    is JIT-compiled for newer GPUs)."""
    from shlo.backends.cuda.driver import available_driver
    from shlo.backends.cuda.ptx import SUPPORTED_ARCHS

    arch = available_driver().architecture()
    return arch if arch in SUPPORTED_ARCHS else CUDA_PTX_ARCHS[0]


def _load_for_cuda(module: ir.Module, name: str, filename: str) -> Any:
    """A function running ``name`` on the GPU; it takes the arguments the CPU's does (a 0-d
    input as one element, unsigned integers as their signless storage)."""
    from shlo.backends.cpu.runtime import ArrayType
    from shlo.backends.cuda import CudaBackend

    lowered = _lower_for_cuda(module_to_bytecode(module), name, filename, _device_arch())
    function = CudaBackend().load(lowered)
    types = [ArrayType.parse(t, module.context) for t in lowered.input_types]

    def call(arrays: list[np.ndarray]) -> list[np.ndarray]:
        return function([a.reshape(t.shape).view(t.dtype) for a, t in zip(arrays, types)])

    return call


def _relative_name(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def run_file(
    path: Path, root: Path, inputs: str = "arguments", target: str = "cpu"
) -> list[CaseResult]:
    """Every test case of one file, run in this process."""
    relative = _relative_name(path, root)
    text = path.read_text()
    if "testdata" in path.parts and "quantized" not in path.parts and not _is_executable(text):
        return []
    text = run_parallel_as_custom_calls(checks_as_custom_calls(text))
    chunks = _chunks(text)
    results = []
    for index, (first_line, chunk) in enumerate(chunks):
        context = new_context()
        # Keep line numbers of the original file in diagnostics.
        padded = "\n" * (first_line - 1) + chunk
        try:
            names = _test_functions(ir.Module.parse(padded, context))
        except ir.MLIRError as error:
            why = "; ".join(str(d) for d in error.error_diagnostics) or str(error)
            results.append(CaseResult(f"{relative}#{index}", "error", f"parse: {why}"))
            continue
        for name in names:
            case = (
                relative if len(chunks) == 1 and len(names) == 1 else f"{relative}#{index}:{name}"
            )
            start = time.perf_counter()
            try:
                status, message = run_function(padded, name, str(path), inputs, target)
            except Exception as error:
                status, message = "error", f"{type(error).__name__}: {error}".splitlines()[0]
            results.append(CaseResult(case, status, message, time.perf_counter() - start))
    return results


def _worker(root: Path, inputs: str, target: str, connection: Connection, stderr_path: str):
    """Run the files the parent sends, one at a time, until it sends None."""
    # C++ errors and aborts print to fd 2; keep them for the crash report.
    stderr = os.open(stderr_path, os.O_WRONLY)
    os.dup2(stderr, 2)
    # Generated code's own messages (a failed bounds check) go to stdout.
    os.dup2(stderr, 1)
    # A crash prints the Python stack it happened in.
    faulthandler.enable()
    while (path := connection.recv()) is not None:
        # What a crash printed is what follows the last marker.
        os.write(2, f"{_FILE_MARKER}{path}\n".encode())
        try:
            results = run_file(path, root, inputs, target)
        except BaseException:
            traceback.print_exc()
            raise
        connection.send([asdict(r) for r in results])
    connection.close()


_FILE_MARKER = "=== shlo.conformance file: "


def _output_of_last_file(path: str, count: int = 6) -> str:
    """The first lines a child printed for the file it ran last: an error's message, then
    (faulthandler) the innermost frames of a crash."""
    text = Path(path).read_text(errors="replace").rsplit(_FILE_MARKER, 1)[-1]
    lines = [line.strip() for line in text.strip().splitlines()[1:] if line.strip()]
    return " | ".join(lines[:count])


# Files a child process runs before a fresh one takes over. One on the CPU, so a
# crash costs one file; more for the GPU, where each process first spends
# seconds creating its CUDA context.
FILES_PER_PROCESS = {"cpu": 1, "cuda-ptx": 1, "cuda": 32, "cuda-emulated": 32}


@dataclass
class _Child:
    process: Any
    connection: Connection
    stderr_path: str
    path: Path | None = None  # the file it runs now
    started: float = 0.0
    files: int = 0


def run_isolated(
    paths: Sequence[Path],
    root: Path,
    jobs: int,
    timeout: float,
    inputs: str = "arguments",
    target: str = "cpu",
    files_per_process: int | None = None,
) -> Iterator[list[CaseResult]]:
    """Run the files in forked children, ``jobs`` at a time; yields each file's results.

    A child runs up to ``files_per_process`` files (default: FILES_PER_PROCESS
    of the target); one that crashes or passes ``timeout`` seconds on a file
    is replaced, and that file reported as a crash or a timeout.
    """
    context = multiprocessing.get_context("fork")
    limit = files_per_process or FILES_PER_PROCESS.get(target, 1)
    pending = list(reversed(paths))
    children: list[_Child] = []

    def start_child() -> _Child:
        parent_end, child_end = context.Pipe(duplex=True)
        handle, stderr_path = tempfile.mkstemp(prefix="shlo-conformance-")
        os.close(handle)
        process = context.Process(
            target=_worker, args=(root, inputs, target, child_end, stderr_path)
        )
        process.start()
        child_end.close()
        return _Child(process, parent_end, stderr_path)

    def retire(child: _Child, kill: bool = False) -> None:
        if kill:
            child.process.kill()
        else:
            try:
                child.connection.send(None)
            except (BrokenPipeError, OSError):
                pass
        child.process.join()
        child.connection.close()
        os.unlink(child.stderr_path)
        children.remove(child)

    while pending or any(c.path is not None for c in children):
        idle = [c for c in children if c.path is None]
        while pending and (idle or len(children) < jobs):
            child = idle.pop() if idle else start_child()
            if child not in children:
                children.append(child)
            child.path, child.started = pending.pop(), time.monotonic()
            child.connection.send(child.path)
        busy = [c for c in children if c.path is not None]
        ready = multiprocessing.connection.wait([c.connection for c in busy], timeout=1.0)
        now = time.monotonic()
        for child in busy:
            relative = _relative_name(child.path, root)
            results: list[CaseResult] | None = None
            if child.connection in ready:
                try:
                    results = [CaseResult(**r) for r in child.connection.recv()]
                except EOFError:
                    child.process.join()
                    code = child.process.exitcode
                    why = (
                        signal.Signals(-code).name
                        if code is not None and code < 0
                        else f"exit {code}"
                    )
                    last = _output_of_last_file(child.stderr_path)
                    results = [CaseResult(relative, "crash", f"{why}: {last}")]
                    retire(child, kill=True)
            elif now - child.started > timeout:
                results = [CaseResult(relative, "timeout", f"no result after {timeout:.0f} s")]
                retire(child, kill=True)
            if results is None:
                continue
            child.path, child.files = None, child.files + 1
            if child in children and (child.files >= limit or not pending):
                retire(child)
            yield results
    for child in list(children):
        retire(child)


# --- collecting files and reporting ------------------------------------------------------


def collect(paths: Sequence[Path]) -> list[Path]:
    """The .mlir files under ``paths``; the dynamic/ testdata has nothing to execute."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += [p for p in sorted(path.rglob("*.mlir")) if "dynamic" not in p.parts]
        else:
            files.append(path)
    return files


def sample(files: list[Path], count: int) -> list[Path]:
    """A fixed, evenly spread sample of at least ``count`` files."""
    if count >= len(files):
        return files
    step = len(files) / count
    return [files[int(i * step)] for i in range(count)]


def load_expected_failures(path: Path | None) -> dict[str, str]:
    if path is None or not path.exists():
        return {}
    expected = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            case, _, reason = line.partition(" ")
            expected[case] = reason.strip()
    return expected


def op_name(case: str) -> str:
    """The op a case tests: the file name up to its first shape or dtype part."""
    stem = Path(case.split("#")[0]).stem
    match = re.match(
        r"(.+?)_(?:shape_|dtypes_)?(?:u?int|float|bfloat|bool|complex|\d|qi8|qui8)", stem
    )
    return match.group(1) if match else stem


def summary_table(results: list[CaseResult]) -> str:
    by_op: dict[str, Counter[str]] = defaultdict(Counter)
    for result in results:
        by_op[op_name(result.case)][result.status] += 1
    statuses = ["pass", "fail", "error", "crash", "timeout", "unsupported", "xfail"]
    lines = ["| op | " + " | ".join(statuses) + " |", "|---" * (len(statuses) + 1) + "|"]
    for op in sorted(by_op):
        counts = by_op[op]
        if set(counts) == {"pass"}:
            continue
        lines.append(
            f"| {op} | " + " | ".join(str(counts.get(s, 0) or "") for s in statuses) + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m shlo.conformance", description=__doc__.splitlines()[0]
    )
    parser.add_argument("paths", nargs="+", type=Path, help="conformance files or directories")
    parser.add_argument(
        "--root", type=Path, help="case names are relative to this (default: common parent)"
    )
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--sample", type=int, help="run a fixed sample of this many files")
    parser.add_argument("--timeout", type=float, default=FILE_TIMEOUT_S, help="seconds per file")
    parser.add_argument(
        "--files-per-process",
        type=int,
        help="files a child process runs before a fresh one takes over "
        f"(default: {', '.join(f'{k} {v}' for k, v in FILES_PER_PROCESS.items())})",
    )
    parser.add_argument(
        "--expected-failures", type=Path, help="cases allowed to fail, with reasons"
    )
    parser.add_argument(
        "--inputs",
        choices=["arguments", "constants"],
        default="arguments",
        help="pass the test inputs as run-time arguments and decode the expected values "
        "on the host (default), or compile both into the program as the files do",
    )
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="cpu",
        help="cpu: compile and run (default); cuda-ptx: compile to PTX and cubins for "
        f"{', '.join(CUDA_PTX_ARCHS)}, no GPU needed; cuda: compile and run on the GPU; "
        "cuda-emulated: the CUDA kernels run on the CPU, every access bounds-checked",
    )
    parser.add_argument(
        "--report", type=Path, help="write summary.md, failures.jsonl and results.json here"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args(argv)

    files = collect(args.paths)
    if args.sample:
        files = sample(files, args.sample)
    root = (args.root or Path(os.path.commonpath([p.resolve() for p in args.paths]))).resolve()
    if root.is_file():
        root = root.parent
    files = [p.resolve() for p in files]
    expected = load_expected_failures(args.expected_failures)
    results: list[CaseResult] = []
    started = time.monotonic()
    tty = sys.stderr.isatty()
    for done, file_results in enumerate(
        run_isolated(
            files,
            root,
            args.jobs,
            args.timeout,
            args.inputs,
            args.target,
            args.files_per_process,
        ),
        1,
    ):
        for result in file_results:
            if result.status not in ("pass", "unsupported") and result.case in expected:
                result.status = "xfail"
            results.append(result)
            if args.verbose or result.status not in ("pass", "xfail", "unsupported"):
                print(f"{result.status.upper()}: {result.case} {result.message}"[:400], flush=True)
        counts = Counter(r.status for r in results)
        progress = f"[{done}/{len(files)}] " + " ".join(
            f"{k} {v}" for k, v in sorted(counts.items())
        )
        if tty:
            print("\r" + progress, end="", file=sys.stderr, flush=True)
        elif done % 100 == 0 or done == len(files):
            print(progress, file=sys.stderr, flush=True)
    if tty:
        print(file=sys.stderr)

    counts = Counter(r.status for r in results)
    executed = [r for r in results if r.status != "unsupported"]
    passed = counts["pass"]
    unexpected_passes = sorted(r.case for r in results if r.status == "pass" and r.case in expected)
    failures = [r for r in results if r.status not in ("pass", "xfail", "unsupported")]
    rate = 100.0 * passed / max(len(executed), 1)
    summary = [
        f"files: {len(files)}, cases: {len(results)}, inputs: {args.inputs}, "
        f"target: {args.target}, "
        f"time: {time.monotonic() - started:.0f} s",
        f"passed: {passed} of {len(executed)} executable cases ({rate:.2f}%); "
        + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()) if k != "pass"),
    ]
    table = summary_table(results)
    print("\n".join(summary))
    if table.count("\n") > 1:
        print(table)
    for case in unexpected_passes:
        print(f"UNEXPECTED PASS (remove it from the expected failures): {case}")
    if args.report:
        args.report.mkdir(parents=True, exist_ok=True)
        (args.report / "summary.md").write_text("\n\n".join(["\n".join(summary), table]) + "\n")
        with open(args.report / "failures.jsonl", "w") as out:
            for result in results:
                if result.status not in ("pass",):
                    out.write(json.dumps(asdict(result)) + "\n")
        # Every case's status, for docs/coverage.md (tools/gen_coverage.py).
        statuses = {r.case: r.status for r in sorted(results, key=lambda r: r.case)}
        (args.report / "results.json").write_text(json.dumps(statuses, indent=0) + "\n")
    return 1 if failures or unexpected_passes else 0


if __name__ == "__main__":
    sys.exit(main())
