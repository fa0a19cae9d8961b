"""shlo-hoist-loop-invariants: invariant work leaves jax's loops, and the loops give jax's results."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export, lax
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.ir_utils import ops_named

PASS = "shlo-hoist-loop-invariants"


def decode(w, b, h, n):
    """A decoding loop as jax traces one: the weight and bias are carried unchanged."""
    return lax.fori_loop(0, n, lambda i, h: jnp.tanh(h @ w.T + b * 2.0), h)


def nested(w, v, n):
    """An invariant of the inner loop that is invariant in the outer loop too."""

    def outer(i, v):
        return lax.fori_loop(0, 3, lambda j, u: u * 0.5 + jnp.exp(-w * w), v) + i

    return lax.fori_loop(0, n, outer, v)


def table_lookup(table, index, x, n):
    """A dynamic slice at a captured index, and a bound computed from a captured value."""

    def body(s):
        i, x = s
        return i + 1, x + lax.dynamic_slice_in_dim(table, index, 4) * 0.25

    return lax.while_loop(lambda s: s[0] < n * 2, body, (jnp.int32(0), x))[1]


def exported(fn, *args) -> bytes:
    return export.export(jax.jit(fn))(*args).mlir_module_serialized


def ops_in_loops(source: bytes, name: str, without: bool) -> int:
    """``name`` ops inside loops when the CPU pipeline reaches the pass (or has run it)."""
    module = shlo.load_module(source)
    elements = FRONTEND + CpuPipeline().elements(through="legalize-to-linalg")
    end = elements.index(PASS) + (0 if without else 1)
    shlo.run_pipeline(module, elements[:end])
    loops = ops_named(module.operation, "stablehlo.while")
    return sum(len(ops_named(loop, name)) for loop in loops)


RNG = np.random.default_rng(0)
W = RNG.standard_normal((32, 32), dtype=np.float32) * 0.2
B = RNG.standard_normal(32, dtype=np.float32)
H = RNG.standard_normal((2, 32), dtype=np.float32)
V = RNG.standard_normal(32, dtype=np.float32)
TABLE = np.arange(16, dtype=np.float32)


def test_the_weight_transpose_leaves_the_loop() -> None:
    source = exported(decode, W, B, H, np.int32(3))
    assert ops_in_loops(source, "stablehlo.transpose", without=True) == 1
    assert ops_in_loops(source, "stablehlo.transpose", without=False) == 0


def test_an_inner_invariant_leaves_both_loops() -> None:
    source = exported(nested, V, V, np.int32(2))
    assert ops_in_loops(source, "stablehlo.exponential", without=True) == 2  # counted per loop
    assert ops_in_loops(source, "stablehlo.exponential", without=False) == 0


@pytest.mark.parametrize("n", [0, 1, 4])
def test_loops_match_jax(n: int) -> None:
    n32 = np.int32(n)
    cases = [
        (decode, (W, B, H, n32)),
        (nested, (V, V, n32)),
        (table_lookup, (TABLE, np.int32(5), V[:4], n32)),
        (table_lookup, (TABLE, np.int32(14), V[:4], n32)),  # clamped to the table's end
    ]
    for fn, args in cases:
        got = shlo.compile(exported(fn, *args))(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(fn(*args)), rtol=2e-5, atol=1e-5)
