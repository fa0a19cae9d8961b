"""shlo-forward-scalar-buffers: the region bodies of a max-pool gradient run without a malloc
per element, and give the same gradient as jax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import shlo
from jax import export
from loop_allocations import allocations_in_loops

PASS = "shlo-forward-scalar-buffers"
LOOPS = ("scf.for", "scf.parallel")


def max_pool_loss(x):
    pooled = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return (pooled * pooled).sum()


def exported_gradient(shape: tuple[int, ...]) -> bytes:
    spec = jax.ShapeDtypeStruct(shape, jnp.float32)
    return export.export(jax.jit(jax.grad(max_pool_loss)))(spec).mlir_module_serialized


def test_select_and_scatter_bodies_allocate_nothing_per_element() -> None:
    source = exported_gradient((2, 8, 8, 3))
    assert allocations_in_loops(source, LOOPS, without=PASS) > 0
    assert allocations_in_loops(source, LOOPS) == 0


def test_max_pool_gradient_matches_jax() -> None:
    shape = (2, 8, 8, 3)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = shlo.compile(exported_gradient(shape))(x)
    np.testing.assert_allclose(got, jax.grad(max_pool_loss)(x), rtol=1e-6)
