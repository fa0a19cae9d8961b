"""shlo.analysis.indexing: the seed's examples verbatim, the simplifier, fusions, properties.

The seed is XLA's "Indexing analysis" document (shared/seeds/002_937b8eb184127498.txt).
Its HLO examples are written here in StableHLO; the expected maps are the
seed's, in XLA's textual form. Where the seed's text has a typo, the comment
says so and the test holds the correct map.

The property tests evaluate each map at every point of small domains and
compare with the indices numpy's implementation of the op touches: an
element of the input is changed and the changed outputs are recorded. Each
numpy implementation is first checked against StableHLO's reference
interpreter on the same inputs, so it is the op's definition.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import shlo
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from shlo._mlir_compat import ir
from shlo.analysis import (
    IndexingMap,
    fusion_output_to_input,
    input_to_output,
    output_to_input,
    parse_indexing_map,
)
from shlo.interpreter import interpret

CONTEXT = shlo.new_context()
PROPERTY = settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# Ops die with their module: keep every parsed module alive.
MODULES: list[ir.Module] = []


def parse(source: str) -> ir.Module:
    MODULES.append(ir.Module.parse(source, CONTEXT))
    return MODULES[-1]


def body_ops(module: ir.Module, function: int = 0) -> list[ir.Operation]:
    block = module.body.operations[function].regions[0].blocks[0]
    return [op.operation for op in block.operations][:-1]


def first_op(source: str, name: str) -> ir.Operation:
    return next(op for op in body_ops(parse(source)) if op.name == name)


def text(expected: str) -> str:
    return "\n".join(line.strip() for line in expected.strip().splitlines())


# ---------------------------------------------------------------------------
# The seed's unfused examples.

BROADCAST = """
func.func @main(%p0: tensor<20xf32>) -> tensor<10x20x30xf32> {
  %bc0 = stablehlo.broadcast_in_dim %p0, dims = [1] : (tensor<20xf32>) -> tensor<10x20x30xf32>
  return %bc0 : tensor<10x20x30xf32>
}
"""

ELEMENTWISE = """
func.func @main(%p0: tensor<10x20xf32>, %p1: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %add = stablehlo.add %p0, %p1 : tensor<10x20xf32>
  return %add : tensor<10x20xf32>
}
"""

TRANSPOSE = """
func.func @main(%p0: tensor<3x12288x6x128xf32>) -> tensor<3x6x128x12288xf32> {
  %transpose = stablehlo.transpose %p0, dims = [0, 2, 3, 1] : (tensor<3x12288x6x128xf32>) -> tensor<3x6x128x12288xf32>
  return %transpose : tensor<3x6x128x12288xf32>
}
"""

REVERSE = """
func.func @main(%p0: tensor<1x17x9x9xf32>) -> tensor<1x17x9x9xf32> {
  %reverse = stablehlo.reverse %p0, dims = [1, 2] : tensor<1x17x9x9xf32>
  return %reverse : tensor<1x17x9x9xf32>
}
"""

REDUCE = """
func.func @main(%p0: tensor<256x10xf32>, %p1: tensor<256x10xi32>) -> (tensor<10xf32>, tensor<10xi32>) {
  %p0_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p1_init = stablehlo.constant dense<0> : tensor<i32>
  %reduce:2 = stablehlo.reduce(%p0 init: %p0_init), (%p1 init: %p1_init) across dimensions = [0] : (tensor<256x10xf32>, tensor<256x10xi32>, tensor<f32>, tensor<i32>) -> (tensor<10xf32>, tensor<10xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
      %m = stablehlo.minimum %a, %b : tensor<f32>
      %n = stablehlo.minimum %c, %d : tensor<i32>
      stablehlo.return %m, %n : tensor<f32>, tensor<i32>
    }
  return %reduce#0, %reduce#1 : tensor<10xf32>, tensor<10xi32>
}
"""

SLICE = """
func.func @main(%p0: tensor<10x20x50xf32>) -> tensor<5x3x25xf32> {
  %slice = stablehlo.slice %p0 [5:10, 3:20:7, 0:50:2] : (tensor<10x20x50xf32>) -> tensor<5x3x25xf32>
  return %slice : tensor<5x3x25xf32>
}
"""

CONCATENATE = """
func.func @main(%p0: tensor<3x50xf32>, %p1: tensor<3x30xf32>) -> tensor<3x80xf32> {
  %concat = stablehlo.concatenate %p0, %p1, dim = 1 : (tensor<3x50xf32>, tensor<3x30xf32>) -> tensor<3x80xf32>
  return %concat : tensor<3x80xf32>
}
"""

DOT = """
func.func @main(%p0: tensor<4x128x256xf32>, %p1: tensor<4x256x64xf32>) -> tensor<4x128x64xf32> {
  %dot = stablehlo.dot_general %p0, %p1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x128x256xf32>, tensor<4x256x64xf32>) -> tensor<4x128x64xf32>
  return %dot : tensor<4x128x64xf32>
}
"""


def reshape_source(source: Sequence[int], target: Sequence[int]) -> str:
    a, b = tensor_type(source), tensor_type(target)
    return f"""
    func.func @main(%p0: {a}) -> {b} {{
      %reshape = stablehlo.reshape %p0 : ({a}) -> {b}
      return %reshape : {b}
    }}
    """


def tensor_type(shape: Sequence[int], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + element + ">"


SEED_OPS = {
    "elementwise": (ELEMENTWISE, "stablehlo.add"),
    "broadcast": (BROADCAST, "stablehlo.broadcast_in_dim"),
    "transpose": (TRANSPOSE, "stablehlo.transpose"),
    "reverse": (REVERSE, "stablehlo.reverse"),
    "reduce": (REDUCE, "stablehlo.reduce"),
    "slice": (SLICE, "stablehlo.slice"),
    "collapse": (reshape_source([4, 8], [32]), "stablehlo.reshape"),
    "expand": (reshape_source([32], [4, 8]), "stablehlo.reshape"),
    "general_reshape_1": (reshape_source([4, 8], [2, 4, 4]), "stablehlo.reshape"),
    "general_reshape_2": (reshape_source([4, 8, 12], [32, 3, 4]), "stablehlo.reshape"),
    "concatenate": (CONCATENATE, "stablehlo.concatenate"),
    "dot": (DOT, "stablehlo.dot_general"),
}

# (op, direction, operand, result, expected map)
SEED_MAPS = [
    ("elementwise", "o2i", 0, 0, "(d0, d1) -> (d0, d1)\ndomain:\nd0 in [0, 9]\nd1 in [0, 19]"),
    ("elementwise", "o2i", 1, 0, "(d0, d1) -> (d0, d1)\ndomain:\nd0 in [0, 9]\nd1 in [0, 19]"),
    ("elementwise", "i2o", 1, 0, "(d0, d1) -> (d0, d1)\ndomain:\nd0 in [0, 9]\nd1 in [0, 19]"),
    (
        "broadcast",
        "o2i",
        0,
        0,
        "(d0, d1, d2) -> (d1)\ndomain:\nd0 in [0, 9]\nd1 in [0, 19]\nd2 in [0, 29]",
    ),
    # The seed writes (d0) -> (s0, d1, s1); the input has one dim, d0.
    (
        "broadcast",
        "i2o",
        0,
        0,
        "(d0)[s0, s1] -> (s0, d0, s1)\ndomain:\nd0 in [0, 19]\ns0 in [0, 9]\ns1 in [0, 29]",
    ),
    (
        "transpose",
        "o2i",
        0,
        0,
        "(d0, d1, d2, d3) -> (d0, d3, d1, d2)\ndomain:\n"
        "d0 in [0, 2]\nd1 in [0, 5]\nd2 in [0, 127]\nd3 in [0, 12287]",
    ),
    (
        "transpose",
        "i2o",
        0,
        0,
        "(d0, d1, d2, d3) -> (d0, d2, d3, d1)\ndomain:\n"
        "d0 in [0, 2]\nd1 in [0, 12287]\nd2 in [0, 5]\nd3 in [0, 127]",
    ),
    (
        "reverse",
        "o2i",
        0,
        0,
        "(d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3)\ndomain:\n"
        "d0 in [0, 0]\nd1 in [0, 16]\nd2 in [0, 8]\nd3 in [0, 8]",
    ),
    (
        "reverse",
        "i2o",
        0,
        0,
        "(d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3)\ndomain:\n"
        "d0 in [0, 0]\nd1 in [0, 16]\nd2 in [0, 8]\nd3 in [0, 8]",
    ),
    # The seed's s0 in [0, 9] is the output's range; the reduced dim has 256 elements.
    *[
        ("reduce", "o2i", i, j, "(d0)[s0] -> (s0, d0)\ndomain:\nd0 in [0, 9]\ns0 in [0, 255]")
        for i in (0, 1)
        for j in (0, 1)
    ],
    *[("reduce", "o2i", i, j, "(d0) -> ()\ndomain:\nd0 in [0, 9]") for i in (2, 3) for j in (0, 1)],
    *[
        ("reduce", "i2o", i, j, "(d0, d1) -> (d1)\ndomain:\nd0 in [0, 255]\nd1 in [0, 9]")
        for i in (0, 1)
        for j in (0, 1)
    ],
    *[
        ("reduce", "i2o", i, j, "()[s0] -> (s0)\ndomain:\ns0 in [0, 9]")
        for i in (2, 3)
        for j in (0, 1)
    ],
    (
        "slice",
        "o2i",
        0,
        0,
        "(d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2)\ndomain:\n"
        "d0 in [0, 4]\nd1 in [0, 2]\nd2 in [0, 24]",
    ),
    # The seed gives (d0, d1 / 7, d2 / 2) on [5, 9] x [3, 19] x [0, 49] "with strides":
    # the offsets, the last element read and the stride constraints made exact.
    (
        "slice",
        "i2o",
        0,
        0,
        "(d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2)\ndomain:\n"
        "d0 in [5, 9]\nd1 in [3, 17]\nd2 in [0, 48]\n"
        "(d1 - 3) mod 7 in [0, 0]\nd2 mod 2 in [0, 0]",
    ),
    ("collapse", "o2i", 0, 0, "(d0) -> (d0 floordiv 8, d0 mod 8)\ndomain:\nd0 in [0, 31]"),
    ("collapse", "i2o", 0, 0, "(d0, d1) -> (d0 * 8 + d1)\ndomain:\nd0 in [0, 3]\nd1 in [0, 7]"),
    ("expand", "o2i", 0, 0, "(d0, d1) -> (d0 * 8 + d1)\ndomain:\nd0 in [0, 3]\nd1 in [0, 7]"),
    ("expand", "i2o", 0, 0, "(d0) -> (d0 floordiv 8, d0 mod 8)\ndomain:\nd0 in [0, 31]"),
    (
        "general_reshape_1",
        "o2i",
        0,
        0,
        "(d0, d1, d2) -> (d0 * 2 + (d1 * 4 + d2) floordiv 8, (d1 * 4 + d2) mod 8)\ndomain:\n"
        "d0 in [0, 1]\nd1 in [0, 3]\nd2 in [0, 3]",
    ),
    (
        "general_reshape_1",
        "i2o",
        0,
        0,
        "(d0, d1) -> ((d0 * 8 + d1) floordiv 16, ((d0 * 8 + d1) mod 16) floordiv 4, d1 mod 4)\n"
        "domain:\nd0 in [0, 3]\nd1 in [0, 7]",
    ),
    (
        "general_reshape_2",
        "o2i",
        0,
        0,
        "(d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2)\ndomain:\n"
        "d0 in [0, 31]\nd1 in [0, 2]\nd2 in [0, 3]",
    ),
    (
        "general_reshape_2",
        "i2o",
        0,
        0,
        "(d0, d1, d2) -> (d0 * 8 + d1, d2 floordiv 4, d2 mod 4)\ndomain:\n"
        "d0 in [0, 3]\nd1 in [0, 7]\nd2 in [0, 11]",
    ),
    ("concatenate", "o2i", 0, 0, "(d0, d1) -> (d0, d1)\ndomain:\nd0 in [0, 2]\nd1 in [0, 49]"),
    (
        "concatenate",
        "o2i",
        1,
        0,
        "(d0, d1) -> (d0, d1 - 50)\ndomain:\nd0 in [0, 2]\nd1 in [50, 79]",
    ),
    ("concatenate", "i2o", 0, 0, "(d0, d1) -> (d0, d1)\ndomain:\nd0 in [0, 2]\nd1 in [0, 49]"),
    (
        "concatenate",
        "i2o",
        1,
        0,
        "(d0, d1) -> (d0, d1 + 50)\ndomain:\nd0 in [0, 2]\nd1 in [0, 29]",
    ),
    (
        "dot",
        "o2i",
        0,
        0,
        "(d0, d1, d2)[s0] -> (d0, d1, s0)\ndomain:\n"
        "d0 in [0, 3]\nd1 in [0, 127]\nd2 in [0, 63]\ns0 in [0, 255]",
    ),
    (
        "dot",
        "o2i",
        1,
        0,
        "(d0, d1, d2)[s0] -> (d0, s0, d2)\ndomain:\n"
        "d0 in [0, 3]\nd1 in [0, 127]\nd2 in [0, 63]\ns0 in [0, 255]",
    ),
    (
        "dot",
        "i2o",
        0,
        0,
        "(d0, d1, d2)[s0] -> (d0, d1, s0)\ndomain:\n"
        "d0 in [0, 3]\nd1 in [0, 127]\nd2 in [0, 255]\ns0 in [0, 63]",
    ),
    # The seed writes (d0, s0, d1); the rhs's free dim is d2 (d1 is contracted).
    (
        "dot",
        "i2o",
        1,
        0,
        "(d0, d1, d2)[s0] -> (d0, s0, d2)\ndomain:\n"
        "d0 in [0, 3]\nd1 in [0, 255]\nd2 in [0, 63]\ns0 in [0, 127]",
    ),
]


@pytest.mark.parametrize(
    ("case", "direction", "operand", "result", "expected"),
    SEED_MAPS,
    ids=[f"{c}-{d}-{o}-{r}" for c, d, o, r, _ in SEED_MAPS],
)
def test_seed_op_maps(case: str, direction: str, operand: int, result: int, expected: str) -> None:
    source, name = SEED_OPS[case]
    op = first_op(source, name)
    compute = output_to_input if direction == "o2i" else input_to_output
    indexing = compute(op, operand, result)
    assert indexing is not None
    assert str(indexing) == expected
    # The textual form reads back to the same map, and the maps are already simplified.
    assert parse_indexing_map(str(indexing), CONTEXT) == indexing
    assert indexing.simplify() == indexing


def test_constant_and_iota_have_no_maps() -> None:
    source = """
    func.func @main() -> (tensor<4xf32>, tensor<4xi32>) {
      %c = stablehlo.constant dense<1.0> : tensor<4xf32>
      %i = stablehlo.iota dim = 0 : tensor<4xi32>
      return %c, %i : tensor<4xf32>, tensor<4xi32>
    }
    """
    for op in body_ops(parse(source)):
        assert output_to_input(op, 0) is None
        assert input_to_output(op, 0) is None


def test_opview_is_accepted_and_unknown_ops_raise() -> None:
    module = parse(BROADCAST)
    view = module.body.operations[0].regions[0].blocks[0].operations[0]
    assert isinstance(view, ir.OpView)
    assert str(output_to_input(view, 0).affine_map) == "(d0, d1, d2) -> (d1)"
    sort = first_op(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = "stablehlo.sort"(%x) ({
          ^bb0(%a: tensor<f32>, %b: tensor<f32>):
            %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
            stablehlo.return %c : tensor<i1>
          }) {dimension = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
          return %0 : tensor<4xf32>
        }
        """,
        "stablehlo.sort",
    )
    with pytest.raises(NotImplementedError, match=r"stablehlo\.sort"):
        output_to_input(sort, 0)


