"""Pass pipelines that mix shlo's Python passes with upstream C++ passes.

``PassManager.parse`` cannot see Python passes, so pipeline strings are parsed
here: ``builtin.module(...)`` is split at top-level commas and each element is
added in order. shlo names get a pass instance (pipelines are expanded in
place); everything else goes to MLIR as text.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import functools
import importlib.resources
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shlo._mlir_compat import ir, passmanager
from shlo.diagnostics import DiagnosticCollector, ShloError, collect_diagnostics
from shlo.pass_framework import OptionError, Pass, PassPipeline, split_top_level
from shlo.passes import PASSES


class PipelineError(ValueError):
    """A pipeline that names an unknown pass or has bad options."""


@dataclass(frozen=True)
class PassInfo:
    name: str
    anchor: str  # "" when the pass runs on any op
    group: str  # "shlo", "stablehlo" or "mlir"
    summary: str


@functools.cache
def registered_passes() -> dict[str, PassInfo]:
    """Every pass shlo-opt can run: upstream MLIR, StableHLO and shlo's own."""
    table = importlib.resources.files("shlo") / "data" / "upstream_passes.tsv"
    passes: dict[str, PassInfo] = {}
    with table.open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            passes[row["name"]] = PassInfo(row["name"], row["anchor"], row["group"], row["summary"])
    for name, pass_cls in PASSES.items():
        passes[name] = PassInfo(name, "", "shlo", pass_cls.summary())
    return passes


def closest_names(name: str) -> list[str]:
    return difflib.get_close_matches(name, list(registered_passes()), n=3, cutoff=0.6)


def unknown_pass_message(name: str) -> str:
    suggestions = closest_names(name)
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
    return f"unknown pass '{name}'{hint}"


def strip_anchor(pipeline: str, anchor: str = "builtin.module") -> str:
    text = pipeline.strip()
    if text.startswith(anchor + "(") and text.endswith(")"):
        return text[len(anchor) + 1 : -1]
    return text


def element_name(element: str) -> str:
    for index, char in enumerate(element):
        if char in "{(":
            return element[:index].strip()
    return element.strip()


def _options_of(element: str) -> str:
    start = element.find("{")
    return element[start:] if start >= 0 else ""


def make_pass(name: str, options: str = "") -> Pass:
    try:
        return PASSES[name].from_options(options)
    except OptionError as error:
        raise PipelineError(str(error)) from None
    except TypeError as error:
        raise PipelineError(f"bad options for '{name}': {error}") from None


def expand(elements: Sequence[str | Pass]) -> list[str | Pass]:
    """Pipeline elements with shlo passes instantiated and shlo pipelines expanded."""
    expanded: list[str | Pass] = []
    for element in elements:
        if isinstance(element, Pass):  # a step a shlo pipeline made itself
            expanded.append(element)
            continue
        name = element_name(element)
        if name in PASSES:
            instance = make_pass(name, _options_of(element))
            if isinstance(instance, PassPipeline):
                expanded += expand(instance.elements())
            else:
                expanded.append(instance)
            continue
        inner = element[len(name) :].strip()
        if inner.startswith("(") and any(
            element_name(nested) in PASSES for nested in split_top_level(inner[1:-1])
        ):
            raise PipelineError(
                f"shlo passes run on builtin.module; move them out of '{name}(...)'"
            )
        expanded.append(element)
    return expanded


def pipeline_elements(pipeline: str) -> list[str]:
    return split_top_level(strip_anchor(pipeline))


def add_elements(pm: passmanager.PassManager, elements: list[str]) -> None:
    for item in expand(elements):
        if isinstance(item, Pass):
            item.add_to(pm)
            continue
        try:
            pm.add(item)
        except ValueError as error:
            message = str(error)
            unknown = re.search(r"'([^']+)' does not refer to a registered pass", message)
            if unknown:
                # Name the unknown pass itself, which may be nested in func.func(...).
                raise PipelineError(unknown_pass_message(unknown.group(1))) from None
            raise PipelineError(message.splitlines()[0]) from None


def build_pass_manager(pipeline: str | list[str], context: ir.Context) -> passmanager.PassManager:
    """A pass manager on builtin.module for a pipeline string or a list of elements."""
    elements = pipeline_elements(pipeline) if isinstance(pipeline, str) else pipeline
    with context:
        pm = passmanager.PassManager("builtin.module")
        add_elements(pm, elements)
    return pm


def flag_element(name: str, options: str | None) -> str:
    """The pipeline element for a ``--name[=options]`` flag, nested under the pass's anchor."""
    info = registered_passes().get(name)
    if info is None:
        raise PipelineError(unknown_pass_message(name))
    element = name + ("{" + options + "}" if options else "")
    if info.anchor and info.anchor != "builtin.module":
        element = f"{info.anchor}({element})"
    return element


