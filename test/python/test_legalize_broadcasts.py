"""shlo-legalize-broadcasts and shlo.broadcast_shapes: XLA's broadcasting semantics.

Numbers come from the CPU backend (shlo.compile); references are numpy and
upstream's chlo-legalize-to-stablehlo on the same programs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import shlo
from hypothesis import given, settings
from hypothesis import strategies as st
from shlo.broadcasting import BroadcastError

OURS = "builtin.module(shlo-legalize-broadcasts)"
UPSTREAM = "builtin.module(func.func(chlo-legalize-to-stablehlo))"


def run(text: str, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Compile for the CPU and run; always a list of results."""
    outputs = shlo.compile(text, isolate=False)(*arrays)
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def legalize(text: str, pipeline: str = OURS) -> str:
    module = shlo.load_module(text, shlo.new_context())
    shlo.run_pipeline(module, pipeline)
    return str(module)


def pass_error(text: str) -> str:
    with pytest.raises(shlo.ShloError) as caught:
        legalize(text)
    return caught.value.summary


def tensor(shape: tuple[int | None, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{'?' if s is None else s}x" for s in shape) + element + ">"


def numpy_reference(lhs: np.ndarray, rhs: np.ndarray, dims: tuple[int, ...] | None):
    """Both operands broadcast the XLA way, written independently of shlo.broadcasting."""
    if dims is not None and lhs.ndim != rhs.ndim:
        low, high = (lhs, rhs) if lhs.ndim < rhs.ndim else (rhs, lhs)
        shape = [1] * high.ndim
        for i, d in enumerate(dims):
            shape[d] = low.shape[i]
        low = low.reshape(shape)
        lhs, rhs = (low, high) if lhs.ndim < rhs.ndim else (high, low)
    return np.broadcast_arrays(lhs, rhs)


# -- the seed's examples -----------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    name: str
    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    dims: tuple[int, ...] | None
    result: tuple[int, ...]
    # The operands and result the seed prints, when it prints them.
    printed: tuple[list, list, list] | None = None


M23 = [[1, 2, 3], [4, 5, 6]]
Z33 = [[0, 0, 0]] * 3
# Every example of XLA's broadcasting document, in its order (M,N,P,Q = 2,3,4,5).
SEED = [
    Example(
        "matrix + vector, rows",
        (2, 3),
        (3,),
        (1,),
        (2, 3),
        (M23, [7, 8, 9], [[8, 10, 12], [11, 13, 15]]),
    ),
    Example("matrix + scalar", (2, 3), (), None, (2, 3), (M23, 7, [[8, 9, 10], [11, 12, 13]])),
    # The seed shows the broadcast vector alone: added to zeros here.
    Example(
        "3x3 + vector, dims (1)", (3, 3), (3,), (1,), (3, 3), (Z33, [7, 8, 9], [[7, 8, 9]] * 3)
    ),
    Example(
        "3x3 + vector, dims (0)",
        (3, 3),
        (3,),
        (0,),
        (3, 3),
        (Z33, [7, 8, 9], [[7, 7, 7], [8, 8, 8], [9, 9, 9]]),
    ),
    Example("cube + 3x4 matrix, (1,2)", (2, 3, 4), (3, 4), (1, 2), (2, 3, 4)),
    Example("MNPQ + T at dim 3", (2, 3, 4, 5), (5,), (3,), (2, 3, 4, 5)),
    Example("MNPQ + T at dim 2", (2, 3, 4, 5), (4,), (2,), (2, 3, 4, 5)),
    Example("MNPQ + T at dim 1", (2, 3, 4, 5), (3,), (1,), (2, 3, 4, 5)),
    Example("MNPQ + T at dim 0", (2, 3, 4, 5), (2,), (0,), (2, 3, 4, 5)),
    Example("MNPQ + TxV at (2,3)", (2, 3, 4, 5), (4, 5), (2, 3), (2, 3, 4, 5)),
    Example("MNPQ + TxV at (1,2)", (2, 3, 4, 5), (3, 4), (1, 2), (2, 3, 4, 5)),
    Example("MNPQ + TxV at (0,3)", (2, 3, 4, 5), (2, 5), (0, 3), (2, 3, 4, 5)),
    Example("(2,1) and (2,3)", (2, 1), (2, 3), None, (2, 3)),
    Example("(1,2,5) and (7,2,5)", (1, 2, 5), (7, 2, 5), None, (7, 2, 5)),
    Example("(7,2,5) and (7,1,5)", (7, 2, 5), (7, 1, 5), None, (7, 2, 5)),
    Example("outer (2,1) and (1,3)", (2, 1), (1, 3), None, (2, 3)),
    Example(
        "vector 4 + 1x2, (0)",
        (4,),
        (1, 2),
        (0,),
        (4, 2),
        ([1, 2, 3, 4], [[5, 6]], [[6, 7], [7, 8], [8, 9], [9, 10]]),
    ),
    Example("1x2 with (1,2) + 4x3x1", (1, 2), (4, 3, 1), (1, 2), (4, 3, 2)),
]

# The seed's illegal cases, with the message both the helper and the pass give.
SEED_ERRORS = [
    (
        (2, 3, 4, 5),
        (4,),
        (3,),
        "cannot broadcast (2,3,4,5) and (4) with broadcast_dimensions (3): "
        "sizes 5 (lhs dimension 3) and 4 (rhs dimension 0) must be equal or 1",
    ),
    (
        (2, 3, 4, 5),
        (4, 3),
        (2, 1),
        "cannot broadcast (2,3,4,5) and (4,3) with broadcast_dimensions (2,1): "
        "broadcast_dimensions must be strictly increasing, "
        "but rhs dimension 1 maps to 1 after dimension 0 maps to 2",
    ),
    (
        (2, 3, 4, 5),
        (3, 5),
        (2, 3),
        "cannot broadcast (2,3,4,5) and (3,5) with broadcast_dimensions (2,3): "
        "sizes 4 (lhs dimension 2) and 3 (rhs dimension 0) must be equal or 1",
    ),
    (
        (7, 2, 5),
        (7, 2, 6),
        None,
        "cannot broadcast (7,2,5) and (7,2,6): "
        "sizes 5 (lhs dimension 2) and 6 (rhs dimension 2) must be equal or 1",
    ),
]


@pytest.mark.parametrize("example", SEED, ids=lambda e: e.name)
def test_broadcast_shapes_seed_examples(example: Example) -> None:
    assert shlo.broadcast_shapes(example.lhs, example.rhs, example.dims) == example.result
    # Broadcasting is symmetric in its operands.
    assert shlo.broadcast_shapes(example.rhs, example.lhs, example.dims) == example.result


def test_broadcast_shapes_unknown_sizes() -> None:
    assert shlo.broadcast_shapes((None, 3), (1,)) == (None, 3)
    assert shlo.broadcast_shapes((None, 3), (4, 1)) == (4, 3)
    assert shlo.broadcast_shapes((None,), (None, 1), (0,)) == (None, 1)
    assert shlo.broadcast_shapes((None,), (None, 1)) == (None, None)
    assert shlo.broadcast_shapes((-1, 1), (1, 5)) == (None, 5)


@pytest.mark.parametrize("lhs, rhs, dims, message", SEED_ERRORS)
def test_errors_are_the_pass_errors(lhs, rhs, dims, message) -> None:
    with pytest.raises(BroadcastError) as caught:
        shlo.broadcast_shapes(lhs, rhs, dims)
    assert str(caught.value) == message
    attribute = (
        ""
        if dims is None
        else f" {{broadcast_dimensions = array<i64: {', '.join(map(str, dims))}>}}"
    )
    result = tensor(lhs)
    text = (
        f"func.func @main(%a: {tensor(lhs)}, %b: {tensor(rhs)}) -> {result} {{\n"
        f"  %0 = chlo.broadcast_add %a, %b{attribute} : ({tensor(lhs)}, {tensor(rhs)}) -> {result}\n"
        f"  return %0 : {result}\n}}"
    )
    assert pass_error(text) == message


def test_error_names_the_location() -> None:
    text = (
        "func.func @main(%a: tensor<7x2x5xf32>, %b: tensor<7x2x6xf32>) -> tensor<7x2x6xf32> {\n"
        "  %0 = chlo.broadcast_add %a, %b : (tensor<7x2x5xf32>, tensor<7x2x6xf32>) -> tensor<7x2x6xf32>\n"
        "  return %0 : tensor<7x2x6xf32>\n}"
    )
    with pytest.raises(shlo.ShloError) as caught:
        legalize(text)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.line, diagnostic.column) == (2, 8)


def _numpy_style(example: Example) -> bool:
    """Whether upstream accepts the example: no dims, or numpy's trailing alignment."""
    low, high = sorted((len(example.lhs), len(example.rhs)))
    return example.dims is None or example.dims == tuple(range(high - low, high))


def _seed_module(examples: list[Example] = SEED) -> tuple[str, list[np.ndarray]]:
    args: list[str] = []
    lines: list[str] = []
    results: list[str] = []
    arrays: list[np.ndarray] = []
    for n, example in enumerate(examples):
        args += [f"%l{n}: {tensor(example.lhs)}", f"%r{n}: {tensor(example.rhs)}"]
        for k, shape in enumerate((example.lhs, example.rhs)):
            if example.printed:
                arrays.append(np.array(example.printed[k], np.float32))
            else:
                size = int(np.prod(shape))
                arrays.append(np.arange(1, 1 + size, dtype=np.float32).reshape(shape))
        attribute = (
            ""
            if example.dims is None
            else f" {{broadcast_dimensions = array<i64: {', '.join(map(str, example.dims))}>}}"
        )
        out = tensor(example.result)
        lines.append(
            f"  %{n} = chlo.broadcast_add %l{n}, %r{n}{attribute} : "
            f"({tensor(example.lhs)}, {tensor(example.rhs)}) -> {out}"
        )
        results.append(out)
    text = (
        f"func.func @main({', '.join(args)}) -> ({', '.join(results)}) {{\n"
        + "\n".join(lines)
        + f"\n  return {', '.join(f'%{n}' for n in range(len(examples)))} : {', '.join(results)}\n}}"
    )
    return text, arrays


def test_seed_examples_agree_with_numpy_on_the_cpu() -> None:
    text, arrays = _seed_module()
    legalized = legalize(text)
    assert "chlo." not in legalized
    outputs = shlo.compile(legalized, isolate=False)(*arrays)
    for n, (example, output) in enumerate(zip(SEED, outputs)):
        lhs, rhs = numpy_reference(arrays[2 * n], arrays[2 * n + 1], example.dims)
        np.testing.assert_array_equal(output, lhs + rhs, err_msg=example.name)
    for example, output in zip(SEED, outputs):
        if example.printed:
            np.testing.assert_array_equal(output, example.printed[2], err_msg=example.name)


# -- random programs against upstream and numpy --------------------------------------------

FLOAT_OPS = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "atan2",
    "power",
    "remainder",
]
INT_OPS = ["and", "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]


@dataclass(frozen=True)
class RandomOp:
    kind: str  # a chlo.broadcast_<kind> name
    shapes: tuple[tuple[int, ...], ...]
    dims: tuple[int, ...] | None
    result: tuple[int, ...]
    direction: str = "EQ"


@st.composite
def random_ops(draw: st.DrawFn, numpy_dims: bool) -> RandomOp:
    # Each family equally likely, then an op of the family.
    family = draw(st.sampled_from([FLOAT_OPS, INT_OPS, ["compare"], ["select"], ["complex"]]))
    kind = draw(st.sampled_from(family))
    result = tuple(draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, 4))))
    operands = 3 if kind == "select" else 2

    def operand() -> tuple[int, ...]:
        rank = draw(st.integers(0, len(result)))
        return tuple(1 if draw(st.booleans()) else size for size in result[len(result) - rank :])

    shapes = [operand() for _ in range(operands)]
    # Some operand has the full rank so that the result's rank is reached.
    shapes[draw(st.integers(0, operands - 1))] = tuple(
        size if draw(st.integers(0, 3)) else 1 for size in result
    )
    dims = None
    if kind != "select" and len(shapes[0]) != len(shapes[1]):
        low, high = sorted((len(shapes[0]), len(shapes[1])))
        if numpy_dims:
            if draw(st.booleans()):
                dims = tuple(range(high - low, high))
        else:
            # Any strictly increasing tuple: the low-rank operand is re-drawn to fit.
            dims = tuple(sorted(draw(st.permutations(range(high)))[:low]))
            small = 0 if len(shapes[0]) < len(shapes[1]) else 1
            big = shapes[1 - small]
            shapes[small] = tuple(1 if draw(st.booleans()) else big[d] for d in dims)
    rank = len(result)
    expanded = [_expanded(shape, rank, None if len(shape) == rank else dims) for shape in shapes]
    final = tuple(max(sizes) for sizes in zip(*expanded))
    if dims is None:
        assert final == np.broadcast_shapes(*shapes)
    return RandomOp(kind, tuple(shapes), dims, final, draw(st.sampled_from(DIRECTIONS)))