def test_dynamic_shapes_are_rejected() -> None:
    op = first_op(
        """
        func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
          %0 = stablehlo.negate %x : tensor<?xf32>
          return %0 : tensor<?xf32>
        }
        """,
        "stablehlo.negate",
    )
    with pytest.raises(ValueError, match="static shapes"):
        output_to_input(op, 0)


# ---------------------------------------------------------------------------
# The interface of IndexingMap.


def test_indexing_map_interface() -> None:
    op = first_op(CONCATENATE, "stablehlo.concatenate")
    indexing = output_to_input(op, 1)
    assert isinstance(indexing.affine_map, ir.AffineMap)
    assert indexing.affine_map.n_dims == 2 and indexing.affine_map.n_symbols == 0
    assert indexing.dim_ranges == [(0, 2), (50, 79)]
    assert indexing.symbol_ranges == []
    assert indexing.constraints == {}
    assert indexing.evaluate((1, 60)) == (1, 10)
    assert not indexing.is_known_empty()
    assert indexing == output_to_input(op, 1)
    assert indexing != output_to_input(op, 0)
    assert len({indexing, output_to_input(op, 1)}) == 1

    sliced = input_to_output(first_op(SLICE, "stablehlo.slice"), 0)
    (key,) = [k for k in sliced.constraints if str(k) == "(d1 - 3) mod 7"]
    assert isinstance(key, ir.AffineExpr)
    assert sliced.constraints[key] == (0, 0)
    assert sliced.evaluate((7, 10, 8)) == (2, 1, 4)
    assert sliced.contains((7, 10, 8)) and not sliced.contains((7, 11, 8))