class _PreparedPassManagers:
    """Pass managers built and initialized ahead of time for one context; each is used once.

    A pass manager initializes its passes on its first run, and again only
    when the context has loaded dialects since: every ``canonicalize``
    collects the canonicalization patterns of every loaded op then, about
    0.2 ms each, nine times in a CPU compile. The worker prepares the
    pipelines of its last request for the next one's context while it waits
    (``prepare_pass_managers``): `x * 2 + 1` compiled in 14.8 instead of
    16.9 ms, the bench matmul in 40.7 instead of 43.3 ms (in one process,
    medians of 15).
    """

    def __init__(self) -> None:
        self.context: ir.Context | None = None
        self.pass_managers: dict[tuple[str, ...], passmanager.PassManager] = {}
        # The pipelines run_pipeline ran since recording started; None: not recording.
        self.recorded: list[tuple[str, ...]] | None = None

    def take(self, context: ir.Context, key: tuple[str, ...]) -> passmanager.PassManager | None:
        if context is not self.context:
            return None
        return self.pass_managers.pop(key, None)


_prepared = _PreparedPassManagers()


def _pipeline_key(elements: list[str]) -> tuple[str, ...] | None:
    """The pipeline as a key of prepared pass managers; None when it holds Pass objects."""
    return tuple(elements) if all(isinstance(element, str) for element in elements) else None


def record_pipelines() -> None:
    """From now on, remember the pipelines ``run_pipeline`` runs, for ``recorded_pipelines``."""
    _prepared.recorded = []


def recorded_pipelines() -> list[tuple[str, ...]]:
    """The distinct pipelines run since the last call, in the order they first ran."""
    recorded = list(dict.fromkeys(_prepared.recorded or ()))
    if _prepared.recorded is not None:
        _prepared.recorded = []
    return recorded


def prepare_pass_managers(
    context: ir.Context,
    pipelines: Sequence[tuple[str, ...]],
    interrupted: Callable[[], bool] = lambda: False,
) -> None:
    """Build and initialize a pass manager for each of ``pipelines`` in ``context``,
    for ``run_pipeline`` to use instead of building one; stops when ``interrupted()``.

    Each runs twice on an empty module: its passes initialize on the first
    run, and a later pipeline's dependent dialects, loaded while it first
    runs, make the earlier ones initialize again on the second. A run that
    fails on the empty module (the transform interpreter finds no script)
    has initialized its passes all the same.
    """
    _prepared.context, _prepared.pass_managers = context, {}
    empty = ir.Module.create(ir.Location.unknown(context))
    for _ in range(2):
        for key in pipelines:
            if interrupted():
                return
            pm = _prepared.pass_managers.get(key)
            if pm is None:
                try:
                    pm = _prepared.pass_managers[key] = build_pass_manager(list(key), context)
                except PipelineError:
                    continue
            with contextlib.suppress(ir.MLIRError):
                pm.run(empty.operation)


def run_pipeline(
    module: ir.Module,
    pipeline: str | list[str],
    filename: str = "<module>",
    verify_each: bool = True,
) -> None:
    """Run ``pipeline`` on ``module`` in place; ShloError carries the diagnostics on failure.

    ``verify_each=False`` verifies the module once, after the last pass,
    instead of after every pass: on a large program the verifier costs more
    than most passes (GPT-2, 12 layers: 1.7 of 3.9 s of lowering).
    """
    context = module.context
    elements = pipeline_elements(pipeline) if isinstance(pipeline, str) else pipeline
    key = _pipeline_key(elements)
    pm = None
    if key is not None:
        if _prepared.recorded is not None:
            _prepared.recorded.append(key)
        pm = _prepared.take(context, key)
    if pm is None:
        pm = build_pass_manager(elements, context)
    pm.enable_verifier(verify_each)
    with collect_diagnostics(context, filename) as collector:
        try:
            pm.run(module.operation)
            if not verify_each:
                module.operation.verify()
        except ir.MLIRError as error:
            collector.add_error(error)
            explain_silent_failure(module, collector, pipeline)
            errors = [d for d in collector.diagnostics if d.severity == "error"]
            raise ShloError(
                errors[0].message if errors else str(error), collector.diagnostics
            ) from None


def explain_silent_failure(
    module: ir.Module, collector: DiagnosticCollector, pipeline: str | Sequence[str]
) -> None:
    """Say at the module that the pipeline failed, when no pass said anything.

    Some upstream passes signal failure without a diagnostic (e.g.
    stablehlo-refine-shapes on a module without functions), and MLIR's own
    "Failure while executing pass pipeline" names neither a pass nor a place.
    """
    if any(d.severity == "error" for d in collector.diagnostics):
        return
    with module.context:
        module.operation.location.emit_error(
            "the pass pipeline failed without saying why (an upstream pass "
            f"gave no diagnostic); pipeline: {_pipeline_text(pipeline)}"
        )


def _pipeline_text(pipeline: str | Sequence[str], limit: int = 300) -> str:
    text = pipeline if isinstance(pipeline, str) else ",".join(pipeline)
    return text if len(text) <= limit else text[:limit] + "..."
