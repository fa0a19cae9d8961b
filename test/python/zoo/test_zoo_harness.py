"""The zoo's comparison rejects wrong answers and records them as incorrect."""

from __future__ import annotations

import types

import jax.numpy as jnp
import numpy as np
import pytest
import shlo.jax
import zoo_harness


def test_close_floats_pass_and_wrong_ones_fail() -> None:
    want = np.linspace(-2, 2, 16, dtype=np.float32)
    zoo_harness.assert_leaf_close(want * (1 + 1e-6), want, 1e-4, "near")
    with pytest.raises(AssertionError):
        zoo_harness.assert_leaf_close(want * (1 + 1e-3), want, 1e-4, "far")


def test_integers_bfloat16_and_nans_are_checked() -> None:
    ids = np.arange(6, dtype=np.int32)
    with pytest.raises(AssertionError):
        zoo_harness.assert_leaf_close(ids + (ids == 5), ids, 1e-4, "ids")
    halves = np.full(4, 0.5, jnp.bfloat16)
    with pytest.raises(AssertionError):
        zoo_harness.assert_leaf_close(halves * 1.25, halves, 2e-2, "bf16")
    nan = np.array([1.0, np.nan], np.float32)
    with pytest.raises(AssertionError, match="non-finite"):
        zoo_harness.assert_leaf_close(np.array([1.0, 2.0], np.float32), nan, 1e-4, "nan")


def test_a_wrong_executable_fails_and_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    def off_by_a_little(fn, **options):
        jitted = shlo.jax.jit(fn, **options)
        return lambda *args: jitted(*args) * np.float32(1.001)

    wrong_shlo = types.SimpleNamespace(jax=types.SimpleNamespace(jit=off_by_a_little))
    monkeypatch.setattr(zoo_harness, "shlo", wrong_shlo)
    monkeypatch.setattr(zoo_harness, "RESULTS", {})
    params = {"w": np.ones((3, 2), np.float32)}
    with pytest.raises(AssertionError):
        zoo_harness.check("wrong", lambda p, x: x @ p["w"], (params, np.ones((4, 3), np.float32)))
    assert not zoo_harness.RESULTS["wrong"].correct
    assert "AssertionError" in zoo_harness.RESULTS["wrong"].error
