"""stablehlo.sort through the CPU pipeline (shlo-lower-sort), checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.ir_utils import tensor_type_text

MLIR_TYPES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.int32): "i32",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.bool_): "i1",
}


def sort_program(
    shape: tuple[int, ...], elements: list[str], dimension: int, comparator: str
) -> str:
    """``@main`` sorting its arguments (all of ``shape``) with ``comparator``'s body.

    The comparator's arguments are ``%a0, %b0, %a1, %b1, ...``.
    """
    types = [tensor_type_text(shape, e) for e in elements]
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
    block = ", ".join(
        f"%{side}{i}: tensor<{e}>" for i, e in enumerate(elements) for side in ("a", "b")
    )
    results = ", ".join(types)
    operands = ", ".join(f"%arg{i}" for i in range(len(types)))
    count = len(types)
    returned = ", ".join(f"%r#{i}" for i in range(count)) if count > 1 else "%r"
    name = f"%r:{count}" if count > 1 else "%r"
    return f"""
func.func @main({params}) -> ({results}) {{
  {name} = "stablehlo.sort"({operands}) <{{dimension = {dimension} : i64, is_stable = true}}> ({{
  ^bb0({block}):
    {comparator}
  }}) : ({results}) -> ({results})
  return {returned} : {results}
}}
"""


LESS = """%lt = stablehlo.compare LT, %a0, %b0 : ({t}, {t}) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>"""
GREATER = LESS.replace("LT", "GT")


def compile_sort(shape, dtypes, dimension, comparator):
    elements = [MLIR_TYPES[np.dtype(d)] for d in dtypes]
    body = comparator.format(t=f"tensor<{elements[0]}>")
    return shlo.compile(sort_program(shape, elements, dimension, body), isolate=False)


@pytest.mark.parametrize("n", [2, 3, 7, 16, 33, 100])
def test_sort_1d_matches_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    run = compile_sort((n,), [np.float32], 0, LESS)
    np.testing.assert_array_equal(run(x), np.sort(x))


@pytest.mark.parametrize("dimension", [0, 1, 2, -1])
def test_sort_along_any_dimension(dimension):
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, size=(3, 5, 4)).astype(np.int32)
    run = compile_sort(x.shape, [np.int32], dimension, LESS)
    np.testing.assert_array_equal(run(x), np.sort(x, axis=dimension))


def test_sort_is_stable_with_payloads():
    # Many equal keys: the payload (original position) must keep its order.
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 4, size=(2, 37)).astype(np.int32)
    payload = np.tile(np.arange(37, dtype=np.int32), (2, 1))
    extra = rng.standard_normal((2, 37)).astype(np.float32)
    run = compile_sort(keys.shape, [np.int32, np.int32, np.float32], 1, GREATER)
    got_keys, got_payload, got_extra = run(keys, payload, extra)
    order = np.argsort(-keys, axis=1, kind="stable")
    np.testing.assert_array_equal(got_keys, np.take_along_axis(keys, order, 1))
    np.testing.assert_array_equal(got_payload, order)
    np.testing.assert_array_equal(got_extra, np.take_along_axis(extra, order, 1))


def test_sort_lexicographic_comparator():
    comparator = """%lt0 = stablehlo.compare LT, %a0, %b0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq0 = stablehlo.compare EQ, %a0, %b0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %lt1 = stablehlo.compare LT, %a1, %b1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %tie = stablehlo.and %eq0, %lt1 : tensor<i1>
    %lt = stablehlo.or %lt0, %tie : tensor<i1>
    stablehlo.return %lt : tensor<i1>"""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, size=50).astype(np.int32)
    b = rng.standard_normal(50).astype(np.float32)
    run = compile_sort((50,), [np.int32, np.float32], 0, comparator)
    order = np.lexsort((b, a))
    got_a, got_b = run(a, b)
    np.testing.assert_array_equal(got_a, a[order])
    np.testing.assert_array_equal(got_b, b[order])


def test_sort_unsigned_compares_unsigned():
    x = np.array([3, 2**32 - 1, 0, 2**31, 7, 2**31 - 1], dtype=np.uint32)
    run = compile_sort(x.shape, [np.uint32], 0, LESS)
    np.testing.assert_array_equal(run(x), np.sort(x))


def test_sort_bool():
    x = np.array([[True, False, True, False, False]])
    run = compile_sort(x.shape, [np.bool_], 1, LESS)
    np.testing.assert_array_equal(run(x), np.sort(x, axis=1))


def test_sort_dimension_of_size_one():
    x = np.arange(4, dtype=np.float32).reshape(4, 1)
    run = compile_sort(x.shape, [np.float32], 1, GREATER)
    np.testing.assert_array_equal(run(x), x)


# Sorts whose results are only sliced to their first k elements (jax's top_k)
# keep a sorted buffer of k per row instead of sorting everything.


def _total_order_keys(x: np.ndarray) -> np.ndarray:
    """int64 keys that order f32 bit patterns as TOTALORDER does (-NaN < -inf < -0 < +0 < NaN)."""
    bits = x.view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)


def _top_k_oracle(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-_total_order_keys(x), axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(np.int32)


def _awkward_rows(n: int) -> np.ndarray:
    """Rows that stress ties, NaN, signed zeros and the insertion's worst cases."""
    rng = np.random.default_rng(n)
    few_values = rng.integers(-2, 3, size=n).astype(np.float32)  # many ties
    specials = rng.standard_normal(n).astype(np.float32)
    picks = rng.integers(0, n, size=(6, max(n // 10, 1)))
    specials[picks[0]] = np.nan
    specials[picks[1]] = np.array(0xFFC00001, np.uint32).view(np.float32)  # a negative NaN
    specials[picks[2]] = 0.0
    specials[picks[3]] = -0.0
    specials[picks[4]] = np.inf
    specials[picks[5]] = -np.inf
    ascending = np.arange(n, dtype=np.float32)  # every element goes in at the top
    return np.stack([few_values, specials, ascending, ascending[::-1].copy()])


@pytest.mark.parametrize(("n", "k"), [(8, 7), (100, 1), (1000, 5), (4097, 50)])
def test_top_k_matches_a_stable_total_order_sort(n: int, k: int) -> None:
    import jax

    x = _awkward_rows(n)
    exported = jax.export.export(jax.jit(lambda x: jax.lax.top_k(x, k)))(x)
    values, indices = shlo.compile(exported.mlir_module(), isolate=False)(x)
    want_values, want_indices = _top_k_oracle(x, k)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values.view(np.uint32), want_values.view(np.uint32))


def test_first_elements_of_a_sort_along_any_dimension_with_several_slices() -> None:
    # Keys and payloads sorted along dimension 0 of (40, 3, 2) by a lexicographic
    # comparator; the results are sliced to 3 and to 6 rows, and across the others.
    comparator = """%lt0 = stablehlo.compare LT, %a0, %b0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq0 = stablehlo.compare EQ, %a0, %b0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %lt1 = stablehlo.compare GT, %a1, %b1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %tie = stablehlo.and %eq0, %lt1 : tensor<i1>
    %lt = stablehlo.or %lt0, %tie : tensor<i1>
    stablehlo.return %lt : tensor<i1>"""
    program = f"""
func.func @main(%a: tensor<40x3x2xi32>, %b: tensor<40x3x2xf32>)
    -> (tensor<3x3x2xi32>, tensor<6x2x2xf32>) {{
  %r:2 = "stablehlo.sort"(%a, %b) <{{dimension = 0 : i64, is_stable = true}}> ({{
  ^bb0(%a0: tensor<i32>, %b0: tensor<i32>, %a1: tensor<f32>, %b1: tensor<f32>):
    {comparator}
  }}) : (tensor<40x3x2xi32>, tensor<40x3x2xf32>) -> (tensor<40x3x2xi32>, tensor<40x3x2xf32>)
  %s0 = stablehlo.slice %r#0 [0:3, 0:3, 0:2] : (tensor<40x3x2xi32>) -> tensor<3x3x2xi32>
  %s1 = stablehlo.slice %r#1 [0:6, 1:3, 0:2] : (tensor<40x3x2xf32>) -> tensor<6x2x2xf32>
  return %s0, %s1 : tensor<3x3x2xi32>, tensor<6x2x2xf32>
}}
"""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 4, size=(40, 3, 2)).astype(np.int32)
    b = rng.integers(-3, 3, size=(40, 3, 2)).astype(np.float32)  # ties left in order
    got_a, got_b = shlo.compile(program, isolate=False)(a, b)
    order = np.lexsort((-b, a), axis=0)
    np.testing.assert_array_equal(got_a, np.take_along_axis(a, order, 0)[:3])
    np.testing.assert_array_equal(got_b, np.take_along_axis(b, order, 0)[:6, 1:3])


def test_first_elements_of_an_unsigned_sort() -> None:
    # Sorted as signless, compared as unsigned, bitcast back.
    program = """
func.func @main(%x: tensor<2x50xui32>) -> tensor<2x4xui32> {
  %r = "stablehlo.sort"(%x) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<ui32>, %b: tensor<ui32>):
    %gt = stablehlo.compare GT, %a, %b : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<2x50xui32>) -> tensor<2x50xui32>
  %s = stablehlo.slice %r [0:2, 0:4] : (tensor<2x50xui32>) -> tensor<2x4xui32>
  return %s : tensor<2x4xui32>
}
"""
    x = np.random.default_rng(5).integers(0, 2**32, size=(2, 50), dtype=np.uint32)
    got = shlo.compile(program, isolate=False)(x)
    np.testing.assert_array_equal(got, -np.sort(-x.astype(np.int64), axis=1)[:, :4])