def test_indexing_map_from_parts_and_text() -> None:
    with CONTEXT:
        indexing = IndexingMap("(d0)[s0] -> (d0 + s0)", [(0, 9)], [(0, 3)], {"d0 + s0": (0, 5)})
        assert str(indexing) == text(
            """
            (d0)[s0] -> (d0 + s0)
            domain:
            d0 in [0, 9]
            s0 in [0, 3]
            d0 + s0 in [0, 5]
            """
        )
        assert parse_indexing_map(str(indexing)) == indexing
        assert indexing.evaluate((2,), (3,)) == (5,)
        empty = IndexingMap("(d0) -> (d0)", [(0, 9)], (), {"d0 mod 4": (5, 7)})
        assert empty.is_known_empty()
        assert IndexingMap("(d0) -> (d0)", [(3, 2)]).is_known_empty()
        assert not IndexingMap("(d0) -> (d0)", [(0, 9)], (), {"d0 mod 4": (1, 1)}).is_known_empty()


def test_simplify_turns_single_variable_constraints_into_ranges() -> None:
    with CONTEXT:
        indexing = IndexingMap(
            "(d0, d1)[s0] -> (d0 floordiv 8, d1)",
            [(0, 99), (0, 9)],
            [(0, 4)],
            {"d0 * 2 - 10": (0, 5), "d1 + 50": (50, 79)},
        ).simplify()
    assert str(indexing) == text(
        """
        (d0, d1) -> (0, d1)
        domain:
        d0 in [5, 7]
        d1 in [0, 9]
        """
    )


# ---------------------------------------------------------------------------
# The simplifier: the seed's four rewrites, exactly.

SIMPLIFIER_EXAMPLES = [
    (
        "(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16)",
        [(0, 6), (0, 14)],
        "(d0, d1) -> (d0, d1)",
    ),
    (
        "(d0, d1, d2) -> ((d0 * 100 + d1 * 10 + d2) floordiv 100, "
        "((d0 * 100 + d1 * 10 + d2) mod 100) floordiv 10, d2 mod 10)",
        [(0, 9)] * 3,
        "(d0, d1, d2) -> (d0, d1, d2)",
    ),
    (
        "(d0, d1, d2) -> ((d0 * 16 + d1 * 4 + d2) floordiv 8, (d0 * 16 + d1 * 4 + d2) mod 8)",
        [(0, 9)] * 3,
        "(d0, d1, d2) -> (d0 * 2 + (d1 * 4 + d2) floordiv 8, (d1 * 4 + d2) mod 8)",
    ),
    # The seed's -(-11d0 - d1 + 109) / 11 + 9 negates the quotient: in MLIR's
    # syntax the parentheses must say so (-(x) floordiv 11 divides -(x)).
    (
        "(d0, d1) -> (-((d0 * -11 - d1 + 109) floordiv 11) + 9)",
        [(0, 9), (0, 10)],
        "(d0, d1) -> (d0)",
    ),
]


@pytest.mark.parametrize(("before", "ranges", "after"), SIMPLIFIER_EXAMPLES)
def test_simplifier_seed_examples(before: str, ranges: list, after: str) -> None:
    with CONTEXT:
        indexing = IndexingMap(before, ranges)
    simplified = indexing.simplify()
    assert str(simplified.affine_map) == after
    assert simplified.dim_ranges == ranges
    # Rewrites keep the value at every point of the domain.
    for dims, _ in indexing.points():
        assert simplified.evaluate(dims) == indexing.evaluate(dims)


def test_simplifier_needs_the_ranges() -> None:
    with CONTEXT:
        wide = IndexingMap("(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16)", [(0, 6), (0, 15)])
        narrow = IndexingMap("(d0) -> (d0 floordiv 8)", [(0, 7)])
    assert str(wide.simplify().affine_map) == "(d0, d1) -> (d0, d1)"
    with CONTEXT:
        wider = IndexingMap("(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16)", [(0, 6), (0, 16)])
    assert str(wider.simplify().affine_map) == "(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16)"
    assert str(narrow.simplify().affine_map) == "(d0) -> (0)"


@st.composite
def affine_texts(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(["d0", "d1", "d2", "s0"])) + draw(
            st.sampled_from(["", " * 3", " * -2", " + 7", " - 4"])
        )
    lhs = draw(affine_texts(depth - 1))
    kind = draw(st.sampled_from(["+", "-", "*", "floordiv", "mod", "ceildiv"]))
    if kind in ("+", "-"):
        return f"({lhs}) {kind} ({draw(affine_texts(depth - 1))})"
    return f"({lhs}) {kind} {draw(st.integers(1, 12))}"


@PROPERTY
@given(
    st.lists(affine_texts(), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 6)), min_size=4, max_size=4),
)
def test_simplify_preserves_values(results: list[str], bounds: list) -> None:
    ranges = [(lo, lo + extent) for lo, extent in bounds]
    with CONTEXT:
        indexing = IndexingMap(
            f"(d0, d1, d2)[s0] -> ({', '.join(results)})", ranges[:3], ranges[3:]
        )
    simplified = indexing.simplify()
    for dims, symbols in indexing.points():
        kept = symbols if simplified.num_symbols else ()
        assert simplified.evaluate(dims, kept) == indexing.evaluate(dims, symbols)


# ---------------------------------------------------------------------------
# Fusions.

