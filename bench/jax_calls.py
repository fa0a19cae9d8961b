"""shlo.jax.jit: time per call against jax.jit, and what its wrapper adds to the compiled code.

Measured in one run, interleaved, reporting the median of several repeats:

  .venv/bin/python bench/jax_calls.py [--repeats 7]

Small models spend more time moving their pytrees than computing: each call
flattens the arguments, reads every leaf as a numpy array, runs the code and
makes a jax array of every result. The cases are tiny MLPs whose parameters
are a dict of 2 x layers leaves; ``compiled`` is the same export called
through ``shlo.compile`` on numpy arrays, so ``wrapper`` (shlo.jax.jit minus
compiled) is the embedding's own cost.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
import shlo
import shlo.jax
from timing import interleaved_medians


def mlp_case(layers: int, width: int = 32) -> tuple:
    """A ``layers``-deep tanh MLP on a batch of 8, returning every hidden layer."""
    rng = np.random.default_rng(0)
    params = {
        f"layer{i}": {
            "w": jnp.asarray(rng.standard_normal((width, width)).astype(np.float32) / width),
            "b": jnp.asarray(rng.standard_normal(width).astype(np.float32)),
        }
        for i in range(layers)
    }

    def forward(params, x):
        hidden = []
        for i in range(layers):
            x = jnp.tanh(x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"])
            hidden.append(x)
        return hidden

    x = jnp.asarray(rng.standard_normal((8, width)).astype(np.float32))
    return forward, (params, x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print("| case | leaves in / out | shlo.jax.jit us | compiled us | wrapper us | jax.jit us |")
    print("|---|---:|---:|---:|---:|---:|")
    for layers in (2, 20):
        forward, call_args = mlp_case(layers)
        jitted = jax.jit(forward)
        ours = shlo.jax.jit(forward)
        want = jitted(*call_args)
        for got, expected in zip(ours(*call_args), want):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        exported = ours.export(*call_args)
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(call_args)]
        inputs = [leaves[i] for i in exported.module_kept_var_idx]
        compiled = shlo.compile(exported.mlir_module_serialized)
        shlo_s, compiled_s, jax_s = interleaved_medians(
            [
                lambda: ours(*call_args),
                lambda: compiled(*inputs),
                lambda: jax.block_until_ready(jitted(*call_args)),
            ],
            args.repeats,
        )
        print(
            f"| MLP, {layers} layers | {len(leaves)} / {len(want)} | {shlo_s * 1e6:.1f} |"
            f" {compiled_s * 1e6:.1f} | {(shlo_s - compiled_s) * 1e6:.1f} | {jax_s * 1e6:.1f} |"
        )


if __name__ == "__main__":
    main()
