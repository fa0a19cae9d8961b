"""shlo-remove-dynamism's precondition (@main or one function) and silent pass failures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from shlo._mlir_compat import ir, new_context
from shlo.diagnostics import ShloError
from shlo.pipeline import run_pipeline

FUNCTION = """func.func @{name}(%x: tensor<2xf32>) -> tensor<2xf32> {{
  return %x : tensor<2xf32>
}}
"""
TWO_FUNCTIONS = FUNCTION.format(name="a") + FUNCTION.format(name="b")
NESTED = "module {\nmodule {\n" + FUNCTION.format(name="a") + "}\n}\n"


def pipeline_error(text: str, pipeline: list[str]) -> ShloError:
    module = ir.Module.parse(text, new_context())
    with pytest.raises(ShloError) as raised:
        run_pipeline(module, pipeline, "input.mlir")
    return raised.value


@pytest.mark.parametrize(
    ("text", "where", "found"),
    [
        # The implicit top-level module (location input.mlir:0:0) starts at 1:1.
        (TWO_FUNCTIONS, "input.mlir:1:1", "found @a, @b"),
        ("// a comment\nmodule {\n" + TWO_FUNCTIONS + "}\n", "input.mlir:2:1", "found @a, @b"),
        (NESTED, "input.mlir:1:1", "found only nested modules"),
        ("module {\n}\n", "input.mlir:1:1", "found none"),
        # A name that is not valid UTF-8 is named as MLIR prints it.
        (TWO_FUNCTIONS.replace("@b", '@"b\\FF"'), "input.mlir:1:1", 'found @a, @"b\\FF"'),
    ],
)
def test_remove_dynamism_names_the_function_it_needs(text: str, where: str, found: str) -> None:
    error = pipeline_error(text, ["shlo-remove-dynamism{types=tensor<2xf32>}"])
    (diagnostic,) = error.diagnostics
    assert diagnostic.where == where
    assert "expected a function @main or exactly one function" in diagnostic.message
    assert found in diagnostic.message


@pytest.mark.parametrize("text", [FUNCTION.format(name="f"), TWO_FUNCTIONS.replace("@b", "@main")])
def test_remove_dynamism_refines_main_or_the_only_function(text: str) -> None:
    module = ir.Module.parse(text, new_context())
    run_pipeline(module, ["shlo-remove-dynamism{types=tensor<2xf32>}"], "input.mlir")


def test_a_pass_failing_without_a_diagnostic_is_reported_at_the_module() -> None:
    # stablehlo-refine-shapes signals failure without a word on a module without functions.
    error = pipeline_error(NESTED, ["stablehlo-refine-shapes"])
    (diagnostic,) = error.diagnostics
    assert diagnostic.where == "input.mlir:1:1"
    assert "failed without saying why" in diagnostic.message
    assert "stablehlo-refine-shapes" in diagnostic.message


def test_shlo_opt_locates_the_error_on_deeply_nested_modules(tmp_path: Path) -> None:
    path = tmp_path / "input.mlir"
    path.write_text("module {\n" * 300 + FUNCTION.format(name="a") + "}\n" * 300)
    result = subprocess.run(
        [sys.executable, "-m", "shlo.tools.shlo_opt", str(path), "--shlo-remove-dynamism"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"{path}:1:1: error: shlo-remove-dynamism refines @main")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# A static program as JAX exports one: @main calls its wrapper, constants to fold.
STATIC = """
func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @_wrapped_jax_export_main(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @_wrapped_jax_export_main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<2.0> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %0 = stablehlo.multiply %x, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# Static types, but an op refinement replaces; a dynamic type; a shape computation.
NOT_STATIC = [
    STATIC.replace(
        "%b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<4xf32>",
        "%s = stablehlo.constant dense<4> : tensor<1xi32>\n"
        "  %b = stablehlo.dynamic_broadcast_in_dim %c, %s, dims = []"
        " : (tensor<f32>, tensor<1xi32>) -> tensor<4xf32>",
    ),
    STATIC.replace(
        "%0 = stablehlo.multiply %x, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>",
        "%m = stablehlo.multiply %x, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<?xf32>\n"
        "  %0 = stablehlo.convert %m : (tensor<?xf32>) -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>",
    ),
    STATIC.replace(
        "%0 = stablehlo.multiply %x, %b : tensor<4xf32>",
        "%n = arith.constant 4 : index\n  %0 = stablehlo.multiply %x, %b : tensor<4xf32>",
    ),
]


def test_a_static_program_takes_the_short_pipeline_to_the_same_result() -> None:
    from shlo.passes.frontend.remove_dynamism import is_static_stablehlo

    results = []
    for options in ("", "{static-program=true}"):
        module = ir.Module.parse(STATIC, new_context())
        assert is_static_stablehlo(module.operation)
        run_pipeline(module, [f"shlo-remove-dynamism{options}"], "input.mlir")
        results.append(str(module))
    assert results[0] == results[1]
    assert "call" not in results[1] and "broadcast_in_dim" not in results[1]


@pytest.mark.parametrize("text", NOT_STATIC, ids=["shape_op", "dynamic_type", "arith"])
def test_a_program_with_anything_to_refine_takes_the_whole_pipeline(text) -> None:
    from shlo.passes.frontend.remove_dynamism import is_static_stablehlo

    module = ir.Module.parse(text, new_context())
    assert not is_static_stablehlo(module.operation)