FUSIONS = """
func.func @p0_plus_transpose(%p0: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> {
  %transpose_p0 = stablehlo.transpose %p0, dims = [1, 0] : (tensor<1000x1000xf32>) -> tensor<1000x1000xf32>
  %a0 = stablehlo.add %p0, %transpose_p0 : tensor<1000x1000xf32>
  return %a0 : tensor<1000x1000xf32>
}
func.func @dedup(%p0: tensor<20x10x50xf32>) -> tensor<10x50x20xf32> {
  %lhs_transpose_1 = stablehlo.transpose %p0, dims = [1, 0, 2] : (tensor<20x10x50xf32>) -> tensor<10x20x50xf32>
  %lhs_e = stablehlo.exponential %lhs_transpose_1 : tensor<10x20x50xf32>
  %lhs_transpose_2 = stablehlo.transpose %lhs_e, dims = [0, 2, 1] : (tensor<10x20x50xf32>) -> tensor<10x50x20xf32>
  %rhs_transpose_1 = stablehlo.transpose %p0, dims = [2, 1, 0] : (tensor<20x10x50xf32>) -> tensor<50x10x20xf32>
  %rhs_log = stablehlo.exponential %rhs_transpose_1 : tensor<50x10x20xf32>
  %rhs_transpose_2 = stablehlo.transpose %rhs_log, dims = [1, 0, 2] : (tensor<50x10x20xf32>) -> tensor<10x50x20xf32>
  %add = stablehlo.add %lhs_transpose_2, %rhs_transpose_2 : tensor<10x50x20xf32>
  return %add : tensor<10x50x20xf32>
}
func.func @softmax(%p0: tensor<2x65x125xf32>) -> tensor<2x65x125xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %max = stablehlo.reduce(%p0 init: %ninf) applies stablehlo.maximum across dimensions = [2] : (tensor<2x65x125xf32>, tensor<f32>) -> tensor<2x65xf32>
  %max_b = stablehlo.broadcast_in_dim %max, dims = [0, 1] : (tensor<2x65xf32>) -> tensor<2x65x125xf32>
  %shifted = stablehlo.subtract %p0, %max_b : tensor<2x65x125xf32>
  %exp = stablehlo.exponential %shifted : tensor<2x65x125xf32>
  %sum = stablehlo.reduce(%exp init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<2x65x125xf32>, tensor<f32>) -> tensor<2x65xf32>
  %sum_b = stablehlo.broadcast_in_dim %sum, dims = [0, 1] : (tensor<2x65xf32>) -> tensor<2x65x125xf32>
  %div = stablehlo.divide %exp, %sum_b : tensor<2x65x125xf32>
  return %div : tensor<2x65x125xf32>
}
func.func @reshape_chain(%p0: tensor<10x10x10xf32>) -> tensor<10x10x10xf32> {
  %reshape1 = stablehlo.reshape %p0 : (tensor<10x10x10xf32>) -> tensor<50x20xf32>
  %reshape2 = stablehlo.reshape %reshape1 : (tensor<50x20xf32>) -> tensor<10x10x10xf32>
  return %reshape2 : tensor<10x10x10xf32>
}
func.func @two_args(%p0: tensor<3x50xf32>, %p1: tensor<3x30xf32>, %p2: tensor<3x20xf32>) -> tensor<3x20xf32> {
  %concat = stablehlo.concatenate %p0, %p1, dim = 1 : (tensor<3x50xf32>, tensor<3x30xf32>) -> tensor<3x80xf32>
  %slice = stablehlo.slice %concat [0:3, 55:75] : (tensor<3x80xf32>) -> tensor<3x20xf32>
  return %slice : tensor<3x20xf32>
}
"""


def fusion(name: str) -> ir.Operation:
    module = parse(FUSIONS)
    for op in module.body.operations:
        if ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise KeyError(name)


def maps_text(maps: list[IndexingMap]) -> list[str]:
    return [str(m) for m in maps]


def test_fusion_one_input_two_maps() -> None:
    assert maps_text(fusion_output_to_input(fusion("p0_plus_transpose"), 0)) == [
        "(d0, d1) -> (d0, d1)\ndomain:\nd0 in [0, 999]\nd1 in [0, 999]",
        "(d0, d1) -> (d1, d0)\ndomain:\nd0 in [0, 999]\nd1 in [0, 999]",
    ]


def test_fusion_maps_that_only_look_different_are_one() -> None:
    assert maps_text(fusion_output_to_input(fusion("dedup"), 0)) == [
        "(d0, d1, d2) -> (d2, d0, d1)\ndomain:\nd0 in [0, 9]\nd1 in [0, 49]\nd2 in [0, 19]"
    ]


def test_fusion_softmax() -> None:
    assert maps_text(fusion_output_to_input(fusion("softmax"), 0)) == [
        "(d0, d1, d2) -> (d0, d1, d2)\ndomain:\nd0 in [0, 1]\nd1 in [0, 64]\nd2 in [0, 124]",
        "(d0, d1, d2)[s0] -> (d0, d1, s0)\ndomain:\n"
        "d0 in [0, 1]\nd1 in [0, 64]\nd2 in [0, 124]\ns0 in [0, 124]",
    ]


def test_fusion_reshape_chain_is_identity() -> None:
    assert maps_text(fusion_output_to_input(fusion("reshape_chain"), 0)) == [
        "(d0, d1, d2) -> (d0, d1, d2)\ndomain:\nd0 in [0, 9]\nd1 in [0, 9]\nd2 in [0, 9]"
    ]


def test_fusion_domains_compose() -> None:
    """The slice reads only the second concatenated operand: the first gets no map."""
    function = fusion("two_args")
    assert fusion_output_to_input(function, 0) == []
    assert maps_text(fusion_output_to_input(function, 1)) == [
        "(d0, d1) -> (d0, d1 + 5)\ndomain:\nd0 in [0, 2]\nd1 in [0, 19]"
    ]
    assert fusion_output_to_input(function, 2) == []


def test_compose_keeps_producer_domain_as_constraint() -> None:
    with CONTEXT:
        consumer = IndexingMap("(d0) -> (d0 * 3)", [(0, 9)])
        producer = IndexingMap("(d0) -> (d0 - 4)", [(4, 20)], (), {"d0 mod 2": (0, 0)})
    assert str(consumer.compose(producer)) == text(
        """
        (d0) -> (d0 * 3 - 4)
        domain:
        d0 in [2, 6]
        (d0 * 3) mod 2 in [0, 0]
        """
    )


# ---------------------------------------------------------------------------
# Pad, reduce_window and gather (the seed's "TBD"): derived maps.

PAD = """
func.func @main(%p0: tensor<4x4xf32>, %p1: tensor<f32>) -> tensor<12x16xf32> {
  %pad = stablehlo.pad %p0, %p1, low = [1, 4], high = [4, 8], interior = [1, 0] : (tensor<4x4xf32>, tensor<f32>) -> tensor<12x16xf32>
  return %pad : tensor<12x16xf32>
}
"""

REDUCE_WINDOW = """
func.func @main(%p0: tensor<1024x520xf32>) -> tensor<1024x3xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %rw = "stablehlo.reduce_window"(%p0, %c) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 1, 8>, window_strides = array<i64: 1, 256>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1024x520xf32>, tensor<f32>) -> tensor<1024x3xf32>
  return %rw : tensor<1024x3xf32>
}
"""

REDUCE_WINDOW_DILATED = """
func.func @main(%p0: tensor<7x4xf32>) -> tensor<3x6xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %rw = "stablehlo.reduce_window"(%p0, %c) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 1>, base_dilations = array<i64: 1, 2>, window_dilations = array<i64: 3, 1>, padding = dense<[[1, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<7x4xf32>, tensor<f32>) -> tensor<3x6xf32>
  return %rw : tensor<3x6xf32>
}
"""

GATHER = """
func.func @main(%operand: tensor<33x76x70xf32>, %indices: tensor<1806x2xi32>) -> tensor<1806x7x8x4xf32> {
  %gather = "stablehlo.gather"(%operand, %indices) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2, 3], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 7, 8, 4>} : (tensor<33x76x70xf32>, tensor<1806x2xi32>) -> tensor<1806x7x8x4xf32>
  return %gather : tensor<1806x7x8x4xf32>
}
"""

