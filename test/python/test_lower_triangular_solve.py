"""stablehlo.triangular_solve through the CPU pipeline (shlo-lower-triangular-solve).

Checked against numpy.linalg.solve on the triangle that the op reads; the other
triangle holds NaNs to prove it is never read.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.refine import tensor_type_string


def tensor_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return tensor_type_string((shape, dtype))


def compile_solve(a_shape, b_shape, dtype, left_side, lower, unit_diagonal, transpose_a):
    a_type, b_type = tensor_type(a_shape, dtype), tensor_type(b_shape, dtype)
    flags = (
        f"left_side = {str(left_side).lower()}, lower = {str(lower).lower()}, "
        f"transpose_a = #stablehlo<transpose {transpose_a}>, "
        f"unit_diagonal = {str(unit_diagonal).lower()}"
    )
    program = f"""
func.func @main(%a: {a_type}, %b: {b_type}) -> {b_type} {{
  %0 = "stablehlo.triangular_solve"(%a, %b) <{{{flags}}}> : ({a_type}, {b_type}) -> {b_type}
  return %0 : {b_type}
}}
"""
    return shlo.compile(program, isolate=False)


def problem(batch, m, k, dtype, left_side, lower, unit_diagonal, seed=0):
    """(a with NaNs outside its triangle, b, the clean triangular matrix in double)."""
    rng = np.random.default_rng(seed)
    wide = np.complex128 if np.iscomplexobj(np.zeros(0, dtype)) else np.float64
    a = rng.uniform(-1, 1, (*batch, m, m)).astype(wide)
    if wide is np.complex128:
        a = a + 1j * rng.uniform(-1, 1, (*batch, m, m))
    a = a + 3 * np.eye(m)  # well conditioned
    keep = np.tril(np.ones((m, m), bool)) if lower else np.triu(np.ones((m, m), bool))
    clean = np.where(keep, a, 0)
    if unit_diagonal:
        clean = np.where(np.eye(m, dtype=bool), 1, clean)
        a = np.where(np.eye(m, dtype=bool), np.nan, a)  # not read either
    a = np.where(keep, a, np.nan)
    b_shape = (*batch, m, k) if left_side else (*batch, k, m)
    b = rng.uniform(-1, 1, b_shape).astype(wide)
    return a.astype(dtype), b.astype(dtype), clean


def reference(clean, b, left_side, transpose_a):
    op = clean
    if transpose_a != "NO_TRANSPOSE":
        op = np.swapaxes(op, -1, -2)
    if transpose_a == "ADJOINT":
        op = np.conj(op)
    b = b.astype(op.dtype)
    if left_side:
        return np.linalg.solve(op, b)
    # x op = b  <=>  op^T x^T = b^T
    return np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


VARIANTS = list(
    itertools.product([True, False], [True, False], [False, True], ["NO_TRANSPOSE", "TRANSPOSE"])
)


def test_every_variant_f64():
    """All 16 real variants, compiled together as one program."""
    problems = [problem((), 5, 3, np.float64, *v[:3], seed=i) for i, v in enumerate(VARIANTS)]
    params, ops, results = [], [], []
    for i, ((left_side, lower, unit_diagonal, transpose_a), (a, b, _)) in enumerate(
        zip(VARIANTS, problems)
    ):
        a_type, b_type = tensor_type(a.shape, a.dtype), tensor_type(b.shape, b.dtype)
        params += [f"%a{i}: {a_type}", f"%b{i}: {b_type}"]
        flags = (
            f"left_side = {str(left_side).lower()}, lower = {str(lower).lower()}, "
            f"transpose_a = #stablehlo<transpose {transpose_a}>, "
            f"unit_diagonal = {str(unit_diagonal).lower()}"
        )
        ops.append(
            f'  %x{i} = "stablehlo.triangular_solve"(%a{i}, %b{i}) <{{{flags}}}> '
            f": ({a_type}, {b_type}) -> {b_type}"
        )
        results.append((f"%x{i}", b_type))
    program = (
        f"func.func @main({', '.join(params)}) -> ({', '.join(t for _, t in results)}) {{\n"
        + "\n".join(ops)
        + f"\n  return {', '.join(n for n, _ in results)} : {', '.join(t for _, t in results)}\n}}"
    )
    actual = shlo.compile(program, isolate=False)(*[x for a, b, _ in problems for x in (a, b)])
    for variant, (_, b, clean), x in zip(VARIANTS, problems, actual):
        expected = reference(clean, b, variant[0], variant[3])
        np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12, err_msg=str(variant))


@pytest.mark.parametrize("variant", [*VARIANTS[::3], VARIANTS[-1]])
def test_blocked_rows_f64(variant):
    """70 rows: two whole blocks of lower_triangular_solve.BLOCK (32) and 6 more."""
    left_side, lower, unit_diagonal, transpose_a = variant
    a, b, clean = problem((), 70, 5, np.float64, left_side, lower, unit_diagonal, seed=7)
    solve = compile_solve(a.shape, b.shape, np.float64, *variant)
    expected = reference(clean, b, left_side, transpose_a)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(solve(a, b), expected, rtol=1e-10, atol=1e-10 * scale)


def test_blocked_complex_batched_adjoint():
    a, b, clean = problem((2,), 40, 3, np.complex128, True, False, False, seed=8)
    solve = compile_solve(a.shape, b.shape, np.complex128, True, False, False, "ADJOINT")
    expected = reference(clean, b, True, "ADJOINT")
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(solve(a, b), expected, rtol=1e-10, atol=1e-10 * scale)


@pytest.mark.parametrize("transpose_a", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize(("left_side", "lower"), [(True, True), (False, False)])
def test_complex_batched(transpose_a, left_side, lower):
    a, b, clean = problem((2, 3), 4, 2, np.complex64, left_side, lower, False, seed=1)
    solve = compile_solve(a.shape, b.shape, np.complex64, left_side, lower, False, transpose_a)
    expected = reference(clean, b, left_side, transpose_a)
    np.testing.assert_allclose(solve(a, b), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_narrow_floats(dtype):
    a, b, _ = problem((3,), 4, 1, dtype, True, False, False, seed=2)
    solve = compile_solve(a.shape, b.shape, dtype, True, False, False, "NO_TRANSPOSE")
    actual = solve(a, b)
    assert actual.dtype == np.dtype(dtype)
    # Solved in f32 from the rounded inputs, then rounded once.
    expected = reference(
        np.where(np.isnan(a.astype(np.float64)), 0, a.astype(np.float64)), b, True, "NO_TRANSPOSE"
    )
    tolerance = {np.dtype(np.float32): 1e-5}.get(np.dtype(dtype), 1e-2)
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(("m", "k"), [(1, 1), (0, 3), (3, 0)])
def test_degenerate_sizes(m, k):
    a, b, clean = problem((), m, k, np.float32, True, True, False, seed=3)
    solve = compile_solve(a.shape, b.shape, np.float32, True, True, False, "NO_TRANSPOSE")
    actual = solve(a, b)
    assert actual.shape == (m, k)
    np.testing.assert_allclose(actual, reference(clean, b, True, "NO_TRANSPOSE"), rtol=1e-6)


def test_lapack_order_of_operations():
    """Each row is b[i] - a[i,0] x[0] - a[i,1] x[1] - ..., then divided: bit-exact."""
    a, b, _ = problem((), 6, 2, np.float32, True, True, False, seed=4)
    solve = compile_solve(a.shape, b.shape, np.float32, True, True, False, "NO_TRANSPOSE")
    x = b.copy()
    for i in range(6):
        for j in range(i):
            x[i] = x[i] - a[i, j] * x[j]
        x[i] = x[i] / a[i, i]
    np.testing.assert_array_equal(solve(a, b), x)
