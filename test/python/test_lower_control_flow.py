"""shlo-lower-control-flow end to end: while, if, case and optimization_barrier on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import shlo

COUNT_LOOP = """
func.func @main(%n: tensor<i64>, %step: tensor<3xf32>) -> (tensor<i64>, tensor<3xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %acc = stablehlo.constant dense<0.0> : tensor<3xf32>
  %r:2 = stablehlo.while(%i = %zero, %a = %acc) : tensor<i64>, tensor<3xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i64>
    %sum = stablehlo.add %a, %step : tensor<3xf32>
    stablehlo.return %next, %sum : tensor<i64>, tensor<3xf32>
  }
  return %r#0, %r#1 : tensor<i64>, tensor<3xf32>
}
"""


@pytest.mark.parametrize("n", [-3, 0, 1, 10])
def test_while_counts(n: int) -> None:
    step = np.array([1.0, -0.5, 2.0], dtype=np.float32)
    count, total = shlo.compile(COUNT_LOOP, isolate=False)(np.array(n), step)
    iterations = max(n, 0)
    assert count == iterations
    np.testing.assert_allclose(total, iterations * step)


# A counted loop (constant start and limit): lowered to an scf.for.
COUNTED_LOOP = """
func.func @main(%step: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {{
  %start = stablehlo.constant dense<{start}> : tensor<i32>
  %limit = stablehlo.constant dense<{limit}> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %acc = stablehlo.constant dense<0.0> : tensor<3xf32>
  %r:2 = stablehlo.while(%i = %start, %a = %acc) : tensor<i32>, tensor<3xf32>
  cond {{
    %lt = stablehlo.compare LT, %i, %limit, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }} do {{
    %next = stablehlo.add %one, %i : tensor<i32>
    %f = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %scaled = stablehlo.multiply %step, %b : tensor<3xf32>
    %sum = stablehlo.add %a, %scaled : tensor<3xf32>
    stablehlo.return %next, %sum : tensor<i32>, tensor<3xf32>
  }}
  return %r#0, %r#1 : tensor<i32>, tensor<3xf32>
}}
"""


@pytest.mark.parametrize(("start", "limit"), [(0, 5), (-4, 3), (3, 10), (5, 5), (7, 2)])
def test_counted_while_sees_each_count(start: int, limit: int) -> None:
    step = np.array([1.0, -0.5, 2.0], dtype=np.float32)
    source = COUNTED_LOOP.format(start=start, limit=limit)
    count, total = shlo.compile(source, isolate=False)(step)
    assert count == max(start, limit)
    np.testing.assert_allclose(total, sum(range(start, limit)) * step)


# Fibonacci with the carried values swapped by the body.
FIBONACCI = """
func.func @main(%n: tensor<i32>) -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %a0 = stablehlo.constant dense<0> : tensor<i64>
  %b0 = stablehlo.constant dense<1> : tensor<i64>
  %r:3 = stablehlo.while(%i = %zero, %a = %a0, %b = %b0) : tensor<i32>, tensor<i64>, tensor<i64>
  cond {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i32>
    %sum = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %next, %b, %sum : tensor<i32>, tensor<i64>, tensor<i64>
  }
  return %r#1 : tensor<i64>
}
"""


def test_while_swaps_carried_values() -> None:
    fibonacci = shlo.compile(FIBONACCI, isolate=False)
    assert [int(fibonacci(np.array(n, dtype=np.int32))) for n in range(8)] == [
        0,
        1,
        1,
        2,
        3,
        5,
        8,
        13,
    ]
    assert int(fibonacci(np.array(90, dtype=np.int32))) == 2880067194370816120


# Unsigned loop-carried values: multiply until the value wraps below the
# previous one, with an unsigned comparison (a signed one would stop early).
UNSIGNED_LOOP = """
func.func @main(%x: tensor<4xui32>) -> (tensor<4xui32>, tensor<ui32>) {
  %three = stablehlo.constant dense<3> : tensor<4xui32>
  %limit = stablehlo.constant dense<4000000000> : tensor<ui32>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %one = stablehlo.constant dense<1> : tensor<ui32>
  %r:2 = stablehlo.while(%v = %x, %k = %zero) : tensor<4xui32>, tensor<ui32>
  cond {
    %first = stablehlo.slice %v [0:1] : (tensor<4xui32>) -> tensor<1xui32>
    %s = stablehlo.reshape %first : (tensor<1xui32>) -> tensor<ui32>
    %lt = stablehlo.compare LT, %s, %limit : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %w = stablehlo.multiply %v, %three : tensor<4xui32>
    %k1 = stablehlo.add %k, %one : tensor<ui32>
    stablehlo.return %w, %k1 : tensor<4xui32>, tensor<ui32>
  }
  return %r#0, %r#1 : tensor<4xui32>, tensor<ui32>
}
"""


def test_while_unsigned_carried_values() -> None:
    x = np.array([5, 7, 0xFFFFFFFF, 123456], dtype=np.uint32)
    values, count = shlo.compile(UNSIGNED_LOOP, isolate=False)(x)
    expected, steps = x.copy(), 0
    while expected[0] < 4_000_000_000:
        expected = expected * np.uint32(3)
        steps += 1
    assert steps > 19  # past 2**31, where a signed comparison would have stopped
    np.testing.assert_array_equal(values, expected)
    assert count == steps


# A boolean mask carried through the loop, as in the igamma series.
MASK_LOOP = """
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %half = stablehlo.constant dense<0.5> : tensor<2x3xf32>
  %eps = stablehlo.constant dense<0.01> : tensor<2x3xf32>
  %true = stablehlo.constant dense<true> : tensor<2x3xi1>
  %r:2 = stablehlo.while(%v = %x, %m = %true) : tensor<2x3xf32>, tensor<2x3xi1>
  cond {
    %f = stablehlo.constant dense<false> : tensor<i1>
    %any = stablehlo.reduce(%m init: %f) applies stablehlo.or across dimensions = [0, 1] : (tensor<2x3xi1>, tensor<i1>) -> tensor<i1>
    stablehlo.return %any : tensor<i1>
  } do {
    %h = stablehlo.multiply %v, %half : tensor<2x3xf32>
    %w = stablehlo.select %m, %h, %v : tensor<2x3xi1>, tensor<2x3xf32>
    %gt = stablehlo.compare GT, %w, %eps : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %m1 = stablehlo.and %m, %gt : tensor<2x3xi1>
    stablehlo.return %w, %m1 : tensor<2x3xf32>, tensor<2x3xi1>
  }
  return %r#0, %r#1 : tensor<2x3xf32>, tensor<2x3xi1>
}
"""


def test_while_boolean_mask() -> None:
    x = np.array([[1.0, 0.001, 3.0], [0.02, 100.0, 0.5]], dtype=np.float32)
    values, mask = shlo.compile(MASK_LOOP, isolate=False)(x)
    expected = x.copy()
    for index in np.ndindex(x.shape):
        while expected[index] > 0.01:
            expected[index] *= np.float32(0.5)
        if x[index] <= 0.01:
            expected[index] *= np.float32(0.5)  # the first iteration runs on every element
    np.testing.assert_array_equal(values, expected)
    assert not mask.any()


NESTED_LOOPS = """
func.func @main(%n: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %total = %zero) : tensor<i32>, tensor<i32>
  cond {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %inner:2 = stablehlo.while(%j = %zero, %t = %total) : tensor<i32>, tensor<i32>
    cond {
      %le = stablehlo.compare LE, %j, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %le : tensor<i1>
    } do {
      %j1 = stablehlo.add %j, %one : tensor<i32>
      %t1 = stablehlo.add %t, %j : tensor<i32>
      stablehlo.return %j1, %t1 : tensor<i32>, tensor<i32>
    }
    %i1 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %i1, %inner#1 : tensor<i32>, tensor<i32>
  }
  return %r#1 : tensor<i32>
}
"""


def test_nested_while() -> None:
    nested = shlo.compile(NESTED_LOOPS, isolate=False)
    for n in (0, 1, 5):
        assert nested(np.array(n, dtype=np.int32)) == sum(j for i in range(n) for j in range(i + 1))


IF_PROGRAM = """
func.func @main(%pred: tensor<i1>, %x: tensor<2x2xui8>) -> (tensor<2x2xui8>, tensor<i32>) {
  %r:2 = "stablehlo.if"(%pred) ({
    %sum = stablehlo.add %x, %x : tensor<2x2xui8>
    %c = stablehlo.constant dense<1> : tensor<i32>
    stablehlo.return %sum, %c : tensor<2x2xui8>, tensor<i32>
  }, {
    %c = stablehlo.constant dense<2> : tensor<i32>
    stablehlo.return %x, %c : tensor<2x2xui8>, tensor<i32>
  }) : (tensor<i1>) -> (tensor<2x2xui8>, tensor<i32>)
  return %r#0, %r#1 : tensor<2x2xui8>, tensor<i32>
}
"""


@pytest.mark.parametrize("pred", [True, False])
def test_if(pred: bool) -> None:
    x = np.array([[1, 2], [200, 255]], dtype=np.uint8)
    values, branch = shlo.compile(IF_PROGRAM, isolate=False)(np.array(pred), x)
    np.testing.assert_array_equal(values, x + x if pred else x)
    assert branch == (1 if pred else 2)


CASE_PROGRAM = """
func.func @main(%index: tensor<i32>, %x: tensor<3xf64>) -> tensor<3xf64> {
  %r = "stablehlo.case"(%index) ({
    %0 = stablehlo.negate %x : tensor<3xf64>
    stablehlo.return %0 : tensor<3xf64>
  }, {
    %0 = stablehlo.add %x, %x : tensor<3xf64>
    stablehlo.return %0 : tensor<3xf64>
  }, {
    %0 = stablehlo.multiply %x, %x : tensor<3xf64>
    stablehlo.return %0 : tensor<3xf64>
  }) : (tensor<i32>) -> tensor<3xf64>
  return %r : tensor<3xf64>
}
"""


def test_case_out_of_range_selects_last_branch() -> None:
    case = shlo.compile(CASE_PROGRAM, isolate=False)
    x = np.array([1.5, -2.0, 3.0])
    branches = [-x, x + x, x * x]
    for index in (-2147483648, -1, 0, 1, 2, 3, 2147483647):
        expected = branches[index] if 0 <= index < len(branches) else branches[-1]
        np.testing.assert_array_equal(case(np.array(index, dtype=np.int32), x), expected)


SINGLE_BRANCH_CASE = """
func.func @main(%index: tensor<i32>, %x: tensor<2xui16>) -> tensor<2xui16> {
  %r = "stablehlo.case"(%index) ({
    %0 = stablehlo.add %x, %x : tensor<2xui16>
    stablehlo.return %0 : tensor<2xui16>
  }) : (tensor<i32>) -> tensor<2xui16>
  return %r : tensor<2xui16>
}
"""


def test_case_single_branch() -> None:
    case = shlo.compile(SINGLE_BRANCH_CASE, isolate=False)
    x = np.array([3, 40000], dtype=np.uint16)
    for index in (-1, 0, 7):
        np.testing.assert_array_equal(case(np.array(index, dtype=np.int32), x), x + x)


OPTIMIZATION_BARRIER = """
func.func @main(%x: tensor<2xf32>, %y: tensor<ui32>) -> (tensor<ui32>, tensor<2xf32>) {
  %r:2 = stablehlo.optimization_barrier %x, %y : tensor<2xf32>, tensor<ui32>
  %d = stablehlo.add %r#0, %r#0 : tensor<2xf32>
  return %r#1, %d : tensor<ui32>, tensor<2xf32>
}
"""


def test_optimization_barrier_is_identity() -> None:
    x = np.array([1.0, -2.5], dtype=np.float32)
    y, doubled = shlo.compile(OPTIMIZATION_BARRIER, isolate=False)(
        x, np.array(4000000000, dtype=np.uint32)
    )
    assert y == 4000000000
    np.testing.assert_array_equal(doubled, 2 * x)