DERIVED_MAPS = [
    (
        PAD,
        "stablehlo.pad",
        "o2i",
        0,
        """
        (d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4)
        domain:
        d0 in [1, 7]
        d1 in [4, 7]
        (d0 - 1) mod 2 in [0, 0]
        """,
    ),
    (PAD, "stablehlo.pad", "o2i", 1, "(d0, d1) -> ()\ndomain:\nd0 in [0, 11]\nd1 in [0, 15]"),
    (
        PAD,
        "stablehlo.pad",
        "i2o",
        0,
        "(d0, d1) -> (d0 * 2 + 1, d1 + 4)\ndomain:\nd0 in [0, 3]\nd1 in [0, 3]",
    ),
    (
        PAD,
        "stablehlo.pad",
        "i2o",
        1,
        "()[s0, s1] -> (s0, s1)\ndomain:\ns0 in [0, 11]\ns1 in [0, 15]",
    ),
    (
        REDUCE_WINDOW,
        "stablehlo.reduce_window",
        "o2i",
        0,
        """
        (d0, d1)[s0] -> (d0, d1 * 256 + s0)
        domain:
        d0 in [0, 1023]
        d1 in [0, 2]
        s0 in [0, 7]
        """,
    ),
    (
        REDUCE_WINDOW,
        "stablehlo.reduce_window",
        "o2i",
        1,
        "(d0, d1) -> ()\ndomain:\nd0 in [0, 1023]\nd1 in [0, 2]",
    ),
    (
        REDUCE_WINDOW,
        "stablehlo.reduce_window",
        "i2o",
        0,
        """
        (d0, d1)[s0] -> (d0, (d1 - s0) floordiv 256)
        domain:
        d0 in [0, 1023]
        d1 in [0, 519]
        s0 in [0, 7]
        (d1 - s0) mod 256 in [0, 0]
        d1 - s0 in [0, 512]
        """,
    ),
    (
        REDUCE_WINDOW_DILATED,
        "stablehlo.reduce_window",
        "o2i",
        0,
        """
        (d0, d1)[s0, s1] -> (d0 * 2 + s0 * 3 - 1, (d1 + s1) floordiv 2)
        domain:
        d0 in [0, 2]
        d1 in [0, 5]
        s0 in [0, 1]
        s1 in [0, 1]
        (d1 + s1) mod 2 in [0, 0]
        d0 * 2 + s0 * 3 - 1 in [0, 6]
        """,
    ),
    (
        REDUCE_WINDOW_DILATED,
        "stablehlo.reduce_window",
        "i2o",
        0,
        """
        (d0, d1)[s0, s1] -> ((d0 - s0 * 3 + 1) floordiv 2, d1 * 2 - s1)
        domain:
        d0 in [0, 6]
        d1 in [0, 3]
        s0 in [0, 1]
        s1 in [0, 1]
        (d0 - s0 * 3 + 1) mod 2 in [0, 0]
        d0 - s0 * 3 + 1 in [0, 4]
        d1 * 2 - s1 in [0, 5]
        """,
    ),
    (
        GATHER,
        "stablehlo.gather",
        "o2i",
        0,
        """
        (d0, d1, d2, d3)[s0, s1] -> (d1 + s0, d2 + s1, d3)
        domain:
        d0 in [0, 1805]
        d1 in [0, 6]
        d2 in [0, 7]
        d3 in [0, 3]
        s0 in [0, 26]
        s1 in [0, 68]
        """,
    ),
    (
        GATHER,
        "stablehlo.gather",
        "o2i",
        1,
        """
        (d0, d1, d2, d3)[s0] -> (d0, s0)
        domain:
        d0 in [0, 1805]
        d1 in [0, 6]
        d2 in [0, 7]
        d3 in [0, 3]
        s0 in [0, 1]
        """,
    ),
]


@pytest.mark.parametrize(
    ("source", "name", "direction", "operand", "expected"),
    DERIVED_MAPS,
    ids=[f"{n[10:]}-{d}-{o}-{i}" for i, (_, n, d, o, _) in enumerate(DERIVED_MAPS)],
)
def test_derived_op_maps(
    source: str, name: str, direction: str, operand: int, expected: str
) -> None:
    op = first_op(source, name)
    compute = output_to_input if direction == "o2i" else input_to_output
    assert str(compute(op, operand)) == text(expected)


# ---------------------------------------------------------------------------
# Properties: every map against numpy's implementation of the op.


def map_relation(indexing: IndexingMap, forward: bool = False) -> set[tuple[tuple, tuple]]:
    """``{(output index, input index)}`` over the domain."""
    pairs = set()
    for dims, symbols in indexing.points():
        image = indexing.evaluate(dims, symbols)
        pairs.add((image, dims) if forward else (dims, image))
    return pairs


def numpy_relation(
    fn: Callable[[list[np.ndarray]], np.ndarray],
    arrays: list[np.ndarray],
    operand: int,
    marker: object = 2,
) -> set[tuple[tuple, tuple]]:
    """``{(output index, input index)}``: the outputs that change when that input changes."""
    base = np.asarray(fn(arrays))
    pairs = set()
    for index in np.ndindex(*arrays[operand].shape):
        changed = [np.array(a) for a in arrays]
        changed[operand][index] = marker
        out = np.asarray(fn(changed))
        differs = out != base
        for position in np.ndindex(*out.shape):
            if differs[position]:
                pairs.add((position, index))
    return pairs


def single_op_module(arguments: Sequence[str], op_text: str, result: str) -> str:
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arguments))
    return f"func.func @main({params}) -> {result} {{\n  %0 = {op_text}\n  return %0 : {result}\n}}"


def check_against_interpreter(source: str, fn: Callable, arrays: list[np.ndarray]) -> None:
    """numpy's implementation computes what StableHLO's reference interpreter computes."""
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-50, 50, a.shape).astype(a.dtype) for a in arrays]
    (want,) = interpret(source, "main", inputs)
    np.testing.assert_array_equal(np.asarray(fn(inputs)), want)


def check_op(
    source: str,
    fn: Callable,
    arrays: list[np.ndarray],
    operands: Sequence[int] | None = None,
    marker: object = 2,
    interpreter: bool = True,
) -> None:
    if interpreter:
        check_against_interpreter(source, fn, arrays)
    op = body_ops(parse(source))[0]
    for operand in operands if operands is not None else range(len(arrays)):
        want = numpy_relation(fn, arrays, operand, marker)
        o2i, i2o = output_to_input(op, operand), input_to_output(op, operand)
        assert map_relation(o2i) == want, operand
        assert map_relation(i2o, forward=True) == want, operand
        for indexing in (o2i, i2o):
            # Op maps come simplified, and their text reads back to them.
            assert indexing.simplify() == indexing
            assert parse_indexing_map(str(indexing), CONTEXT) == indexing


def shapes(min_rank: int = 1, max_rank: int = 3, max_size: int = 4):
    return st.lists(st.integers(1, max_size), min_size=min_rank, max_size=max_rank)


@PROPERTY
@given(shapes())
def test_property_elementwise(shape: list[int]) -> None:
    t = tensor_type(shape)
    scalar = tensor_type([])
    add = single_op_module([t, t], f"stablehlo.add %a0, %a1 : {t}", t)
    check_op(add, lambda a: a[0] + a[1], [np.ones(shape, np.float32)] * 2)
    clamp = single_op_module(
        [scalar, t, scalar], f"stablehlo.clamp %a0, %a1, %a2 : ({scalar}, {t}, {scalar}) -> {t}", t
    )
    arrays = [
        np.full((), 0.0, np.float32),
        np.ones(shape, np.float32),
        np.full((), 3.0, np.float32),
    ]
    clip = lambda a: np.clip(a[1], a[0], a[2])  # noqa: E731
    check_op(clamp, clip, arrays, operands=[0, 1])
    check_op(clamp, clip, arrays, operands=[2], marker=0, interpreter=False)


@PROPERTY
@given(st.data())
def test_property_broadcast_in_dim(data: st.DataObject) -> None:
    out_shape = data.draw(shapes(1, 3))
    rank = data.draw(st.integers(0, len(out_shape)))
    dims = data.draw(st.permutations(range(len(out_shape))))[:rank]
    in_shape = [data.draw(st.sampled_from([1, out_shape[d]])) for d in dims]
    source = single_op_module(
        [tensor_type(in_shape)],
        f"stablehlo.broadcast_in_dim %a0, dims = {list(dims)} : "
        f"({tensor_type(in_shape)}) -> {tensor_type(out_shape)}",
        tensor_type(out_shape),
    )

    def broadcast(a: list[np.ndarray]) -> np.ndarray:
        order = np.argsort(dims)
        shape = [1] * len(out_shape)
        for position, k in enumerate(order):
            shape[sorted(dims)[position]] = in_shape[k]
        return np.broadcast_to(np.transpose(a[0], order).reshape(shape), out_shape)

    check_op(source, broadcast, [np.ones(in_shape, np.float32)])


