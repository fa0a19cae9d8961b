"""Differential tests: compiled CPU code against StableHLO's reference interpreter.

Hypothesis draws shapes, attributes and values; each program is compiled by
our pipeline and interpreted, and the results must agree (exactly for
integers, to a few ULP-scale tolerances for floats).
"""

from __future__ import annotations

import numpy as np
import shlo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shlo.interpreter import interpret

SETTINGS = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
ELEMENTS = {"f32": np.float32, "i32": np.int32}


def tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def random_array(draw: st.DrawFn, shape: tuple[int, ...], element: str) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if element == "i32":
        return rng.integers(-20, 20, size=shape).astype(np.int32)
    return rng.uniform(-4, 4, size=shape).astype(np.float32)


def check(source: str, *args: np.ndarray) -> None:
    compiled = shlo.compile(source, isolate=False)(*args)
    compiled = list(compiled) if isinstance(compiled, tuple) else [compiled]
    expected = interpret(source, "main", list(args))
    assert len(compiled) == len(expected)
    for got, want in zip(compiled, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, want)


shapes = st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple)

BINARY = {
    "f32": ["add", "subtract", "multiply", "divide", "maximum", "minimum", "atan2", "power"],
    "i32": ["add", "subtract", "multiply", "maximum", "minimum", "and", "or", "xor"],
}
UNARY = {
    "f32": ["negate", "abs", "exponential", "tanh", "sine", "cosine", "floor", "sqrt", "logistic"],
    "i32": ["negate", "abs", "not", "popcnt", "sign"],
}


@SETTINGS
@given(st.data())
def test_elementwise(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(sorted(ELEMENTS)))
    shape = data.draw(shapes)
    t = tensor(shape, element)
    binary = data.draw(st.sampled_from(BINARY[element]))
    unary = data.draw(st.sampled_from(UNARY[element]))
    source = f"""
    func.func @main(%a: {t}, %b: {t}) -> {t} {{
      %0 = stablehlo.{binary} %a, %b : {t}
      %1 = stablehlo.{unary} %0 : {t}
      return %1 : {t}
    }}
    """
    a, b = random_array(data.draw, shape, element), random_array(data.draw, shape, element)
    if binary in ("power", "sqrt") or unary == "sqrt":
        a, b = np.abs(a) + 0.5, np.abs(b)
    check(source, a, b)


@SETTINGS
@given(st.data())
def test_reduce(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(sorted(ELEMENTS)))
    shape = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple))
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    op, init = data.draw(st.sampled_from([("add", 0), ("maximum", -100), ("minimum", 100)]))
    init = f"{init}.0" if element == "f32" else str(init)
    kept = tuple(size for axis, size in enumerate(shape) if axis not in dims)
    scalar = tensor((), element)
    source = f"""
    func.func @main(%x: {tensor(shape, element)}) -> {tensor(kept, element)} {{
      %init = stablehlo.constant dense<{init}> : {scalar}
      %0 = stablehlo.reduce(%x init: %init) applies stablehlo.{op} across dimensions = {dims} : ({tensor(shape, element)}, {scalar}) -> {tensor(kept, element)}
      return %0 : {tensor(kept, element)}
    }}
    """
    check(source, random_array(data.draw, shape, element))


@SETTINGS
@given(st.data())
def test_dot_general(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(sorted(ELEMENTS)))
    b, m, k, n = (data.draw(st.integers(1, 6)) for _ in range(4))
    lhs, rhs, out = (b, m, k), (b, k, n), (b, m, n)
    source = f"""
    func.func @main(%x: {tensor(lhs, element)}, %y: {tensor(rhs, element)}) -> {tensor(out, element)} {{
      %0 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ({tensor(lhs, element)}, {tensor(rhs, element)}) -> {tensor(out, element)}
      return %0 : {tensor(out, element)}
    }}
    """
    check(source, random_array(data.draw, lhs, element), random_array(data.draw, rhs, element))


