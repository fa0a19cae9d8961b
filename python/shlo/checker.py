"""``shlo.check``: run shlo, the reference interpreter and XLA side by side.

When shlo's results diverge from the reference (the interpreter; XLA when
the interpreter cannot run the program), the checker bisects ``@main``: it
compiles truncated copies that return the values live across a cut and
compares them with the reference, until it finds the first op whose addition
makes a value diverge. It then writes a minimal reproducer: the op's backward
slice as a standalone module, shrunk while it still diverges, with its inputs.

jax is imported only here, and only when XLA runs: ``import shlo`` never
imports it.
"""

from __future__ import annotations

import functools
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from shlo._mlir_compat import current_version, ir, new_context
from shlo.compiler import compile as compile_program
from shlo.diagnostics import ShloError
from shlo.frontend import find_function, inspect_entry, keep_only_entry_public
from shlo.io import existing_path, module_to_bytecode, module_to_portable_artifact, names_a_file
from shlo.isolation import shared_worker

# (rtol, atol) for float results, by element type, unless the caller gives them:
# loose enough for summation order and math approximations over a program,
# far below the errors of a wrong lowering.
FLOAT_TOLERANCES = {
    "float64": (1e-9, 1e-9),
    "complex128": (1e-9, 1e-9),
    "float32": (1e-4, 1e-4),
    "complex64": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
}

REFERENCES = ("interpreter", "xla")

# Where the op's Python source line is in a location: jax records it as the
# innermost "file":line:col of a callsite, which prints first.
_FILE_LINE_COL = re.compile(r'"([^"]*)":(\d+):(\d+)')
# A name location, loc("name"(...)), not a file one, loc("file":1:2).
_NAME = re.compile(r'^loc\("([^"]*)"(?!:)')