@PROPERTY
@given(st.data())
def test_property_transpose_and_reverse(data: st.DataObject) -> None:
    shape = data.draw(shapes())
    t = tensor_type(shape)
    permutation = data.draw(st.permutations(range(len(shape))))
    out = tensor_type([shape[p] for p in permutation])
    source = single_op_module(
        [t], f"stablehlo.transpose %a0, dims = {permutation} : ({t}) -> {out}", out
    )
    check_op(source, lambda a: np.transpose(a[0], permutation), [np.ones(shape, np.float32)])
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    source = single_op_module([t], f"stablehlo.reverse %a0, dims = {dims} : {t}", t)
    check_op(source, lambda a: np.flip(a[0], dims), [np.ones(shape, np.float32)])


@PROPERTY
@given(st.data())
def test_property_reduce(data: st.DataObject) -> None:
    shape = data.draw(shapes())
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    out_shape = [n for k, n in enumerate(shape) if k not in dims]
    t, o, s = tensor_type(shape), tensor_type(out_shape), tensor_type([])
    source = f"""
    func.func @main(%a0: {t}, %a1: {t}, %a2: {s}, %a3: {s}) -> {o} {{
      %0:2 = stablehlo.reduce(%a0 init: %a2), (%a1 init: %a3) across dimensions = {dims} : ({t}, {t}, {s}, {s}) -> ({o}, {o})
        reducer(%x: {s}, %y: {s}) (%u: {s}, %v: {s}) {{
          %p = stablehlo.add %x, %y : {s}
          %q = stablehlo.add %p, %u : {s}
          %r = stablehlo.add %q, %v : {s}
          %w = stablehlo.add %u, %v : {s}
          stablehlo.return %r, %w : {s}, {s}
        }}
      return %0#0 : {o}
    }}
    """
    arrays = [np.ones(shape, np.float32), np.ones(shape, np.float32)]
    arrays += [np.ones((), np.float32), np.ones((), np.float32)]
    op = body_ops(parse(source))[0]
    # Result 0 mixes both inputs (as a variadic reducer may): sum(a0 + a1) + inits.
    axes = tuple(dims)

    def result0(a: list[np.ndarray]) -> np.ndarray:
        return (a[0] + a[1]).sum(axis=axes) + a[2] + a[3]

    for operand in range(4):
        want = numpy_relation(result0, arrays, operand)
        for result in (0, 1):  # every result reads every input through the same map
            assert map_relation(output_to_input(op, operand, result)) == want
            assert map_relation(input_to_output(op, operand, result), forward=True) == want


@PROPERTY
@given(st.data())
def test_property_slice(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_size=7))
    starts, limits, strides = [], [], []
    for n in shape:
        start = data.draw(st.integers(0, n - 1))
        starts.append(start)
        limits.append(data.draw(st.integers(start + 1, n)))
        strides.append(data.draw(st.integers(1, 3)))
    out_shape = [-(-(lim - s) // st_) for s, lim, st_ in zip(starts, limits, strides, strict=True)]
    spec = ", ".join(
        f"{s}:{lim}:{st_}" for s, lim, st_ in zip(starts, limits, strides, strict=True)
    )
    t, o = tensor_type(shape), tensor_type(out_shape)
    source = single_op_module([t], f"stablehlo.slice %a0 [{spec}] : ({t}) -> {o}", o)
    index = tuple(slice(s, lim, st_) for s, lim, st_ in zip(starts, limits, strides, strict=True))
    check_op(source, lambda a: a[0][index], [np.ones(shape, np.float32)])


def factor_shape(data: st.DataObject, total: int) -> list[int]:
    """A random shape with ``total`` elements (and maybe unit dims)."""
    factors = []
    n = total
    p = 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    factors = data.draw(st.permutations(factors))
    shape: list[int] = []
    for factor in factors:
        if shape and data.draw(st.booleans()):
            shape[-1] *= factor
        else:
            shape.append(factor)
    if data.draw(st.booleans()):
        shape.insert(data.draw(st.integers(0, len(shape))), 1)
    return shape or [1]


@PROPERTY
@given(st.data())
def test_property_reshape(data: st.DataObject) -> None:
    total = data.draw(st.sampled_from([6, 8, 12, 16, 24, 36]))
    source_shape, target_shape = factor_shape(data, total), factor_shape(data, total)
    check_op(
        reshape_source(source_shape, target_shape),
        lambda a: a[0].reshape(target_shape),
        [np.ones(source_shape, np.float32)],
    )


@pytest.mark.parametrize(
    ("source_type", "target_type", "source_shape", "target_shape", "marker"),
    [
        ("ui32", "ui8", [3, 2], [3, 2, 4], 0x02020202),
        ("ui8", "ui32", [2, 3, 4], [2, 3], 2),
        ("ui16", "ui8", [5], [5, 2], 0x0202),
        ("f32", "i32", [2, 3], [2, 3], 2.0),
    ],
)
def test_property_bitcast_convert(
    source_type: str, target_type: str, source_shape: list, target_shape: list, marker: object
) -> None:
    s, t = tensor_type(source_shape, source_type), tensor_type(target_shape, target_type)
    source = single_op_module([s], f"stablehlo.bitcast_convert %a0 : ({s}) -> {t}", t)
    dtypes = {
        "ui32": np.uint32,
        "ui8": np.uint8,
        "ui16": np.uint16,
        "f32": np.float32,
        "i32": np.int32,
    }
    target_dtype = dtypes[target_type]
    array = np.ones(source_shape, dtypes[source_type])
    check_op(
        source, lambda a: a[0].view(target_dtype).reshape(target_shape), [array], marker=marker
    )


@PROPERTY
@given(st.data())
def test_property_concatenate(data: st.DataObject) -> None:
    shape = data.draw(shapes())
    axis = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    operand_shapes = [[*shape[:axis], n, *shape[axis + 1 :]] for n in sizes]
    out_shape = [*shape[:axis], sum(sizes), *shape[axis + 1 :]]
    types = [tensor_type(s) for s in operand_shapes]
    operands = ", ".join(f"%a{i}" for i in range(len(types)))
    source = single_op_module(
        types,
        f"stablehlo.concatenate {operands}, dim = {axis} : ({', '.join(types)}) -> {tensor_type(out_shape)}",
        tensor_type(out_shape),
    )
    arrays = [np.ones(s, np.float32) for s in operand_shapes]
    check_op(source, lambda a: np.concatenate(a, axis=axis), arrays)


@PROPERTY
@given(st.data())
def test_property_dot_general(data: st.DataObject) -> None:
    batch = data.draw(st.lists(st.integers(1, 2), max_size=1))
    contract = data.draw(st.lists(st.integers(1, 3), max_size=2))
    lhs_free = data.draw(st.lists(st.integers(1, 3), max_size=1))
    rhs_free = data.draw(st.lists(st.integers(1, 3), max_size=1))
    lhs_dims = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
    lhs_dims += [("l", i) for i in range(len(lhs_free))]
    rhs_dims = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
    rhs_dims += [("r", i) for i in range(len(rhs_free))]
    lhs_dims = data.draw(st.permutations(lhs_dims))
    rhs_dims = data.draw(st.permutations(rhs_dims))
    size = {"b": batch, "c": contract, "l": lhs_free, "r": rhs_free}
    lhs_shape = [size[k][i] for k, i in lhs_dims]
    rhs_shape = [size[k][i] for k, i in rhs_dims]
    out_shape = batch + lhs_free + rhs_free

    def positions(dims: list, kind: str) -> list[int]:
        return [dims.index((kind, i)) for i in range(len(size[kind]))]

    numbers = (
        f"batching_dims = {positions(lhs_dims, 'b')} x {positions(rhs_dims, 'b')}, "
        f"contracting_dims = {positions(lhs_dims, 'c')} x {positions(rhs_dims, 'c')}"
    )
    lt, rt, ot = tensor_type(lhs_shape), tensor_type(rhs_shape), tensor_type(out_shape)
    source = single_op_module(
        [lt, rt], f"stablehlo.dot_general %a0, %a1, {numbers} : ({lt}, {rt}) -> {ot}", ot
    )
    letters = {key: string.ascii_letters[n] for n, key in enumerate(lhs_dims + rhs_dims)}
    subscripts = (
        "".join(letters[k] for k in lhs_dims)
        + ","
        + "".join(letters[k] for k in rhs_dims)
        + "->"
        + "".join(letters[("b", i)] for i in range(len(batch)))
        + "".join(letters[("l", i)] for i in range(len(lhs_free)))
        + "".join(letters[("r", i)] for i in range(len(rhs_free)))
    )
    arrays = [np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)]
    check_op(source, lambda a: np.einsum(subscripts, *a), arrays)


def numpy_pad(
    x: np.ndarray, value: np.ndarray, low: list, high: list, interior: list
) -> np.ndarray:
    shape = [n + (n - 1) * i if n else 0 for n, i in zip(x.shape, interior, strict=True)]
    spread = np.full(shape, value, x.dtype)
    spread[tuple(slice(None, None, i + 1) for i in interior)] = x
    padded = np.pad(
        spread,
        [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high, strict=True)],
        constant_values=value,
    )
    return padded[
        tuple(
            slice(-min(lo, 0), n + min(hi, 0))
            for lo, hi, n in zip(low, high, padded.shape, strict=True)
        )
    ]


