"""shlo.refine on real shape-polymorphic jax.export modules (jax 0.10.2).

Each case of jax_exports.py is exported once (cached there), then refined to
two concrete size choices, from the portable artifact jax serializes and from
the module text. The refined program must be fully static: no `?` in any type,
no shape assertion, no @_wrapped_jax_export_main, no dynamic op; @main takes
the requested types and returns what jax computes for them. Inputs that break
the export's shape assumptions must fail with JAX's own message, filled in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jax_exports
import numpy as np
import pytest
import shlo
from jax_exports import CASES
from shlo.refine import tensor_type_string

# Dynamic StableHLO ops, plus the custom_calls jax and refine-arguments use for them.
DYNAMIC_OPS = (
    "dynamic_broadcast_in_dim",
    "dynamic_reshape",
    "dynamic_iota",
    "get_dimension_size",
    "real_dynamic_slice",
    "dynamic_pad",
    "dynamic_gather",
    "dynamic_conv",
    "dynamic_reduce_window",
    "dynamic_rng_bit_generator",
    "dynamic_top_k",
    "shape_refinement_operand_wrapper",
)

JAX_MISMATCH = "Input shapes do not match the polymorphic shapes specification"

FORMS = ("artifact", "text")


def source(name: str, form: str) -> str | bytes:
    """The export as jax ships it (portable artifact bytes) or as module text."""
    return jax_exports.serialized(name) if form == "artifact" else jax_exports.module_text(name)


def refine_params() -> Iterator[Any]:
    """One param per case and size choice; known pipeline gaps are strict xfails."""
    for name, case in CASES.items():
        marks = []
        if case.known_failure:
            marks.append(
                pytest.mark.xfail(strict=True, raises=shlo.ShloError, reason=case.known_failure)
            )
        for index, sizes in enumerate(case.sizes):
            yield pytest.param(name, sizes, marks=marks, id=f"{name}-{index}")


def main_signature(module: shlo.ir.Module) -> tuple[list[str], list[str]]:
    """@main's argument and result types, printed."""
    for op in module.body.operations:
        operation = op.operation
        if operation.name != "func.func":
            continue
        if shlo.ir.StringAttr(operation.attributes["sym_name"]).value != "main":
            continue
        function_type = shlo.ir.FunctionType(
            shlo.ir.TypeAttr(operation.attributes["function_type"]).value
        )
        return [str(t) for t in function_type.inputs], [str(t) for t in function_type.results]
    raise AssertionError("refined module has no @main")


def test_exports_have_the_jax_structure() -> None:
    """Every export exercises what the pipeline must remove."""
    assert len(CASES) >= 8
    for name in CASES:
        text = jax_exports.module_text(name)
        assert "func.func public @main(" in text, name
        assert "func.func private @_wrapped_jax_export_main(" in text, name
        assert "stablehlo.custom_call @shape_assertion(" in text, name
        # The dimension variables reach the wrapped function as i32 arguments.
        assert re.search(r"tensor<i32> \{jax\.global_constant = \"\w+\"\}", text), name
        assert re.search(r"tensor<[^>]*\?", text), name


@pytest.mark.parametrize("name", sorted(CASES))
def test_inputs_match_the_argument_types(name: str) -> None:
    case = CASES[name]
    for sizes in case.sizes:
        arrays = case.inputs(sizes)
        assert [(a.shape, a.dtype) for a in arrays] == case.arg_types(sizes)
        assert all(np.isfinite(a).all() for a in arrays)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("name", "sizes"), list(refine_params()))
def test_refines_to_a_static_program(name: str, sizes: dict[str, int], form: str) -> None:
    case = CASES[name]
    refined = shlo.refine(source(name, form), case.arg_types(sizes))
    text = str(refined)

    assert not re.findall(r"tensor<[^>]*\?[^>]*>", text)
    assert "shape_assertion" not in text
    assert "_wrapped_jax_export_main" not in text
    assert [op for op in DYNAMIC_OPS if op in text] == []

    arg_types, result_types = main_signature(refined)
    assert arg_types == [tensor_type_string(arg) for arg in case.arg_types(sizes)]
    expected = [tensor_type_string((r.shape, r.dtype)) for r in case.result_shapes(sizes)]
    assert result_types == expected


def test_refine_keeps_the_polymorphic_module() -> None:
    """Refining an ir.Module works on a copy; the export can be refined again."""
    case = CASES["several_symbols"]
    module = shlo.load_module(jax_exports.serialized(case.name), shlo.new_context())
    before = str(module)
    for sizes in case.sizes:
        refined = shlo.refine(module, case.arg_types(sizes))
        assert main_signature(refined)[0] == [tensor_type_string(a) for a in case.arg_types(sizes)]
    assert str(module) == before


def expect_jax_message(error: shlo.ShloError, *fragments: str) -> None:
    message = str(error)
    assert JAX_MISMATCH in message
    # Every {i} placeholder was replaced by the value jax asked for.
    assert not re.search(r"\{\d+\}", message), message
    for fragment in fragments:
        assert fragment in message, message
    assert any(JAX_MISMATCH in d.message for d in error.diagnostics)


def refine_fails_with_jax_message(
    name: str, shapes: list[tuple[int, ...]], fragments: list[str], form: str
) -> None:
    types = [(shape, dtype) for shape, (_, dtype) in zip(shapes, CASES[name].args)]
    with pytest.raises(shlo.ShloError) as info:
        shlo.refine(source(name, form), types)
    expect_jax_message(info.value, *fragments)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("name", "shapes", "fragments"),
    [
        # s = 0: the slices x[:, 1:] and x[:, 0] assume s >= 1.
        pytest.param(
            "slicing",
            [(2, 0)],
            [
                "Expected value >= 1 for dimension variable 's'",
                "'s' = 0 from specification 's' for dimension args[0].shape[1] (= 0)",
                "'b' = 2",
            ],
            id="slicing-s0",
        ),
        pytest.param(
            "batch",
            [(0, 16)],
            [
                "Expected value >= 1 for dimension variable 'b'",
                "'b' = 0 from specification 'b' for dimension args[0].shape[0] (= 0)",
            ],
            id="batch-b0",
        ),
    ],
)
def test_dimension_below_one_fails_with_jax_message(
    name: str, shapes: list[tuple[int, ...]], fragments: list[str], form: str
) -> None:
    refine_fails_with_jax_message(name, shapes, fragments, form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("name", "shapes", "fragments"),
    [
        # x: (b, n) = (3, 5) but w: (n, k) = (6, 7).
        pytest.param(
            "several_symbols",
            [(3, 5), (6, 7)],
            [
                "Found inconsistency between dimension size args[1].shape[0] (= 6) "
                "and the specification 'n' (= 5)",
                "'n' = 5 from specification 'n' for dimension args[0].shape[1] (= 5)",
            ],
            id="several_symbols-n",
        ),
        # q: s = 4 but k: s = 5.
        pytest.param(
            "attention",
            [(2, 4, 16), (2, 5, 16), (2, 4, 16)],
            [
                "Found inconsistency between dimension size args[1].shape[1] (= 5) "
                "and the specification 's' (= 4)",
            ],
            id="attention-s",
        ),
    ],
)
def test_inconsistent_symbol_fails_with_jax_message(
    name: str, shapes: list[tuple[int, ...]], fragments: list[str], form: str
) -> None:
    refine_fails_with_jax_message(name, shapes, fragments, form)
