"""Pipeline parsing, the pass registry, pass options and the pass error wrapper."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from shlo import ShloError, ir, new_context, pipeline, run_pipeline
from shlo._mlir_compat import passmanager
from shlo.pass_framework import OptionError, Pass, PassError, split_top_level
from shlo.passes import PASSES
from shlo.pipeline import (
    PipelineError,
    build_pass_manager,
    expand,
    flag_element,
    pipeline_elements,
    prepare_pass_managers,
    record_pipelines,
    recorded_pipelines,
    registered_passes,
)

# The dynamism seed's add_one_dynamic.mlir.
ADD_ONE = (Path(__file__).parents[2] / "docs" / "examples" / "add_one_dynamic.mlir").read_text()


def test_split_top_level_respects_nesting():
    text = "a{types=tensor<2x3xf32>,tensor<?xf32, #x<1, 2>>},func.func(b,c),d"
    assert split_top_level(text) == [
        "a{types=tensor<2x3xf32>,tensor<?xf32, #x<1, 2>>}",
        "func.func(b,c)",
        "d",
    ]


def test_pipeline_elements_strip_the_module_anchor():
    assert pipeline_elements("builtin.module(cse, func.func(canonicalize))") == [
        "cse",
        "func.func(canonicalize)",
    ]


def test_shlo_pipelines_expand_in_place():
    items = expand(["cse", "shlo-remove-dynamism{types=tensor<4xf32>}"])
    assert items[0] == "cse"
    assert "stablehlo-refine-arguments{types=tensor<4xf32>}" in items
    assert any(isinstance(item, Pass) and item.argument == "shlo-simplify" for item in items)


def test_options_are_typed():
    pass_cls = PASSES["shlo-remove-dynamism"]
    instance = pass_cls.from_options("{types=tensor<2xf32>,tensor<?x3xi32>}")
    assert instance.types == ("tensor<2xf32>", "tensor<?x3xi32>")
    assert instance.options_text() == "{types=tensor<2xf32>,tensor<?x3xi32> static-program=false}"
    with pytest.raises(OptionError, match="has no option 'type'"):
        pass_cls.from_options("type=tensor<2xf32>")


def test_unknown_pass_names_the_closest():
    context = new_context()
    with pytest.raises(
        PipelineError,
        match="unknown pass 'stablehlo-refine-shape'; did you mean stablehlo-refine-shapes",
    ):
        build_pass_manager("builtin.module(stablehlo-refine-shape)", context)
    with pytest.raises(PipelineError, match="did you mean shlo-simplify"):
        flag_element("shlo-simplfy", None)


def test_flags_nest_under_the_pass_anchor():
    assert flag_element("stablehlo-canonicalize-dynamism", None) == (
        "func.func(stablehlo-canonicalize-dynamism)"
    )
    assert flag_element("cse", None) == "cse"
    assert flag_element("shlo-remove-dynamism", "types=tensor<2xf32>") == (
        "shlo-remove-dynamism{types=tensor<2xf32>}"
    )


def test_registry_lists_every_group():
    passes = registered_passes()
    groups = {info.group for info in passes.values()}
    assert groups == {"shlo", "stablehlo", "mlir"}
    for name in ("canonicalize", "cse", "inline", "stablehlo-refine-shapes", "shlo-simplify"):
        assert name in passes
    assert all(info.summary for info in passes.values())


def test_registered_upstream_passes_really_exist():
    """Every name in the table parses as a pass of the pinned wheel."""
    context = new_context()
    with context:
        for info in registered_passes().values():
            if info.group == "shlo":
                continue
            element = f"{info.anchor}({info.name})" if info.anchor else info.name
            pm = passmanager.PassManager("builtin.module")
            try:
                pm.add(element)
            except ValueError as error:
                assert "does not refer to a registered pass" not in str(error), info.name


def test_pipeline_runs_python_and_cpp_passes():
    context = new_context()
    module = ir.Module.parse(ADD_ONE, context)
    run_pipeline(module, "builtin.module(shlo-remove-dynamism{types=tensor<8xf32>})")
    text = str(module)
    assert "tensor<8xf32>" in text and "?" not in text


@dataclass(frozen=True)
class RaisingPass(Pass):
    """Raise a Python exception, as a buggy pass would."""

    argument: ClassVar[str] = "shlo-test-raise"

    def run(self, module: ir.Operation) -> None:
        raise KeyError("boom")


@dataclass(frozen=True)
class RejectingPass(Pass):
    """Reject every function."""

    argument: ClassVar[str] = "shlo-test-reject"

    def run(self, module: ir.Operation) -> None:
        function = module.regions[0].blocks[0].operations[0]
        raise PassError(function.location, "expected nothing")


@pytest.mark.parametrize(
    ("pass_cls", "message"),
    [
        (RaisingPass, "internal error in shlo-test-raise: KeyError: 'boom'"),
        (RejectingPass, "expected nothing"),
    ],
)
def test_pass_exceptions_become_diagnostics(pass_cls, message):
    context = new_context()
    module = ir.Module.parse(ADD_ONE, context)
    with context:
        pm = passmanager.PassManager("builtin.module")
        pass_cls().add_to(pm)
        with pytest.raises(ir.MLIRError) as caught:
            pm.run(module.operation)
    assert [d.message for d in caught.value.error_diagnostics] == [message]


def test_run_pipeline_raises_shlo_error_with_location():
    context = new_context()
    module = ir.Module.parse(ADD_ONE, context)
    with pytest.raises(ShloError) as caught:
        run_pipeline(module, ["shlo-verify-static"], "add_one.mlir")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.where == "add_one.mlir:1:1"
    assert "argument #0 of @main has type tensor<?xf32>" in diagnostic.message


def _counting_builds(monkeypatch) -> list[object]:
    built: list[object] = []

    def build(elements, context):
        built.append(elements)
        return build_pass_manager(elements, context)

    monkeypatch.setattr(pipeline, "build_pass_manager", build)
    return built


def test_a_prepared_pass_manager_serves_one_run_in_its_context(monkeypatch):
    context, other = new_context(), new_context()
    prepare_pass_managers(context, [("canonicalize", "cse")])
    built = _counting_builds(monkeypatch)
    run_pipeline(ir.Module.parse(ADD_ONE, other), ["canonicalize", "cse"])
    assert len(built) == 1  # another context's: built anew
    run_pipeline(ir.Module.parse(ADD_ONE, context), "builtin.module(canonicalize,cse)")
    assert len(built) == 1  # the prepared one
    run_pipeline(ir.Module.parse(ADD_ONE, context), ["canonicalize", "cse"])
    assert len(built) == 2  # used once


def test_preparing_stops_when_interrupted(monkeypatch):
    context = new_context()
    prepare_pass_managers(context, [("canonicalize",), ("cse",)], interrupted=lambda: True)
    built = _counting_builds(monkeypatch)
    run_pipeline(ir.Module.parse(ADD_ONE, context), ["canonicalize"])
    assert len(built) == 1


# tosa.concat of one operand is its operand: a canonicalization pattern
# (ConcatOptimization), not a folder.
TOSA_CONCAT = """func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = tosa.concat %a {axis = 0 : i32} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}"""


def test_a_prepared_canonicalize_takes_the_patterns_of_dialects_loaded_since(monkeypatch):
    # Its patterns were collected before tosa loaded; MLIR initializes the
    # passes again when the context's dialects have changed.
    context = new_context()
    assert not context.is_dialect_loaded("tosa")
    prepare_pass_managers(context, [("canonicalize",)])
    module = ir.Module.parse(TOSA_CONCAT, context)
    built = _counting_builds(monkeypatch)
    run_pipeline(module, ["canonicalize"])
    assert not built, "the prepared pass manager ran"
    assert "tosa.concat" not in str(module)
    untouched = ir.Module.parse(TOSA_CONCAT, new_context())
    run_pipeline(untouched, ["canonicalize{disable-patterns=ConcatOptimization}"])
    assert "tosa.concat" in str(untouched)


def test_recorded_pipelines_are_distinct_and_in_order(monkeypatch):
    monkeypatch.setattr(pipeline._prepared, "recorded", None)
    context = new_context()
    run_pipeline(ir.Module.parse(ADD_ONE, context), ["cse"])
    assert recorded_pipelines() == []  # not recording
    record_pipelines()
    for elements in (["canonicalize", "cse"], ["cse"], "builtin.module(canonicalize,cse)"):
        run_pipeline(ir.Module.parse(ADD_ONE, context), elements)
    assert recorded_pipelines() == [("canonicalize", "cse"), ("cse",)]
    assert recorded_pipelines() == []
