"""jax's CPU LAPACK custom calls compile and match jax; the custom-call hook."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import shlo
from jax import export
from shlo import ShloError, custom_calls

pytestmark = pytest.mark.usefixtures("float64_in_jax")


RNG = np.random.default_rng(0)


def spd(batch: tuple[int, ...], n: int, dtype) -> np.ndarray:
    a = RNG.standard_normal((*batch, n, n)).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * RNG.standard_normal((*batch, n, n)).astype(dtype)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dtype)


def check(fn, *args, rtol: float) -> None:
    exported = export.export(jax.jit(fn), platforms=["cpu"])(*args)
    assert "lapack_" in exported.mlir_module()  # the program really calls LAPACK
    got = shlo.compile(exported)(*args)
    want = jax.jit(fn)(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)


DTYPES = [(np.float32, 2e-4), (np.float64, 1e-10), (np.complex64, 2e-4), (np.complex128, 1e-10)]


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_cholesky(dtype, rtol, batch) -> None:
    check(jnp.linalg.cholesky, spd(batch, 5, dtype), rtol=rtol)
    check(lambda a: jsl.cholesky(a, lower=False), spd(batch, 4, dtype), rtol=rtol)


def test_cholesky_of_a_matrix_that_is_not_positive_definite() -> None:
    """info != 0: jax masks the factor with NaNs, from shlo's info as from LAPACK's."""
    a = np.array([[[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]], np.float32)
    assert np.isnan(np.asarray(jnp.linalg.cholesky(a))[0]).any()
    check(jnp.linalg.cholesky, a, rtol=1e-6)  # NaNs compare equal, in the same places


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_solve_triangular(dtype, rtol, lower, trans) -> None:
    a = spd((2,), 4, dtype)
    b = RNG.standard_normal((2, 4, 3)).astype(dtype)
    check(lambda a, b: jsl.solve_triangular(a, b, lower=lower, trans=trans), a, b, rtol=rtol)


@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_solve_triangular_unit_diagonal_and_right_side(unit_diagonal) -> None:
    a = spd((), 4, np.float64)
    b = RNG.standard_normal((3, 4))
    check(
        lambda a, b: jsl.solve_triangular(a, b.T, lower=True, unit_diagonal=unit_diagonal),
        a,
        b,
        rtol=1e-10,
    )
    check(
        lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=False, lower=True),
        a,
        b,
        rtol=1e-10,
    )


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
def test_cho_solve(dtype, rtol) -> None:
    a = spd((), 5, dtype)
    b = RNG.standard_normal((5, 2)).astype(dtype)
    check(lambda a, b: jsl.cho_solve(jsl.cho_factor(a, lower=True), b), a, b, rtol=rtol * 10)


def general(batch: tuple[int, ...], m: int, n: int, dtype) -> np.ndarray:
    a = RNG.standard_normal((*batch, m, n)).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * RNG.standard_normal((*batch, m, n)).astype(dtype)
    return a


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
@pytest.mark.parametrize("batch", [(), (2,)])
def test_solve_inv_slogdet(dtype, rtol, batch) -> None:
    a = general(batch, 6, 6, dtype)
    b = general(batch, 6, 2, dtype)
    check(jnp.linalg.solve, a, b, rtol=rtol * 50)
    check(jnp.linalg.inv, a, rtol=rtol * 50)
    check(jnp.linalg.slogdet, a, rtol=rtol * 50)


# Below and above the LU block size (lapack_handlers.LU_BLOCK, 32): one
# narrow block, whole blocks and a narrower last one, tall, wide, batched.
@pytest.mark.parametrize(
    "shape", [(5, 5), (6, 4), (4, 6), (3, 5, 5), (70, 70), (100, 67), (67, 100), (2, 40, 40)]
)
def test_lu_factors_and_pivots_match_lapack(shape) -> None:
    a = general(shape[:-2], *shape[-2:], np.float64)
    check(jax.scipy.linalg.lu_factor if len(shape) == 2 else jax.lax.linalg.lu, a, rtol=1e-10)


@pytest.mark.parametrize("shape", [(20, 20), (2, 45, 40)])
def test_complex_lu_pivots_on_the_sum_of_absolute_parts(shape) -> None:
    """izamax compares |re| + |im|, not the modulus; pivots differ from |x| on most matrices."""
    check(jax.lax.linalg.lu, general(shape[:-2], *shape[-2:], np.complex128), rtol=1e-10)


def test_lu_pivoting_ties_and_zero_columns() -> None:
    """Equal magnitudes pick the first row, and a zero column is left unscaled (singular)."""
    a = np.array([[1.0, 2.0, 0.0], [-1.0, 5.0, 0.0], [1.0, 1.0, 0.0]])
    check(jax.lax.linalg.lu, a, rtol=1e-12)
    check(jax.lax.linalg.lu, np.zeros((3, 3)), rtol=1e-12)


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4)])
def test_qr(dtype, rtol, shape) -> None:
    a = general(shape[:-2], *shape[-2:], dtype)
    # Householder reflectors as LAPACK's: Q and R match jax's signs too.
    check(jnp.linalg.qr, a, rtol=rtol * 20)
    check(lambda x: jnp.linalg.qr(x, mode="complete"), a, rtol=rtol * 20)


def test_qr_of_columns_already_triangular() -> None:
    """A column that is zero below the diagonal gets tau = 0, as LAPACK's larfg gives."""
    a = np.triu(general((), 4, 4, np.float64)) + np.diag([0.0, 0.0, 1.0, 0.0])
    a[:, 1] = 0.0
    check(jnp.linalg.qr, a, rtol=1e-12)


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 6, 6)])
def test_eigvalsh(dtype, rtol, shape) -> None:
    a = spd(shape[:-2], shape[-1], dtype) - 2 * shape[-1] * np.eye(shape[-1], dtype=dtype)
    check(jnp.linalg.eigvalsh, a, rtol=rtol * 50)
    check(lambda x: jnp.linalg.eigvalsh(x, UPLO="U"), a, rtol=rtol * 50)


