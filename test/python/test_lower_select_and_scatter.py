"""stablehlo.select_and_scatter through the CPU pipeline, checked against a numpy reference."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
import shlo

MLIR_TYPES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.int32): "i32",
    np.dtype(np.uint8): "ui8",
}
COMPARES = {"GE": operator.ge, "GT": operator.gt, "LE": operator.le}
SCATTERS = {"add": operator.add, "maximum": max, "subtract": operator.sub}


def reference(operand, source, init, window, strides, padding, select, scatter):
    """The StableHLO interpreter's algorithm, one window at a time."""
    result = np.full_like(operand, init)
    for w in np.ndindex(*source.shape):
        selected = None
        for k in np.ndindex(*window):
            index = tuple(w[d] * strides[d] + k[d] - padding[d][0] for d in range(operand.ndim))
            if not all(0 <= i < n for i, n in zip(index, operand.shape)):
                continue
            if selected is None or not select(operand[selected], operand[index]):
                selected = index
        if selected is not None:
            result[selected] = scatter(source[w], result[selected])
    return result


def num_windows(shape, window, strides, padding):
    sizes = []
    for n, k, s, (lo, hi) in zip(shape, window, strides, padding):
        padded = n + lo + hi
        sizes.append(0 if padded < k else (padded - k) // s + 1)
    return tuple(sizes)


def program(shape, source_shape, element, window, strides, padding, compare, scatter):
    def t(s):
        return "tensor<" + "".join(f"{n}x" for n in s) + f"{element}>"

    scalar = f"tensor<{element}>"
    rows = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
    arrays = {
        "window_dimensions": window,
        "window_strides": strides,
    }
    attrs = ", ".join(
        f"{k} = array<i64" + (": " + ", ".join(map(str, v)) if v else "") + ">"
        for k, v in arrays.items()
    )
    if shape:
        attrs += f", padding = dense<[{rows}]> : tensor<{len(shape)}x2xi64>"
    return f"""
func.func @main(%x: {t(shape)}, %s: {t(source_shape)}, %init: {scalar}) -> {t(shape)} {{
  %0 = "stablehlo.select_and_scatter"(%x, %s, %init) <{{{attrs}}}> ({{
  ^bb0(%a: {scalar}, %b: {scalar}):
    %c = stablehlo.compare {compare}, %a, %b : ({scalar}, {scalar}) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }}, {{
  ^bb0(%a: {scalar}, %b: {scalar}):
    %r = stablehlo.{scatter} %a, %b : {scalar}
    stablehlo.return %r : {scalar}
  }}) : ({t(shape)}, {t(source_shape)}, {scalar}) -> {t(shape)}
  return %0 : {t(shape)}
}}
"""


def check(operand, init, window, strides, padding, compare="GE", scatter="add", seed=0):
    source_shape = num_windows(operand.shape, window, strides, padding)
    rng = np.random.default_rng(seed)
    source = rng.integers(1, 9, size=source_shape).astype(operand.dtype)
    element = MLIR_TYPES[operand.dtype]
    text = program(operand.shape, source_shape, element, window, strides, padding, compare, scatter)
    run = shlo.compile(text, isolate=False)
    init_array = np.array(init, dtype=operand.dtype)
    got = run(operand, source, init_array)
    expected = reference(
        operand, source, init_array, window, strides, padding, COMPARES[compare], SCATTERS[scatter]
    )
    np.testing.assert_array_equal(got, expected)


def test_spec_example():
    operand = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], dtype=np.int32)
    source = np.array([[5, 6], [7, 8]], dtype=np.int32)
    text = program((4, 2), (2, 2), "i32", (3, 1), (2, 1), ((0, 1), (0, 0)), "GE", "add")
    got = shlo.compile(text, isolate=False)(operand, source, np.array(0, dtype=np.int32))
    np.testing.assert_array_equal(got, [[0, 0], [0, 0], [5, 14], [7, 0]])


def test_max_pool_gradient_without_overlap():
    operand = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    check(operand, 0.0, (2, 2), (2, 2), ((0, 0), (0, 0)))


def test_overlapping_windows_accumulate():
    operand = np.random.default_rng(2).standard_normal((5, 5)).astype(np.float32)
    check(operand, 0.5, (3, 3), (1, 1), ((0, 0), (0, 0)))


@pytest.mark.parametrize("compare", ["GE", "GT", "LE"])
def test_ties_follow_the_select_region(compare):
    # Equal values: GE keeps the first of a tie, GT moves on to the last one.
    operand = np.array([[1, 1, 2, 2], [2, 1, 1, 2]], dtype=np.int32)
    check(operand, 0, (2, 2), (1, 2), ((0, 0), (0, 0)), compare=compare)


def test_padding_and_windows_entirely_in_padding():
    operand = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::-1].copy()
    check(operand, 0.0, (2, 3), (1, 2), ((2, 1), (1, 2)))


def test_unsigned_with_maximum_scatter():
    operand = np.array([[200, 3, 255, 7], [128, 129, 0, 1]], dtype=np.uint8)
    check(operand, 100, (2, 2), (1, 1), ((0, 0), (1, 0)), compare="GT", scatter="maximum")


def test_three_dimensions():
    rng = np.random.default_rng(4)
    operand = rng.integers(-20, 20, size=(2, 4, 5)).astype(np.int32)
    check(operand, 0, (1, 2, 3), (1, 2, 1), ((0, 0), (1, 0), (0, 1)))


@pytest.mark.parametrize(("window", "strides"), list(itertools.product([(2,), (4,)], [(1,), (3,)])))
def test_one_dimension(window, strides):
    operand = np.array([4, 8, 1, 8, 3, 9, 2], dtype=np.float32)
    check(operand, -1.0, window, strides, ((1, 1),))


def test_no_windows_gives_init():
    operand = np.array([3.0, 1.0], dtype=np.float32)
    check(operand, 2.5, (3,), (1,), ((0, 0),))


def test_rank_zero_scatters_once():
    # scatter(source, init) = 5 - 2: the source comes first, as in XLA.
    text = program((), (), "f32", (), (), (), "GE", "subtract")
    run = shlo.compile(text, isolate=False)
    got = run(np.float32(1.0), np.float32(5.0), np.float32(2.0))
    np.testing.assert_array_equal(got, np.float32(3.0))