def _expanded(shape: tuple[int, ...], rank: int, dims: tuple[int, ...] | None) -> list[int]:
    mapping = dims if dims is not None else tuple(range(rank - len(shape), rank))
    full = [1] * rank
    for i, d in enumerate(mapping):
        full[d] = shape[i]
    return full


def _element(op: RandomOp, k: int) -> str:
    if op.kind == "select" and k == 0:
        return "i1"
    return "i32" if op.kind in INT_OPS else "f32"


def _program(
    ops: list[RandomOp], dynamic_seed: int | None = None
) -> tuple[str, list[tuple[tuple[int, ...], str]]]:
    """A @main applying each op to its own arguments.

    With ``dynamic_seed``, a random subset of the argument sizes is written as
    ``?`` (and the results of the ops they feed as all ``?``); inputs keep the
    static shapes.
    """
    rng = np.random.default_rng(dynamic_seed)
    args, lines, results, inputs = [], [], [], []
    for n, op in enumerate(ops):
        names, types = [], []
        for k, shape in enumerate(op.shapes):
            element = _element(op, k)
            declared = shape
            if dynamic_seed is not None:
                declared = tuple(None if rng.random() < 0.4 else size for size in shape)
            args.append(f"%a{n}_{k}: {tensor(declared, element)}")
            names.append(f"%a{n}_{k}")
            types.append(tensor(declared, element))
            inputs.append((shape, element))
        element = {"compare": "i1", "complex": "complex<f32>"}.get(op.kind, _element(op, 1))
        dynamic = any("?" in declared for declared in types)
        out = tensor(tuple(None for _ in op.result) if dynamic else op.result, element)
        attributes = []
        if op.dims is not None:
            listed = ", ".join(map(str, op.dims))
            attributes.append(f"broadcast_dimensions = array<i64{': ' if op.dims else ''}{listed}>")
        if op.kind == "compare":
            attributes.append(f"comparison_direction = #chlo<comparison_direction {op.direction}>")
        attribute = f" {{{', '.join(attributes)}}}" if attributes else ""
        lines.append(
            f"  %{n} = chlo.broadcast_{op.kind} {', '.join(names)}{attribute} : "
            f"({', '.join(types)}) -> {out}"
        )
        results.append(out)
    text = (
        f"func.func @main({', '.join(args)}) -> ({', '.join(results)}) {{\n"
        + "\n".join(lines)
        + f"\n  return {', '.join(f'%{n}' for n in range(len(ops)))} : {', '.join(results)}\n}}"
    )
    return text, inputs