@pytest.mark.parametrize(("dtype", "rtol"), DTYPES)
def test_eigh_vectors_diagonalize(dtype, rtol) -> None:
    """Eigenvectors are unique up to a phase: check A V = V diag(w) and V^H V = I instead."""
    a = spd((2,), 6, dtype)
    exported = export.export(jax.jit(jnp.linalg.eigh), platforms=["cpu"])(a)
    w, v = shlo.compile(exported)(a)
    np.testing.assert_allclose(w, np.asarray(jnp.linalg.eigh(a)[0]), rtol=rtol * 50)
    scale = np.abs(a).max()
    np.testing.assert_allclose(a @ v, v * w[:, None, :], atol=rtol * 50 * scale)
    eye = np.broadcast_to(np.eye(6), v.shape)
    np.testing.assert_allclose(np.conj(np.swapaxes(v, -1, -2)) @ v, eye, atol=rtol * 50)


@pytest.mark.parametrize(("dtype", "rtol"), [DTYPES[1], DTYPES[2]])
@pytest.mark.parametrize("n", [40, 41])
def test_eigh_and_svd_of_larger_matrices(dtype, rtol, n) -> None:
    """Many rounds of the round-robin (n odd: an index sits each round out)."""
    a = spd((), n, dtype) - n * np.eye(n, dtype=dtype)  # eigenvalues of both signs
    w, v = shlo.compile(export.export(jax.jit(jnp.linalg.eigh), platforms=["cpu"])(a))(a)
    scale = np.abs(a).max()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=rtol * 50 * scale)
    np.testing.assert_allclose(a @ v, v * w[None, :], atol=rtol * 50 * scale)
    b = general((), n + 3, n, dtype)
    s = shlo.compile(
        export.export(jax.jit(lambda x: jnp.linalg.svd(x, compute_uv=False)), platforms=["cpu"])(b)
    )(b)
    np.testing.assert_allclose(s, np.linalg.svd(b, compute_uv=False), rtol=rtol * 50)