@PROPERTY
@given(st.data())
def test_property_pad(data: st.DataObject) -> None:
    shape = data.draw(shapes(1, 2))
    low = [data.draw(st.integers(-2, 2)) for _ in shape]
    high = [data.draw(st.integers(-2, 2)) for _ in shape]
    interior = [data.draw(st.integers(0, 2)) for _ in shape]
    out_shape = [
        lo + hi + n + (n - 1) * i for n, lo, hi, i in zip(shape, low, high, interior, strict=True)
    ]
    assume(all(n >= 1 for n in out_shape))
    t, o, s = tensor_type(shape), tensor_type(out_shape), tensor_type([])
    source = single_op_module(
        [t, s],
        f"stablehlo.pad %a0, %a1, low = {low}, high = {high}, interior = {interior} : ({t}, {s}) -> {o}",
        o,
    )

    def pad(a: list[np.ndarray]) -> np.ndarray:
        return numpy_pad(a[0], a[1], low, high, interior)

    arrays = [np.ones(shape, np.float32), np.zeros((), np.float32)]
    check_op(source, pad, arrays, operands=[0])
    # The padding value: XLA's map reads it at every output element, which
    # holds every element numpy fills with it.
    op = body_ops(parse(source))[0]
    padded = numpy_relation(pad, arrays, 1)
    everywhere = {(o, ()) for o in np.ndindex(*out_shape)}
    assert padded <= map_relation(output_to_input(op, 1)) == everywhere
    assert map_relation(input_to_output(op, 1), forward=True) == everywhere


def numpy_reduce_window(
    x: np.ndarray, init: np.ndarray, sizes, strides, base, window, padding
) -> np.ndarray:
    rank = x.ndim
    # Base dilation and padding fill with the init value.
    dilated = np.full([(n - 1) * b + 1 for n, b in zip(x.shape, base, strict=True)], init, x.dtype)
    dilated[tuple(slice(None, None, b) for b in base)] = x
    padded = np.pad(dilated, padding, constant_values=init)
    span = [(w - 1) * d + 1 for w, d in zip(sizes, window, strict=True)]
    views = np.lib.stride_tricks.sliding_window_view(padded, span)
    views = views[tuple(slice(None, None, s) for s in strides)]
    views = views[(Ellipsis, *(slice(None, None, d) for d in window))]
    return views.sum(axis=tuple(range(rank, 2 * rank))) + init