def _inputs(specs: list[tuple[tuple[int, ...], str]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, element in specs:
        if element == "i1":
            arrays.append(rng.random(shape) < 0.5)
        elif element == "i32":
            arrays.append(rng.integers(-40, 40, shape).astype(np.int32))
        else:
            # Small integers make equal values (and exact powers) likely.
            arrays.append((rng.integers(-6, 7, shape) / 2).astype(np.float32))
    return arrays


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.lists(random_ops(numpy_dims=True), min_size=1, max_size=4),
    st.integers(0, 2**16),
    st.none() | st.integers(0, 2**16),
)
def test_agrees_with_upstream_on_random_programs(
    ops: list[RandomOp], seed: int, dynamic_seed: int | None
) -> None:
    """Ours, on static or partly dynamic types, against upstream on the static program.

    Upstream's dynamic output (shape dialect) does not refine, so upstream
    always gets the static types; ours is compiled from the dynamic program,
    whose shape computations and run-time checks meet the real shapes.
    """
    static, specs = _program(ops)
    text = static if dynamic_seed is None else _program(ops, dynamic_seed)[0]
    arrays = _inputs(specs, seed)
    ours = run(legalize(text), arrays)
    upstream = run(legalize(static, UPSTREAM), arrays)
    for op, a, b in zip(ops, ours, upstream):
        assert a.shape == op.result
        np.testing.assert_array_equal(a, b, err_msg=str(op))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(random_ops(numpy_dims=False), min_size=1, max_size=4), st.integers(0, 2**16))