def default_tolerances(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for results of ``dtype``: zero for integers and booleans."""
    if dtype.name in FLOAT_TOLERANCES:
        return FLOAT_TOLERANCES[dtype.name]
    if not _is_float(dtype):
        return 0.0, 0.0
    # bf16 and the 8-bit and smaller floats: two units in the last place.
    eps = float(ml_dtypes.finfo(dtype).eps)
    return 2 * eps, 2 * eps


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or "float" in dtype.name


@dataclass(frozen=True)
class Difference:
    """How one array differs from the reference one."""

    ok: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    detail: str = ""  # empty, or what differs: a shape, a dtype, the first wrong element

    def __str__(self) -> str:
        if self.detail and not self.ok and math.isnan(self.max_abs):
            return self.detail
        text = f"{_number(self.max_abs)} (rel {_number(self.max_rel)})" if self.max_abs else "0"
        return text if self.ok else f"{text} x"


def _number(value: float) -> str:
    return f"{value:.3g}"


def compare(
    got: np.ndarray, want: np.ndarray, rtol: float | None = None, atol: float | None = None
) -> Difference:
    """``got`` against the reference ``want``: integers exactly, floats to rtol and atol.

    NaNs match NaNs and infinities match infinities of the same sign. The
    tolerances default to ``default_tolerances(want.dtype)``.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return Difference(False, math.nan, math.nan, f"shape {got.shape} != {want.shape}")
    if got.dtype != want.dtype:
        return Difference(False, math.nan, math.nan, f"dtype {got.dtype} != {want.dtype}")
    default_rtol, default_atol = default_tolerances(want.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if got.size == 0:
        return Difference(True)
    if not _is_float(want.dtype):
        b = want.astype(np.float64)
        wrong = got != want
        error = np.abs(got.astype(np.float64) - b)
    else:
        complex_ = want.dtype.kind == "c"
        a = got.astype(np.complex128 if complex_ else np.float64)
        b = want.astype(np.complex128 if complex_ else np.float64)
        both_special = (np.isnan(a) & np.isnan(b)) | (a == b)
        with np.errstate(invalid="ignore", over="ignore"):
            error = np.where(both_special, 0.0, np.abs(a - b))
            # An infinity matches only itself: its error is inf (or nan), never in tolerance.
            wrong = ~both_special & ~(np.isfinite(error) & (error <= atol + rtol * np.abs(b)))
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.where(error == 0, 0.0, error / np.abs(b))
    max_abs = float(np.nanmax(np.where(np.isnan(error), np.inf, error)))
    max_rel = float(np.nanmax(np.where(np.isnan(relative), np.inf, relative)))
    if not np.any(wrong):
        return Difference(True, max_abs, max_rel)
    index = tuple(int(i) for i in np.argwhere(wrong)[0])
    detail = (
        f"{int(np.sum(wrong))} of {wrong.size} elements differ; "
        f"at {index}: {_element(got[index])} != {_element(want[index])}"
    )
    return Difference(False, max_abs, max_rel, detail)


def _element(value: Any) -> str:
    """One array element as text: integers exactly, floats to 8 significant digits."""
    item = value.item() if hasattr(value, "item") else value
    if isinstance(item, float):
        return f"{item:.8g}"
    return str(item)


def _compare_all(
    got: Sequence[np.ndarray], want: Sequence[np.ndarray], rtol: float | None, atol: float | None
) -> list[Difference]:
    if len(got) != len(want):
        count = f"{len(got)} result(s), the reference {len(want)}"
        return [Difference(False, math.nan, math.nan, count)]
    return [compare(g, w, rtol, atol) for g, w in zip(got, want)]


@dataclass(frozen=True)
class Divergence:
    """The first op of ``@main`` whose addition makes a value diverge from the reference."""

    op_index: int  # position among @main's top-level ops, from 0
    op_count: int  # @main's top-level ops, its terminator left out
    op_name: str
    location: str  # file:line:col, the Python line for jax exports; "" when unknown
    name: str  # the location's name: jax's name stack, e.g. "jit(f)/bhqk,bhkd->bhqd/dot_general"
    result: int | None  # the op's result that diverges; None when only another live value does
    difference: Difference
    op_text: str  # the op's first printed line

    def __str__(self) -> str:
        which = f", result {self.result}" if self.result is not None else ""
        lines = [
            f"first divergence: op {self.op_index} of {self.op_count} in @main, "
            f"{self.op_name}{which}"
        ]
        where = " ".join(
            part for part in (self.location, f"({self.name})" if self.name else "") if part
        )
        if where:
            lines.append(f"  at {where}")
        lines.append(f"  {self.op_text}")
        if not math.isnan(self.difference.max_abs):
            lines.append(
                f"  max abs error {_number(self.difference.max_abs)}, "
                f"max rel error {_number(self.difference.max_rel)}"
            )
        if self.difference.detail:
            lines.append(f"  {self.difference.detail}")
        return "\n".join(lines)


@dataclass
class CheckReport:
    """What ``shlo.check`` found; ``str(report)`` is the readable summary."""

    systems: list[str]  # the systems that ran, the system under test first
    reference: str  # the one the others are compared with
    outputs: dict[str, list[np.ndarray]]  # each system's results
    differences: dict[str, list[Difference]]  # each system's results against the reference
    failures: dict[str, str] = field(default_factory=dict)  # systems that could not run, and why
    first_divergence: Divergence | None = None
    reproducer: Path | None = None
    reproducer_inputs: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every system that ran agrees with the reference on every result."""
        return all(d.ok for differences in self.differences.values() for d in differences)

    @property
    def rerun_command(self) -> str | None:
        if self.reproducer is None or self.reproducer_inputs is None:
            return None
        return f"shlo-run {self.reproducer} --input=@{self.reproducer_inputs} --check"

    def __str__(self) -> str:
        verdict = "all systems agree" if self.ok else "DIVERGES"
        lines = [f"shlo.check: {verdict} (reference: {self.reference})"]
        count = len(self.outputs[self.reference])
        header = ["", *(f"result[{i}]" for i in range(count))]
        rows = [header]
        for system in self.systems:
            if system == self.reference:
                rows.append([system, *(["reference"] * count)])
            else:
                rows.append([system, *(str(d) for d in self.differences[system])])
        widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(len(header))]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths)]
            lines.append("  " + "  ".join(cells).rstrip())
        lines.append("  (max abs error against the reference; x: outside the tolerance)")
        for system, why in self.failures.items():
            lines.append(f"{system}: not compared: {why}")
        for system in self.systems:
            for index, difference in enumerate(self.differences.get(system, [])):
                if not difference.ok and difference.detail:
                    lines.append(f"{system} result[{index}]: {difference.detail}")
        if self.first_divergence is not None:
            lines.append(str(self.first_divergence))
        if self.reproducer is not None:
            lines.append(f"reproducer: {self.reproducer} (inputs: {self.reproducer_inputs})")
            lines.append(f"  rerun: {self.rerun_command}")
        lines += self.notes
        return "\n".join(lines)


# --- the program and its inputs ------------------------------------------------------


@dataclass
class _Program:
    source: bytes | str  # module bytes, or the path of a file the worker reads
    filename: str
    entry: str
    inputs: list[np.ndarray]
    # XLA's results computed the caller's way (jax.jit, Exported.call); None: run the module.
    run_xla: Callable[[], list[np.ndarray]] | None = None
    # The framework that wrote the program, run eagerly (PyTorch), as one more system.
    eager: tuple[str, Callable[[], list[np.ndarray]]] | None = None


def _is_module_source(source: object) -> bool:
    return isinstance(source, str | bytes | bytearray | os.PathLike | ir.Module)


def _is_torch_program(source: object) -> bool:
    """A torch.nn.Module or torch.export.ExportedProgram (without importing torch)."""
    kind = type(source)
    return any(
        f"{base.__module__}.{base.__name__}"
        in ("torch.nn.modules.module.Module", "torch.export.exported_program.ExportedProgram")
        for base in kind.__mro__
    )


def _torch_program(source: Any, args: Sequence[Any], isolate: bool) -> _Program:
    import torch
    from torch.utils import _pytree

    from shlo import torch as shlo_torch

    program = shlo_torch.export(source, args)
    stablehlo = shlo_torch.to_stablehlo(program, isolate)
    leaves = _pytree.tree_leaves(tuple(args))
    inputs = [shlo_torch.to_numpy(leaf) for leaf in leaves if isinstance(leaf, torch.Tensor)]

    eager = source if isinstance(source, torch.nn.Module) else source.module()

    def run_eager() -> list[np.ndarray]:
        with torch.no_grad():
            outputs = eager(*args)
        return [shlo_torch.to_numpy(leaf) for leaf in _pytree.tree_leaves(outputs)]

    return _Program(stablehlo, "<torch.export>", "main", inputs, eager=("pytorch", run_eager))


def _load_program(
    fn_or_module: Any, args: Sequence[Any], entry: str, target: str, isolate: bool
) -> _Program:
    from shlo import jax as shlo_jax

    if _is_torch_program(fn_or_module):
        return _torch_program(fn_or_module, args, isolate)
    if shlo_jax.is_exported(fn_or_module):
        return _exported_program(fn_or_module, args, target)
    if isinstance(fn_or_module, bytes | bytearray):
        exported = shlo_jax.deserialize_exported(fn_or_module)
        if exported is not None:
            return _exported_program(exported, args, target)
    if not _is_module_source(fn_or_module):
        if not callable(fn_or_module):
            raise TypeError(
                "shlo.check takes StableHLO (text, bytes, a path, an ir.Module), "
                f"a jax.export.Exported or a function, got {type(fn_or_module).__name__}"
            )
        return _function_program(fn_or_module, args, target)
    inputs = [np.asarray(a) for a in args]
    if isinstance(fn_or_module, ir.Module):
        return _Program(module_to_bytecode(fn_or_module), "<string>", entry, inputs)
    if names_a_file(fn_or_module):
        path = existing_path(fn_or_module)
        return _Program(path, path, entry, inputs)
    data = fn_or_module.encode() if isinstance(fn_or_module, str) else bytes(fn_or_module)
    return _Program(data, "<string>", entry, inputs)


def _exported_program(exported: Any, args: Sequence[Any], target: str) -> _Program:
    import jax

    from shlo.jax import platform_for

    if exported.ordered_effects:
        raise ShloError("the export has ordered effects, which shlo cannot run")
    platform = platform_for(exported, target)
    leaves, tree = jax.tree_util.tree_flatten((tuple(args), {}))
    if tree != exported.in_tree:
        raise TypeError(
            f"arguments of structure {tree} do not match the export's {exported.in_tree}"
        )
    inputs = [
        np.asarray(leaves[i], dtype=exported.in_avals[i].dtype)
        for i in exported.module_kept_var_idx
    ]
    if len(exported.platforms) > 1:
        # A multi-platform export takes the platform's index first.
        inputs.insert(0, np.int32(exported.platforms.index(platform)))

    def run_xla() -> list[np.ndarray]:
        return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(exported.call(*args))]

    return _Program(bytes(exported.mlir_module_serialized), "<jax export>", "main", inputs, run_xla)


def _function_program(fn: Callable[..., Any], args: Sequence[Any], target: str) -> _Program:
    import jax

    platform = "cuda" if target == "cuda" else "cpu"
    exported = jax.export.export(jax.jit(fn), platforms=[platform])(*args)
    program = _exported_program(exported, args, target)

    def run_xla() -> list[np.ndarray]:
        return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]

    program.run_xla = run_xla
    return program


def _xla_available() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


# --- running each system -------------------------------------------------------------


@dataclass
class _Runner:
    """Runs modules on shlo (with the caller's target and options) and on the references."""

    target: str
    pipeline: Any
    isolate: bool
    timeout: float | None
    compile_options: dict[str, Any]

    def shlo(
        self, source: bytes | str, entry: str, inputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        executable = compile_program(
            source,
            self.target,
            entry,
            isolate=self.isolate,
            pipeline=self.pipeline,
            timeout=self.timeout,
            **self.compile_options,
        )
        return _as_list(executable(*inputs))

    def interpreter(
        self, source: bytes | str, entry: str, inputs: Sequence[np.ndarray], filename: str
    ) -> list[np.ndarray]:
        request = {"source": source, "entry": entry, "args": list(inputs), "filename": filename}
        if self.isolate:
            return shared_worker().call("interpret", timeout=self.timeout, **request)
        from shlo.interpreter import interpret

        return interpret(**request)

    def reference(
        self, name: str, module: ir.Module, inputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        if name == "interpreter":
            return self.interpreter(module_to_bytecode(module), "main", inputs, "<check>")
        return run_module_in_xla(module, inputs)


def _as_list(results: Any) -> list[np.ndarray]:
    return [np.asarray(r) for r in (results if isinstance(results, tuple | list) else [results])]


@functools.cache
def _xla_stablehlo_version() -> str:
    """The StableHLO version jax's own exports are written in, so its XLA reads it."""
    import jax

    from shlo.io import portable_artifact_producer

    exported = jax.export.export(jax.jit(lambda x: x), platforms=["cpu"])(np.float32(0))
    version = portable_artifact_producer(bytes(exported.mlir_module_serialized))
    return version or current_version()


def run_module_in_xla(module: ir.Module, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Results of a static module's @main compiled by XLA for jax's CPU device.

    The module travels as a portable artifact in the StableHLO version jax
    writes, which jaxlib's XLA deserializes; ShloError when that version
    cannot express it.
    """
    import jax
    import jax.extend

    artifact = module_to_portable_artifact(module, _xla_stablehlo_version())
    backend = jax.extend.backend.get_backend("cpu")
    device = backend.local_devices()[0]
    executable = backend.compile_and_load(artifact, [device])
    # 64-bit inputs keep their type (device_put narrows them without x64).
    with jax.enable_x64(True):
        results = executable.execute([jax.device_put(np.asarray(a), device) for a in inputs])
    return [np.asarray(r) for r in results]


# --- the structure of @main ----------------------------------------------------------

Key = tuple[int, int]  # (index of a top-level op of @main, result number)


def _main_ops(module: ir.Module) -> tuple[ir.Operation, ir.Block, list[ir.Operation]]:
    """@main, its block and its top-level ops, the terminator last."""
    main = find_function(module, "main")
    block = main.regions[0].blocks[0]
    return main, block, [op.operation for op in block.operations]


def _returnable(type_: ir.Type) -> bool:
    """Whether a value of this type can be a result of every system: a real or integer tensor."""
    if not isinstance(type_, ir.RankedTensorType):
        return False
    element = type_.element_type
    return isinstance(element, ir.IntegerType | ir.FloatType)


class _Structure:
    """Which values of @main are live across each cut, and who produces what."""

    def __init__(self, module: ir.Module) -> None:
        _, _, ops = _main_ops(module)
        self.ops = ops[:-1]
        self.count = len(self.ops)
        index = {op: i for i, op in enumerate(ops)}
        # The index of the last top-level op using each value (the terminator's is count).
        self.last_use: dict[Key, int] = {}
        # The values of other top-level ops that each op uses, in its nested regions too.
        self.operands: list[set[Key]] = [set() for _ in ops]
        for i, op in enumerate(ops):
            for used in _used_values(op):
                if isinstance(used.owner, ir.Block):
                    continue  # an argument of @main or of a nested block
                producer = index.get(used.owner.operation)
                if producer is None:
                    continue  # defined inside op's own regions
                key = (producer, ir.OpResult(used).result_number)
                self.operands[i].add(key)
                self.last_use[key] = max(self.last_use.get(key, -1), i)

    def live(self, cut: int) -> list[Key]:
        """Returnable values defined by ops 0..cut that a later op or the return uses."""
        return [
            key
            for key, last in sorted(self.last_use.items())
            if key[0] <= cut < last and _returnable(self.value(key).type)
        ]

    def all_values(self) -> list[Key]:
        return [
            (i, r)
            for i, op in enumerate(self.ops)
            for r, result in enumerate(op.results)
            if _returnable(result.type)
        ]

    def value(self, key: Key) -> ir.Value:
        return self.ops[key[0]].results[key[1]]


def _used_values(op: ir.Operation) -> list[ir.Value]:
    """The operands of ``op`` and of the ops nested in it (which may use values from above)."""
    used: list[ir.Value] = []

    def visit(nested: ir.Operation) -> ir.WalkResult:
        used.extend(nested.operands)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return used


def _returning(static: bytes, context: ir.Context, cut: int, keys: Sequence[Key]) -> ir.Module:
    """A copy of the static module whose @main stops after op ``cut`` and returns ``keys``."""
    module = ir.Module.parse(static, context)
    main, _, ops = _main_ops(module)
    terminator = ops[-1]
    values = [ops[i].results[r] for i, r in keys]
    with context, terminator.location:
        ir.Operation.create("func.return", operands=values, ip=ir.InsertionPoint(terminator))
        for op in reversed([*ops[cut + 1 : -1], terminator]):
            op.erase()
        _set_signature(main, [a.type for a in main.regions[0].blocks[0].arguments], values)
    return module


def _set_signature(main: ir.Operation, inputs: list[ir.Type], results: Sequence[ir.Value]) -> None:
    main.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(inputs, [v.type for v in results])
    )
    # jax's per-result attributes no longer line up with the results.
    for name in ("res_attrs", "arg_attrs"):
        if name in main.attributes:
            del main.attributes[name]


def _describe_location(location: ir.Location) -> tuple[str, str]:
    """(file:line:col, name) of a location; empty strings when it has none."""
    text = str(location)
    where = _FILE_LINE_COL.search(text)
    name = _NAME.match(text)
    return (
        f"{where.group(1)}:{where.group(2)}:{where.group(3)}" if where else "",
        name.group(1) if name else "",
    )


def _first_line(op: ir.Operation, limit: int = 200) -> str:
    line = str(op).splitlines()[0].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --- bisection and the reproducer ----------------------------------------------------


@dataclass
class _Bisection:
    runner: _Runner
    static: bytes  # the refined, static module's bytecode
    context: ir.Context
    structure: _Structure
    inputs: list[np.ndarray]
    oracle: dict[Key, np.ndarray]  # the reference's value of every returnable value
    rtol: float | None
    atol: float | None

    def diverging(self, cut: int) -> list[tuple[Key, Difference]]:
        """The live values after op ``cut`` that shlo computes differently from the reference."""
        keys = [key for key in self.structure.live(cut) if key in self.oracle]
        if not keys:
            return []
        module = _returning(self.static, self.context, cut, keys)
        try:
            got = self.runner.shlo(module_to_bytecode(module), "main", self.inputs)
        except ShloError as error:
            return [(keys[0], Difference(False, math.nan, math.nan, f"shlo failed: {error}"))]
        want = [self.oracle[key] for key in keys]
        differences = _compare_all(got, want, self.rtol, self.atol)
        return [(k, d) for k, d in zip(keys, differences) if not d.ok]

    def first_divergence(self) -> tuple[int, list[tuple[Key, Difference]]] | None:
        """The first cut where a live value diverges (binary search), with those values.

        Cut -1 (no op) agrees; None when the last cut (the whole program)
        agrees too.
        """
        high = self.structure.count - 1
        found = self.diverging(high) if high >= 0 else []
        if not found:
            return None
        low = -1
        while high - low > 1:
            middle = (low + high) // 2
            diverging = self.diverging(middle)
            if diverging:
                high, found = middle, diverging
            else:
                low = middle
        return high, found

    def reproducer(self, target: Key) -> tuple[ir.Module, list[np.ndarray], int] | None:
        """The smallest backward slice of ``target`` that still diverges, its inputs and op count.

        Level 1 is the op alone, its operands fed with the reference's
        values; each level adds the producers of the previous level's
        operands; the last is the whole slice on the program's own inputs.
        """
        previous: set[int] = set()
        for level in range(1, self.structure.count + 1):
            ops = self._slice(target[0], level)
            if ops == previous:
                return None  # the whole slice, already tried
            previous = ops
            candidate = self._slice_module(ops, target)
            if candidate is None:
                continue
            module, inputs = candidate
            try:
                got = self.runner.shlo(module_to_bytecode(module), "main", inputs)
            except ShloError:
                continue
            if not compare(got[0], self.oracle[target], self.rtol, self.atol).ok:
                return module, inputs, len(ops)
        return None

    def _slice(self, start: int, level: int) -> set[int]:
        """Ops up to ``level`` - 1 steps up the operands of op ``start``, and their constants."""
        chosen, frontier = {start}, {start}
        for _ in range(level - 1):
            frontier = {
                key[0]
                for i in frontier
                for key in self.structure.operands[i]
                if key[0] not in chosen
            }
            chosen |= frontier
        constants = {
            key[0]
            for i in chosen
            for key in self.structure.operands[i]
            if self.structure.ops[key[0]].name == "stablehlo.constant"
        }
        return chosen | constants

    def _slice_module(
        self, chosen: set[int], target: Key
    ) -> tuple[ir.Module, list[np.ndarray]] | None:
        """@main reduced to the ``chosen`` ops, returning ``target``.

        The values they use from other ops become arguments, fed with the
        reference's values; the program's unused arguments go.
        """
        outside = sorted(
            {key for i in chosen for key in self.structure.operands[i] if key[0] not in chosen}
        )
        if any(key not in self.oracle for key in outside):
            return None  # a value the reference cannot give
        module = ir.Module.parse(self.static, self.context)
        main, block, ops = _main_ops(module)
        terminator = ops[-1]
        with self.context, terminator.location:
            for key in outside:
                value = ops[key[0]].results[key[1]]
                value.replace_all_uses_with(block.add_argument(value.type, value.location))
            result = ops[target[0]].results[target[1]]
            ir.Operation.create("func.return", operands=[result], ip=ir.InsertionPoint(terminator))
            dropped = [op for i, op in enumerate(ops[:-1]) if i not in chosen]
            for op in reversed([*dropped, terminator]):
                op.erase()
            kept = []
            for number in reversed(range(len(self.inputs))):
                if list(block.arguments[number].uses):
                    kept.append(number)
                else:
                    block.erase_argument(number)
            kept.reverse()
            _set_signature(main, [a.type for a in block.arguments], [result])
        inputs = [self.inputs[n] for n in kept] + [self.oracle[key] for key in outside]
        return module, inputs


# --- the checker ---------------------------------------------------------------------


def check(
    fn_or_module: Any,
    *args: Any,
    target: str = "cpu",
    entry: str = "main",
    pipeline: Any = None,
    reproducer_dir: str | os.PathLike[str] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    xla: bool | None = None,
    isolate: bool = True,
    timeout: float | None = None,
    **compile_options: Any,
) -> CheckReport:
    """Run ``fn_or_module`` on ``args`` with shlo, the reference interpreter and XLA; compare.

    ``fn_or_module`` is StableHLO (text, bytes, a path, an ``ir.Module``), a
    ``jax.export.Exported`` (called with its pytrees), a Python function
    (exported with jax for ``target``'s platform and run by ``jax.jit``), or a
    ``torch.nn.Module`` or ``ExportedProgram`` called with torch tensors
    (lowered as ``shlo.torch.compile`` does; PyTorch eager is one more system).
    shlo compiles it for ``target`` with ``pipeline`` and ``compile_options``
    (``threads``, ``arch``, ...), as ``shlo.compile``. The reference is the
    interpreter (in the worker unless ``isolate`` is False), or XLA when the
    interpreter cannot run the program. XLA runs when jax is importable
    (``xla=False``: never; ``xla=True``: jax must be importable).

    Float results agree within ``rtol`` and ``atol`` (per dtype by default,
    ``default_tolerances``), integers exactly. When shlo diverges from the
    reference, the report names the first op of @main that diverges and a
    reproducer written to ``reproducer_dir`` (default: a new temporary
    directory): ``reproducer.mlir`` and ``reproducer_inputs.npz``.
    """
    run_xla = _xla_available() if xla is None else xla
    if run_xla and not _xla_available():
        raise ShloError("xla=True needs jax, which is not installed")
    program = _load_program(fn_or_module, args, entry, target, isolate)
    runner = _Runner(target, pipeline, isolate, timeout, compile_options)
    system = f"shlo ({target})"
    outputs = {system: runner.shlo(program.source, program.entry, program.inputs)}
    failures: dict[str, str] = {}
    try:
        outputs["interpreter"] = runner.interpreter(
            program.source, program.entry, program.inputs, program.filename
        )
    except ShloError as error:
        failures["interpreter"] = str(error)
    static: ir.Module | None = None
    if run_xla:
        try:
            if program.run_xla is not None:
                outputs["xla"] = program.run_xla()
            else:
                static = _static_module(program, isolate, timeout)
                outputs["xla"] = run_module_in_xla(static, program.inputs)
        except Exception as error:  # jax raises its own types; XLA is a second opinion
            failures["xla"] = f"{type(error).__name__}: {error}".splitlines()[0]
    elif xla is None:
        failures["xla"] = "jax is not installed"
    if program.eager is not None:
        name, run_eager = program.eager
        outputs[name] = run_eager()
    reference = next((name for name in REFERENCES if name in outputs), None)
    if reference is None:
        raise ShloError(
            "no reference could run the program: "
            + "; ".join(f"{name}: {why}" for name, why in failures.items())
        )
    differences = {
        name: _compare_all(results, outputs[reference], rtol, atol)
        for name, results in outputs.items()
        if name != reference
    }
    report = CheckReport(
        systems=list(outputs),
        reference=reference,
        outputs=outputs,
        differences=differences,
        failures=failures,
    )
    if all(d.ok for d in differences[system]):
        if not report.ok:
            others = [name for name, found in differences.items() if not all(d.ok for d in found)]
            report.notes.append(f"shlo agrees with the {reference}; {', '.join(others)} differs")
        return report
    if static is None:
        static = _static_module(program, isolate, timeout)
    _bisect(report, runner, static, program.inputs, reference, reproducer_dir, rtol, atol)
    if pipeline is not None:
        report.notes.append(
            "compiled with a custom pipeline: rerun with shlo.check(..., pipeline=...) to use it"
        )
    return report


def _static_module(program: _Program, isolate: bool, timeout: float | None) -> ir.Module:
    """The program's entry as a static, inlined @main: the module the bisection cuts."""
    from shlo.refine import refine

    request = {"source": program.source, "entry": program.entry, "filename": program.filename}
    signature = (
        shared_worker().call("inspect", timeout=timeout, **request)
        if isolate
        else inspect_entry(**request)
    )
    # Bytes the worker wrote itself: parsing them here is safe.
    module = ir.Module.parse(signature.module_bytecode, new_context())
    keep_only_entry_public(module, program.entry, program.filename)
    return refine(module, program.inputs, isolate=isolate, timeout=timeout)


def _bisect(
    report: CheckReport,
    runner: _Runner,
    static: ir.Module,
    inputs: list[np.ndarray],
    reference: str,
    reproducer_dir: str | os.PathLike[str] | None,
    rtol: float | None,
    atol: float | None,
) -> None:
    """Fill in the report's first divergence and reproducer."""
    context = static.context
    structure = _Structure(static)
    keys = structure.all_values()
    static_bytes = module_to_bytecode(static)
    try:
        values = runner.reference(
            reference, _returning(static_bytes, context, structure.count - 1, keys), inputs
        )
    except Exception as error:  # ShloError, or jaxlib's own from XLA
        report.notes.append(f"no bisection: the {reference} cannot return every value ({error})")
        return
    bisection = _Bisection(
        runner, static_bytes, context, structure, inputs, dict(zip(keys, values)), rtol, atol
    )
    found = bisection.first_divergence()
    if found is None:
        report.notes.append(
            "no bisection: @main refined to static shapes agrees with the reference, so the "
            "divergence is in what refinement changes (shapes, inlining, folding)"
        )
        return
    cut, diverging = found
    own = [(key, d) for key, d in diverging if key[0] == cut]
    key, difference = (own or diverging)[0]
    op = structure.ops[cut]
    location, name = _describe_location(op.location)
    report.first_divergence = Divergence(
        op_index=cut,
        op_count=structure.count,
        op_name=op.name,
        location=location,
        name=name,
        result=key[1] if own else None,
        difference=difference,
        op_text=_first_line(op),
    )
    reproduced = bisection.reproducer(key)
    if reproduced is None:
        # The slice alone compiles right: the reproducer is the program up to the cut.
        module = _returning(static_bytes, context, cut, [k for k, _ in diverging])
        inputs_of_reproducer, op_count = inputs, cut + 1
    else:
        module, inputs_of_reproducer, op_count = reproduced
    directory = Path(reproducer_dir or tempfile.mkdtemp(prefix="shlo-check-"))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "reproducer.mlir").write_text(module.operation.get_asm(enable_debug_info=True))
        np.savez(directory / "reproducer_inputs.npz", *inputs_of_reproducer)
    except OSError as error:
        raise ShloError(f"cannot write the reproducer to {directory}: {error}") from None
    report.reproducer = directory / "reproducer.mlir"
    report.reproducer_inputs = directory / "reproducer_inputs.npz"
    report.notes.append(f"the reproducer has {op_count} of the {structure.count} ops")