@PROPERTY
@given(st.data())
def test_property_reduce_window(data: st.DataObject) -> None:
    shape = data.draw(shapes(1, 2, 5))
    rank = len(shape)
    sizes = [data.draw(st.integers(1, 3)) for _ in shape]
    strides = [data.draw(st.integers(1, 2)) for _ in shape]
    base = [data.draw(st.integers(1, 2)) for _ in shape]
    window = [data.draw(st.integers(1, 2)) for _ in shape]
    padding = [[data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))] for _ in shape]
    out_shape = []
    for k in range(rank):
        padded = (shape[k] - 1) * base[k] + 1 + sum(padding[k])
        span = (sizes[k] - 1) * window[k] + 1
        out_shape.append((padded - span) // strides[k] + 1)
    assume(all(n >= 1 for n in out_shape))
    t, o, s = tensor_type(shape), tensor_type(out_shape), tensor_type([])

    def array(values: list) -> str:
        return "array<i64: " + ", ".join(map(str, values)) + ">"

    source = f"""
    func.func @main(%a0: {t}, %a1: {s}) -> {o} {{
      %0 = "stablehlo.reduce_window"(%a0, %a1) ({{
      ^bb0(%x: {s}, %y: {s}):
        %r = stablehlo.add %x, %y : {s}
        stablehlo.return %r : {s}
      }}) {{window_dimensions = {array(sizes)}, window_strides = {array(strides)}, base_dilations = {array(base)}, window_dilations = {array(window)}, padding = dense<{padding}> : tensor<{rank}x2xi64>}} : ({t}, {s}) -> {o}
      return %0 : {o}
    }}
    """

    def reduce_window(a: list[np.ndarray]) -> np.ndarray:
        return numpy_reduce_window(a[0], a[1], sizes, strides, base, window, padding)

    check_op(source, reduce_window, [np.ones(shape, np.float32), np.zeros((), np.float32)])


def numpy_gather(operand: np.ndarray, indices: np.ndarray, numbers: dict, out_shape: list):
    """StableHLO's gather, element by element; also the start_indices positions each output reads."""
    offset_dims = numbers["offset_dims"]
    collapsed = numbers["collapsed_slice_dims"]
    operand_batching = numbers["operand_batching_dims"]
    indices_batching = numbers["start_indices_batching_dims"]
    start_map = numbers["start_index_map"]
    vector_dim = numbers["index_vector_dim"]
    sizes = numbers["slice_sizes"]
    batch_dims = [i for i in range(len(out_shape)) if i not in offset_dims]
    offset_operand = [
        k for k in range(operand.ndim) if k not in collapsed and k not in operand_batching
    ]
    out = np.empty(out_shape, operand.dtype)
    reads: dict[tuple, set] = {}
    starts: dict[tuple, tuple] = {}
    for o in np.ndindex(*out_shape):
        batch = [o[i] for i in batch_dims]
        positions = []
        for v in range(len(start_map)):
            position = list(batch)
            if vector_dim < indices.ndim:
                position.insert(vector_dim, v)
            positions.append(tuple(position))
        reads[o] = set(positions)
        index = [0] * operand.ndim
        clamped = []
        for j, k in enumerate(start_map):
            start = int(np.clip(indices[positions[j]], 0, operand.shape[k] - sizes[k]))
            clamped.append(start)
            index[k] += start
        starts[o] = tuple(clamped)
        for i, k in enumerate(operand_batching):
            d = indices_batching[i]
            index[k] += batch[d if d < vector_dim else d - 1]
        for m, k in enumerate(offset_operand):
            index[k] += o[offset_dims[m]]
        out[o] = operand[tuple(index)]
    return out, reads, starts


@st.composite
def gathers(draw: st.DrawFn) -> tuple:
    operand_shape = draw(shapes(1, 3, 4))
    rank = len(operand_shape)
    use_batching = rank > 1 and draw(st.booleans())
    operand_batching = [draw(st.integers(0, rank - 1))] if use_batching else []
    free = [k for k in range(rank) if k not in operand_batching]
    start_map = draw(st.permutations(free))[: draw(st.integers(1, len(free)))]
    sizes = [
        1 if k in operand_batching else draw(st.integers(1, operand_shape[k])) for k in range(rank)
    ]
    collapsed = sorted(k for k in free if sizes[k] == 1 and draw(st.booleans()))
    batch_shape = draw(st.lists(st.integers(1, 3), max_size=2))
    if operand_batching:
        batch_shape = batch_shape or [operand_shape[operand_batching[0]]]
        indices_batching_batch = draw(st.integers(0, len(batch_shape) - 1))
        batch_shape[indices_batching_batch] = operand_shape[operand_batching[0]]
    vector_dim = draw(st.integers(0, len(batch_shape)))
    indices_shape = list(batch_shape)
    indices_shape.insert(vector_dim, len(start_map))
    indices_batching = []
    if operand_batching:
        d = indices_batching_batch
        indices_batching = [d if d < vector_dim else d + 1]
    offset_operand = [k for k in range(rank) if k not in collapsed and k not in operand_batching]
    out_rank = len(batch_shape) + len(offset_operand)
    offset_dims = sorted(draw(st.permutations(range(out_rank)))[: len(offset_operand)])
    out_shape = [0] * out_rank
    batch_positions = [i for i in range(out_rank) if i not in offset_dims]
    for i, n in zip(batch_positions, batch_shape, strict=True):
        out_shape[i] = n
    for i, k in zip(offset_dims, offset_operand, strict=True):
        out_shape[i] = sizes[k]
    numbers = {
        "offset_dims": offset_dims,
        "collapsed_slice_dims": collapsed,
        "operand_batching_dims": operand_batching,
        "start_indices_batching_dims": indices_batching,
        "start_index_map": start_map,
        "index_vector_dim": vector_dim,
        "slice_sizes": sizes,
    }
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    high = max(operand_shape) + 2
    indices = rng.integers(-2, high, indices_shape).astype(np.int32)
    return operand_shape, indices, numbers, out_shape


@PROPERTY
@given(gathers())
def test_property_gather(case: tuple) -> None:
    operand_shape, indices, numbers, out_shape = case
    t, i, o = tensor_type(operand_shape), tensor_type(indices.shape, "i32"), tensor_type(out_shape)
    fields = ", ".join(
        f"{key} = {numbers[key]}"
        for key in (
            "offset_dims",
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_indices_batching_dims",
            "start_index_map",
        )
    )
    attrs = (
        f"dimension_numbers = #stablehlo.gather<{fields}, index_vector_dim = "
        f"{numbers['index_vector_dim']}>, slice_sizes = array<i64: "
        + ", ".join(map(str, numbers["slice_sizes"]))
        + ">"
    )
    source = single_op_module(
        [t, i], f'"stablehlo.gather"(%a0, %a1) {{{attrs}}} : ({t}, {i}) -> {o}', o
    )
    operand = np.arange(np.prod(operand_shape), dtype=np.float32).reshape(operand_shape)
    want, reads, starts = numpy_gather(operand, indices, numbers, out_shape)
    (got,) = interpret(source, "main", [operand, indices])
    np.testing.assert_array_equal(want, got)

    op = body_ops(parse(source))[0]
    to_operand = output_to_input(op, 0)
    to_indices = output_to_input(op, 1)
    touched = numpy_relation(
        lambda a: numpy_gather(a[0], indices, numbers, out_shape)[0],
        [np.ones(operand_shape, np.float32)],
        0,
    )
    # With the runtime symbols set to the clamped starts the map is exact (a
    # start that can only be 0 is no symbol: simplify substitutes it)...
    movable = [operand_shape[k] > numbers["slice_sizes"][k] for k in numbers["start_index_map"]]

    def runtime(o: tuple) -> tuple:
        return tuple(v for v, m in zip(starts[o], movable, strict=True) if m)

    exact = {(o, to_operand.evaluate(o, runtime(o))) for o in np.ndindex(*out_shape)}
    assert exact == touched
    # ...and over all their values it holds every element a start may select.
    assert touched <= map_relation(to_operand)
    assert touched <= map_relation(input_to_output(op, 0), forward=True)
    # The start indices: exactly the index vector of the output's batch element.
    want_reads = {(o, r) for o, positions in reads.items() for r in positions}
    assert map_relation(to_indices) == want_reads
    assert map_relation(input_to_output(op, 1), forward=True) == want_reads


@st.composite
def data_movement_chains(draw: st.DrawFn) -> tuple[list[int], list[str], list[Callable]]:
    """A chain of reshapes, transposes, reverses and slices: its ops' text and numpy steps."""
    shape = draw(st.sampled_from([[4, 6], [2, 3, 4], [12, 2], [24]]))
    first = list(shape)
    lines: list[str] = []
    steps: list[Callable] = []
    for n in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["reshape", "transpose", "reverse", "slice"]))
        source = tensor_type(shape)
        value = "%a0" if n == 0 else f"%v{n - 1}"
        if kind == "reshape":
            target = factor_shape_from(draw, int(np.prod(shape)))
            text = f"stablehlo.reshape {value} : ({source}) -> {tensor_type(target)}"
            steps.append(lambda x, t=tuple(target): x.reshape(t))
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            target = [shape[p] for p in perm]
            text = (
                f"stablehlo.transpose {value}, dims = {perm} : ({source}) -> {tensor_type(target)}"
            )
            steps.append(lambda x, p=tuple(perm): np.transpose(x, p))
        elif kind == "reverse":
            dims = sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
            target = list(shape)
            text = f"stablehlo.reverse {value}, dims = {dims} : {source}"
            steps.append(lambda x, d=tuple(dims): np.flip(x, d))
        else:
            starts = [draw(st.integers(0, max(0, m - 2))) for m in shape]
            strides = [draw(st.integers(1, 2)) for _ in shape]
            target = [-(-(m - s) // k) for m, s, k in zip(shape, starts, strides, strict=True)]
            spec = ", ".join(f"{s}:{m}:{k}" for s, m, k in zip(starts, shape, strides, strict=True))
            text = f"stablehlo.slice {value} [{spec}] : ({source}) -> {tensor_type(target)}"
            index = tuple(slice(s, None, k) for s, k in zip(starts, strides, strict=True))
            steps.append(lambda x, i=index: x[i])
        lines.append(f"  %v{n} = {text}")
        shape = target
    body = "\n".join(lines)
    result = tensor_type(shape)
    source = (
        f"func.func @main(%a0: {tensor_type(first)}) -> {result} {{\n{body}\n"
        f"  return %v{len(lines) - 1} : {result}\n}}"
    )
    return first, [source], steps


def factor_shape_from(draw: st.DrawFn, total: int) -> list[int]:
    divisors = [d for d in range(2, total + 1) if total % d == 0]
    shape: list[int] = []
    while total > 1:
        d = draw(st.sampled_from([d for d in divisors if total % d == 0]))
        shape.append(d)
        total //= d
    return shape or [1]


@PROPERTY
@given(data_movement_chains())
def test_property_fusion_of_data_movement_chains(chain: tuple) -> None:
    """Composed and simplified fusion maps of random chains match numpy's composed program."""
    shape, (source,), steps = chain
    module = parse(source)
    (indexing,) = fusion_output_to_input(module.body.operations[0], 0)
    encoded = np.arange(int(np.prod(shape))).reshape(shape)
    out = encoded
    for step in steps:
        out = step(out)
    want = {
        (o, tuple(int(v) for v in np.unravel_index(out[o], shape))) for o in np.ndindex(*out.shape)
    }
    assert map_relation(indexing) == want