def test_any_broadcast_dimensions_agree_with_numpy(ops: list[RandomOp], seed: int) -> None:
    # Upstream rejects broadcast_dimensions other than numpy's: numpy is the reference.
    ops = [op for op in ops if op.kind in ("add", "multiply", "maximum", "xor", "compare")] or [
        RandomOp("add", ((2, 3), (2,)), (0,), (2, 3))
    ]
    text, specs = _program(ops)
    arrays = _inputs(specs, seed)
    outputs = run(legalize(text), arrays)
    reference = {
        "add": np.add,
        "multiply": np.multiply,
        "maximum": np.maximum,
        "xor": np.bitwise_xor,
        "compare": np.equal,
    }
    position = 0
    for op, output in zip(ops, outputs):
        lhs, rhs = numpy_reference(arrays[position], arrays[position + 1], op.dims)
        position += 2
        function = reference[op.kind] if op.kind != "compare" else _COMPARE[op.direction]
        np.testing.assert_array_equal(output, function(lhs, rhs), err_msg=str(op))


_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def test_expanded_ops_agree_with_upstream() -> None:
    """next_after, polygamma and zeta: broadcast here, expanded as upstream does."""
    text = """
    func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %n: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = chlo.broadcast_next_after %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = chlo.broadcast_polygamma %n, %a : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %2 = chlo.broadcast_zeta %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
    }"""
    ours = legalize(text)
    assert "chlo." not in ours
    a = np.array([[1.5, 2.0, 3.25], [4.0, 5.5, 6.0]], np.float32)
    b = np.array([1.0, 2.5, 0.5], np.float32)
    n = np.array([[0.0, 1.0, 2.0]], np.float32)
    mine = shlo.compile(ours, isolate=False)(a, b, n)
    upstream = shlo.compile(legalize(text, UPSTREAM), isolate=False)(a, b, n)
    for x, y in zip(mine, upstream):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(mine[0], np.nextafter(a, b))
    # With a dynamic dimension, upstream's expansion would need the shape
    # dialect; ours stays in StableHLO and refines.
    dynamic = legalize(text.replace("tensor<2x3xf32>", "tensor<?x3xf32>"))
    assert "shape." not in dynamic and "chlo." not in dynamic
    for x, y in zip(run(dynamic, [a, b, n]), mine):
        np.testing.assert_array_equal(x, y)