def test_eigvalsh_reads_one_triangle() -> None:
    a = spd((), 4, np.float64)
    junk = a + np.triu(np.full((4, 4), 100.0), 1)  # the upper triangle is garbage
    exported = export.export(
        jax.jit(lambda x: jnp.linalg.eigvalsh(x, symmetrize_input=False)), platforms=["cpu"]
    )(junk)
    np.testing.assert_allclose(shlo.compile(exported)(junk), np.linalg.eigvalsh(a), rtol=1e-10)


SVD_CASES = [
    *[
        (dtype, rtol, shape, True)
        for dtype, rtol in DTYPES
        for shape in [(5, 3), (3, 5), (2, 6, 4)]
    ],
    *[(dtype, rtol, shape, False) for dtype, rtol in DTYPES[1:3] for shape in [(5, 3), (3, 5)]],
    (np.float32, 2e-4, (4, 4), False),
]


@pytest.mark.parametrize(("dtype", "rtol", "shape", "full_matrices"), SVD_CASES)
def test_svd(dtype, rtol, shape, full_matrices) -> None:
    """Singular values match jax; U and V^H are unitary and rebuild A (their phases are free)."""
    a = general(shape[:-2], *shape[-2:], dtype)
    svd = lambda x: jnp.linalg.svd(x, full_matrices=full_matrices)  # noqa: E731
    u, s, vt = shlo.compile(export.export(jax.jit(svd), platforms=["cpu"])(a))(a)
    _, want_s, _ = svd(a)
    tol = rtol * 50
    np.testing.assert_allclose(s, np.asarray(want_s), rtol=tol, atol=tol)
    k = min(shape[-2:])
    rebuilt = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, atol=tol * np.abs(a).max())
    for q in (u, np.conj(np.swapaxes(vt, -1, -2))):
        eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
        np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, atol=tol)
    check(lambda x: jnp.linalg.svd(x, compute_uv=False), a, rtol=tol)


def test_svd_of_a_rank_deficient_matrix() -> None:
    a = np.outer(np.arange(1.0, 6.0), np.array([1.0, -2.0, 0.5]))  # rank 1
    u, s, vt = shlo.compile(export.export(jax.jit(jnp.linalg.svd), platforms=["cpu"])(a))(a)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)
    np.testing.assert_allclose(u.T @ u, np.eye(5), atol=1e-12)
    np.testing.assert_allclose((u[:, :3] * s) @ vt, a, atol=1e-12)


def test_unknown_target_names_its_python_line() -> None:
    a = np.eye(3, dtype=np.float32)
    exported = export.export(jax.jit(jnp.linalg.eig), platforms=["cpu"])(a)
    with pytest.raises(ShloError) as error:
        shlo.compile(exported)
    message = str(error.value)
    assert "custom call @lapack_sgeev_ffi is not supported on target cpu" in message
    assert "test_lapack_calls.py:" in message  # jax recorded the source line


def test_users_register_their_own_target() -> None:
    program = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.custom_call @my_relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    with pytest.raises(ShloError, match="custom call @my_relu is not supported on target cpu"):
        shlo.compile(program)
    custom_calls.register_custom_call("my_relu", "custom_call_handlers:lower_relu")
    try:
        x = np.array([-1, 2, -3, 4], np.float32)
        # In the worker too: the registration travels with the request.
        np.testing.assert_array_equal(shlo.compile(program)(x), [0, 2, 0, 4])
        np.testing.assert_array_equal(shlo.compile(program, isolate=False)(x), [0, 2, 0, 4])
    finally:
        custom_calls.install({})
    with pytest.raises(ValueError, match="module:function"):
        custom_calls.register_custom_call("x", "no_colon")
