"""shlo-scalar-loop-state: a while loop's scalar state stays out of memory, and loops give jax's results."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export, lax
from loop_allocations import allocations_in_loops

PASS = "shlo-scalar-loop-state"


def counter_and_sum(n):
    body = lambda s: (s[0] + 1, s[1] + s[0] * 3)  # noqa: E731
    return lax.while_loop(lambda s: s[0] < n, body, (jnp.int32(0), jnp.int32(0)))[1]


def mixed_state(n, x, v):
    """A float scalar, an int scalar, a vector and a 0-d bool through fori_loop."""

    def body(i, s):
        y, count, w, flag = s
        y = y * 0.99 + jnp.sin(y) * 0.01 + i.astype(jnp.float32) * 1e-3
        w = w * 0.5 + jnp.cos(w + y)
        return y, count + (y > 0.5).astype(jnp.int32), w, jnp.logical_xor(flag, y > 0.6)

    return lax.fori_loop(0, n, body, (x, jnp.int32(0), v, jnp.bool_(False)))


def exported(fn, *args) -> bytes:
    return export.export(jax.jit(fn))(*args).mlir_module_serialized


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (counter_and_sum, (np.int32(5),)),
        (mixed_state, (np.int32(5), np.float32(0.7), np.linspace(-1, 1, 40, dtype=np.float32))),
    ],
    ids=["two-int32", "mixed"],
)
def test_scalar_state_allocates_nothing_per_iteration(fn, args) -> None:
    source = exported(fn, *args)
    without = allocations_in_loops(source, ("scf.while",), without=PASS)
    with_pass = allocations_in_loops(source, ("scf.while",))
    # The mixed state's vector still takes two buffers an iteration, and the
    # float scalar one, for the kernel it is an argument of (10 without the pass).
    assert (without, with_pass) == ((10, 3) if fn is mixed_state else (4, 0))


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_loops_match_jax(n: int) -> None:
    n32 = np.int32(n)
    assert shlo.compile(exported(counter_and_sum, n32))(n32) == counter_and_sum(n32)
    x, v = np.float32(0.7), np.linspace(-1, 1, 40, dtype=np.float32)
    got = shlo.compile(exported(mixed_state, n32, x, v))(n32, x, v)
    for g, w in zip(got, mixed_state(n32, x, v)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-5)