# -- op counts -------------------------------------------------------------------------------


def count_ops(text: str) -> int:
    """Ops inside functions (nested ones included), without the functions and returns."""
    module = shlo.load_module(text, shlo.new_context())
    names: list[str] = []
    module.operation.walk(lambda op: names.append(op.name) or shlo.ir.WalkResult.ADVANCE)
    return sum(name not in ("builtin.module", "func.func", "func.return") for name in names)


def test_never_more_ops_than_upstream_on_static_programs() -> None:
    # Upstream only takes the examples whose broadcast_dimensions are numpy's.
    text, _ = _seed_module([example for example in SEED if _numpy_style(example)])
    ours, upstream = count_ops(legalize(text)), count_ops(legalize(text, UPSTREAM))
    assert ours <= upstream
    # Selects: upstream wraps them in shape ops even for static shapes.
    select = """
    func.func @main(%p: tensor<i1>, %q: tensor<2x1xi1>, %a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = chlo.broadcast_select %p, %a, %b : (tensor<i1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = chlo.broadcast_select %q, %a, %b : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    }"""
    ours_select = legalize(select)
    assert count_ops(ours_select) < count_ops(legalize(select, UPSTREAM))
    assert "shape." not in ours_select


# -- dynamic shapes ---------------------------------------------------------------------------


def _dynamic_program(a: int | None, b: int | None, v: int | None) -> str:
    """The add and the InDim multiply below, with rows ``None`` for unknown."""

    def rows(size: int | None) -> str:
        return "?" if size is None else str(size)

    def result(x: int | None, y: int | None) -> str:
        if x is None or y is None:
            return "?"
        return str(x * y if 1 in (x, y) else x)

    ta, tb, tv = f"tensor<{rows(a)}x3xf32>", f"tensor<{rows(b)}x1xf32>", f"tensor<{rows(v)}xf32>"
    r0, r1 = f"tensor<{result(a, b)}x3xf32>", f"tensor<{result(a, v)}x3xf32>"
    return f"""
func.func @main(%a: {ta}, %b: {tb}, %v: {tv}) -> ({r0}, {r1}) {{
  %0 = chlo.broadcast_add %a, %b : ({ta}, {tb}) -> {r0}
  %1 = chlo.broadcast_multiply %a, %v {{broadcast_dimensions = array<i64: 0>}} : ({ta}, {tv}) -> {r1}
  return %0, %1 : {r0}, {r1}
}}
"""


