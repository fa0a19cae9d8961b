"""When a compile's MLIR context is destroyed.

Destroying one takes about 1.7 ms. A reference cycle kept it alive until
Python's next collection, which could come in the middle of another compile;
the worker keeps each context it hands out and drops them while it waits.
"""

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from shlo import _mlir_compat
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu.lowering import lower_to_object


def _program() -> str:
    """Kernels outlined around glue, and functions that only forward to a
    kernel inlined back (a layernorm's): the passes that once held their
    module in a reference cycle."""

    def layer(x, w):
        y = jnp.exp(jnp.tanh(x @ w))
        mean = y.mean(-1, keepdims=True)
        return (y - mean) / jnp.sqrt(y.var(-1, keepdims=True) + 1e-5)

    args = (np.zeros((64, 256), np.float32), np.zeros((256, 256), np.float32))
    return export.export(jax.jit(layer))(*args).mlir_module()


@pytest.fixture
def without_collections():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_a_compile_leaves_no_cycle_that_holds_its_context(without_collections):
    program = _program()
    before = ir.Context._get_live_count()
    lowered = lower_to_object(program, "main", None)
    assert lowered.object_code
    assert ir.Context._get_live_count() == before


def test_the_worker_keeps_a_context_until_it_releases_the_finished_ones(
    without_collections, monkeypatch
):
    monkeypatch.setattr(_mlir_compat, "_contexts_to_release", None)
    _mlir_compat.defer_context_teardown()
    before = ir.Context._get_live_count()
    context = new_context()
    assert _mlir_compat._contexts_to_release == [context]
    del context
    assert ir.Context._get_live_count() == before + 1
    # Not while a request waits, unless more than keep_at_most are kept.
    _mlir_compat.release_finished_contexts(stop=lambda: True)
    assert ir.Context._get_live_count() == before + 1
    _mlir_compat.release_finished_contexts(stop=lambda: True, keep_at_most=0)
    assert ir.Context._get_live_count() == before
    assert _mlir_compat._contexts_to_release == []
