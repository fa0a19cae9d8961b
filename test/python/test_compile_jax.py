"""Real jax.export programs run through shlo.compile and match jax (0.10.2).

Shape-polymorphic exports are specialized per call; the same functions are
also exported with static shapes. Results must equal what jax computes.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import shlo
from jax import export
from jax_exports import CASES, serialized

NAMES = sorted(name for name, case in CASES.items() if case.known_failure is None)


def assert_matches_jax(got: object, want: object) -> None:
    got_leaves = list(got) if isinstance(got, tuple) else [got]
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for a, b in zip(got_leaves, want_leaves):
        b = np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", NAMES)
def test_shape_polymorphic_export_matches_jax(name: str) -> None:
    case = CASES[name]
    executable = shlo.compile(serialized(name), isolate=False)
    assert executable.is_dynamic
    for sizes in case.sizes:
        inputs = case.inputs(sizes)
        assert_matches_jax(executable(*inputs), jax.jit(case.fn)(*inputs))
    assert len(executable.compiled_signatures) == len(case.sizes)


@pytest.mark.parametrize("name", NAMES)
def test_static_export_matches_jax(name: str) -> None:
    case = CASES[name]
    inputs = case.inputs(case.sizes[0], seed=1)
    exported = export.export(jax.jit(case.fn), platforms=["cpu"])(*inputs)
    executable = shlo.compile(str(exported.mlir_module()), isolate=False)
    assert not executable.is_dynamic
    assert_matches_jax(executable(*inputs), jax.jit(case.fn)(*inputs))


def test_failing_shape_assertion_is_a_clear_error() -> None:
    executable = shlo.compile(serialized("concat"), isolate=False)
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(shlo.ShloError, match="Input shapes do not match the polymorphic shapes"):
        executable(x, np.zeros((2, 3), np.float32))