DYNAMIC = _dynamic_program(None, None, None)


def _dynamic_reference(
    a: np.ndarray, b: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    return a + b, a * v[:, None]


def test_dynamic_shapes_compute_sizes_in_stablehlo() -> None:
    legalized = legalize(DYNAMIC)
    assert "chlo." not in legalized and "shape." not in legalized
    assert "stablehlo.get_dimension_size" in legalized
    assert "known_expanding_dimensions = array<i64: 1>" in legalized
    assert "known_nonexpanding_dimensions = array<i64: 1>" in legalized
    assert legalized.count("stablehlo.dynamic_broadcast_in_dim") == 4
    assert legalized.count("@shape_assertion") == 2


@pytest.mark.parametrize(
    "rows_a, rows_b, rows_v", [(4, 4, 4), (4, 1, 4), (1, 5, 1), (0, 1, 0), (1, 1, 1)]
)
def test_dynamic_refines_to_static(rows_a: int, rows_b: int, rows_v: int) -> None:
    legalized = legalize(DYNAMIC)
    arrays = [
        np.arange(rows_a * 3, dtype=np.float32).reshape(rows_a, 3),
        np.arange(rows_b, dtype=np.float32).reshape(rows_b, 1) * 10,
        np.arange(rows_v, dtype=np.float32) + 2,
    ]
    refined = str(shlo.refine(legalized, arrays))
    assert "?" not in refined
    for name in ("dynamic_broadcast_in_dim", "get_dimension_size", "shape_assertion"):
        assert name not in refined
    # As small as legalizing the program written with these static shapes.
    static = _dynamic_program(rows_a, rows_b, rows_v)
    assert count_ops(refined) <= count_ops(legalize(static))
    expected = _dynamic_reference(*arrays)
    for compiled in (refined, legalized):
        outputs = shlo.compile(compiled, isolate=False)(*arrays)
        for output, reference in zip(outputs, expected):
            np.testing.assert_array_equal(output, reference)


def test_dynamic_incompatible_shapes_fail_at_run_time() -> None:
    exe = shlo.compile(legalize(DYNAMIC), isolate=False)
    a, b, v = np.ones((2, 3), np.float32), np.ones((5, 1), np.float32), np.ones(2, np.float32)
    with pytest.raises(shlo.ShloError) as caught:
        exe(a, b, v)
    assert caught.value.summary == (
        "cannot broadcast (?,3) and (?,1): sizes 2 (lhs dimension 0) and 5 (rhs dimension 0) "
        "must be equal or 1"
    )
    with pytest.raises(
        shlo.ShloError, match=r"sizes 2 \(lhs dimension 0\) and 3 \(rhs dimension 0\)"
    ):
        exe(a, np.ones((2, 1), np.float32), np.ones(3, np.float32))


def test_docstring_examples() -> None:
    import doctest

    import shlo.broadcasting

    assert doctest.testmod(shlo.broadcasting).failed == 0


def test_pipeline_with_remove_dynamism() -> None:
    """The pass, then shlo-remove-dynamism{types=...}, in one shlo-opt pipeline."""
    types = "tensor<4x3xf32>,tensor<1x1xf32>,tensor<4xf32>"
    static = legalize(
        DYNAMIC, f"builtin.module(shlo-legalize-broadcasts,shlo-remove-dynamism{{types={types}}})"
    )
    assert count_ops(static) == count_ops(legalize(_dynamic_program(4, 1, 4)))
    assert "tensor<4x3xf32>" in static and "?" not in static
    bad = "tensor<4x3xf32>,tensor<5x1xf32>,tensor<4xf32>"
    with pytest.raises(shlo.ShloError) as caught:
        legalize(
            DYNAMIC, f"builtin.module(shlo-legalize-broadcasts,shlo-remove-dynamism{{types={bad}}})"
        )
    (diagnostic,) = [d for d in caught.value.diagnostics if d.severity == "error"]
    assert diagnostic.message == (
        "cannot broadcast (?,3) and (?,1): sizes 4 (lhs dimension 0) and 5 (rhs dimension 0) "
        "must be equal or 1"
    )
    assert diagnostic.line == 3  # the chlo.broadcast_add
