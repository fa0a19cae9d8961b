"""shlo-sink-slices end to end: sliced broadcasts and elementwise ops against jax.jit."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import shlo
from jax import export, jit, lax
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.pipeline import run_pipeline


def causal_scores(scores):
    # As Flax Gemma does: a mask for every position, sliced to the sequence.
    positions = lax.broadcasted_iota(jnp.int32, (1, 4096), 1)
    mask = (positions[:, :, None] >= positions[:, None, :])[:, None]
    mask = mask[:, :, : scores.shape[-2], : scores.shape[-1]]
    return jnp.where(mask, scores, -1e9)


def strided(a, b, c):
    # Strided slices of a chain of elementwise ops and broadcasts (one permuting).
    y = jnp.tanh(a) * b + c[:, None]
    z = jnp.clip(y, -0.5, 0.5).astype(jnp.float16).T
    return z[1::3, 2:9:2], y[::2, 1:]


def compile_and_compare(fn, *args) -> str:
    source = export.export(jit(fn))(*args).mlir_module()
    got, want = shlo.compile(source)(*args), jit(fn)(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), jax_tuple(want), strict=True):
        np.testing.assert_allclose(
            np.asarray(g, np.float32), np.asarray(w, np.float32), rtol=1e-5, atol=1e-6
        )
    return source


def jax_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def test_sliced_causal_mask_matches_jax_and_stays_small() -> None:
    scores = np.random.default_rng(0).standard_normal((1, 2, 16, 20)).astype(np.float32)
    source = compile_and_compare(causal_scores, scores)
    module = shlo.load_module(source)
    run_pipeline(module, FRONTEND + CpuPipeline().elements(through="legalize-to-linalg"))
    # Only the 16 x 20 corner of the 4096 x 4096 mask is computed.
    assert "4096x4096" not in str(module)


def test_strided_slices_of_elementwise_chains_match_jax() -> None:
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((12, 10)).astype(np.float32) for _ in range(2))
    c = rng.standard_normal(12).astype(np.float32)
    compile_and_compare(strided, a, b, c)
