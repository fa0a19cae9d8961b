"""shlo-split-complex-dots end to end: complex products against jax.jit."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export, jit
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.pipeline import run_pipeline

pytestmark = pytest.mark.usefixtures("float64_in_jax")


RNG = np.random.default_rng(0)


def complex_array(*shape: int, dtype=np.complex64) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


CASES = [
    (lambda a, b: a @ b, (complex_array(33, 70), complex_array(70, 20))),
    (
        lambda a, b: a @ b,
        (complex_array(40, 30, dtype=np.complex128), complex_array(30, 25, dtype=np.complex128)),
    ),
    (
        lambda a, b: jnp.einsum("bij,bkj->bik", a, b),
        (complex_array(3, 9, 17), complex_array(3, 5, 17)),
    ),
    (
        lambda a, b: jnp.einsum("ijk,jkl->il", a, b),
        (complex_array(6, 4, 5), complex_array(4, 5, 7)),
    ),
    (lambda a, b: jnp.vdot(a, b), (complex_array(50), complex_array(50))),
    # A complex and a real operand: left to the complex lowering.
    (lambda a, b: a @ b, (complex_array(8, 6), RNG.standard_normal((6, 4)).astype(np.float32))),
]
IDS = ["matmul", "c128", "batched-transposed", "two-contracting", "vdot", "complex-real"]


@pytest.mark.parametrize(("function", "args"), CASES, ids=IDS)
def test_complex_products_match_jax(function, args) -> None:
    source = export.export(jit(function))(*args).mlir_module()
    got = shlo.compile(source)(*args)
    want = np.asarray(jit(function)(*args))
    tolerance = 1e-12 if want.dtype == np.complex128 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * np.abs(want).max())


def test_a_complex_matmul_is_four_real_ones() -> None:
    a, b = complex_array(16, 16), complex_array(16, 16)
    module = shlo.load_module(export.export(jit(lambda a, b: a @ b))(a, b).mlir_module())
    run_pipeline(module, FRONTEND + CpuPipeline().elements(through="legalize-to-linalg"))
    text = str(module)
    assert text.count("linalg.matmul") == 4 and "complex<f32>> outs" not in text