@SETTINGS
@given(st.data())
def test_convolution(data: st.DataObject) -> None:
    batch, size, channels, features = (data.draw(st.integers(1, 4)) for _ in range(4))
    size += 3
    window = data.draw(st.integers(1, 3))
    stride = data.draw(st.integers(1, 2))
    pad = data.draw(st.integers(0, 1))
    out = (size + 2 * pad - window) // stride + 1
    lhs, rhs, result = (
        (batch, size, size, channels),
        (window, window, channels, features),
        (batch, out, out, features),
    )
    source = f"""
    func.func @main(%x: {tensor(lhs, "f32")}, %w: {tensor(rhs, "f32")}) -> {tensor(result, "f32")} {{
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
        window = {{stride = [{stride}, {stride}], pad = [[{pad}, {pad}], [{pad}, {pad}]]}}
        {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
        : ({tensor(lhs, "f32")}, {tensor(rhs, "f32")}) -> {tensor(result, "f32")}
      return %0 : {tensor(result, "f32")}
    }}
    """
    check(source, random_array(data.draw, lhs, "f32"), random_array(data.draw, rhs, "f32"))


@SETTINGS
@given(st.data())
def test_gather(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(sorted(ELEMENTS)))
    rows, cols, count = (
        data.draw(st.integers(1, 6)),
        data.draw(st.integers(1, 5)),
        data.draw(st.integers(1, 6)),
    )
    width = data.draw(st.integers(1, cols))
    operand, result = (rows, cols), (count, width)
    # Start indices may be out of bounds: gather clamps them.
    indices = np.array(
        data.draw(
            st.lists(
                st.lists(st.integers(-2, rows + 1), min_size=2, max_size=2),
                min_size=count,
                max_size=count,
            )
        ),
        np.int32,
    )
    source = f"""
    func.func @main(%x: {tensor(operand, element)}, %i: tensor<{count}x2xi32>) -> {tensor(result, element)} {{
      %0 = "stablehlo.gather"(%x, %i) {{
        dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>,
        slice_sizes = array<i64: 1, {width}>, indices_are_sorted = false
      }} : ({tensor(operand, element)}, tensor<{count}x2xi32>) -> {tensor(result, element)}
      return %0 : {tensor(result, element)}
    }}
    """
    check(source, random_array(data.draw, operand, element), indices)


@SETTINGS
@given(st.data())
def test_scatter(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(sorted(ELEMENTS)))
    rows, cols, count = (
        data.draw(st.integers(1, 6)),
        data.draw(st.integers(1, 4)),
        data.draw(st.integers(1, 6)),
    )
    combine = data.draw(st.sampled_from(["add", "maximum", "multiply"]))
    operand, updates = (rows, cols), (count, cols)
    # Repeated and out-of-bounds rows: repeats combine, out-of-bounds updates are skipped.
    indices = np.array(
        data.draw(st.lists(st.integers(-1, rows), min_size=count, max_size=count)), np.int32
    ).reshape(count, 1)
    scalar = tensor((), element)
    source = f"""
    func.func @main(%x: {tensor(operand, element)}, %i: tensor<{count}x1xi32>, %u: {tensor(updates, element)}) -> {tensor(operand, element)} {{
      %0 = "stablehlo.scatter"(%x, %i, %u) ({{
      ^bb0(%a: {scalar}, %b: {scalar}):
        %1 = stablehlo.{combine} %a, %b : {scalar}
        stablehlo.return %1 : {scalar}
      }}) {{
        scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>,
        indices_are_sorted = false, unique_indices = false
      }} : ({tensor(operand, element)}, tensor<{count}x1xi32>, {tensor(updates, element)}) -> {tensor(operand, element)}
      return %0 : {tensor(operand, element)}
    }}
    """
    check(
        source,
        random_array(data.draw, operand, element),
        indices,
        random_array(data.draw, updates, element),
    )
