"""Write jax exports of a few programs, as a jax release serializes them.

  python test/artifacts/make_artifacts.py OUT_DIR

Run with the jax release to record (in a throwaway venv for an old one):
it writes, per program, ``NAME.exported`` (``Exported.serialize()``),
``NAME.stablehlo`` (``mlir_module_serialized``, a StableHLO portable
artifact) and ``NAME.npz`` (the inputs, as the module takes them, and the
outputs that jax computed). ``test_portable_artifacts.py`` loads them with
the current shlo. The committed directories were made with the jax release
in their name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import export


def mlp(params, x):
    hidden = jax.nn.gelu(x @ params["w1"] + params["b1"])
    return jax.nn.softmax(hidden @ params["w2"], axis=-1)


def loop(x):
    def body(carry):
        i, value = carry
        return i + 1, jnp.sin(value) * 1.5 + 0.25

    return jax.lax.while_loop(lambda c: c[0] < 10, body, (0, x))[1]


def cumulative(x):
    return jnp.cumsum(x, axis=0) / jnp.arange(1, x.shape[0] + 1, dtype=x.dtype)[:, None]


def programs():
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((16, 32)).astype(np.float32),
        "b1": rng.standard_normal(32).astype(np.float32),
        "w2": rng.standard_normal((32, 8)).astype(np.float32),
    }
    x = rng.standard_normal((4, 16)).astype(np.float32)
    yield "mlp", mlp, (params, x), None
    yield "while_loop", loop, (rng.standard_normal(64).astype(np.float32),), None
    # Shape-polymorphic: exported for any number of rows.
    yield "cumulative", cumulative, (rng.standard_normal((6, 3)).astype(np.float32),), ["(n, 3)"]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, fn, args, shapes in programs():
        specs = export.symbolic_args_specs(args, shapes) if shapes else args
        exported = export.export(jax.jit(fn), platforms=["cpu"])(*specs)
        (out / f"{name}.exported").write_bytes(bytes(exported.serialize()))
        (out / f"{name}.stablehlo").write_bytes(exported.mlir_module_serialized)
        leaves = jax.tree_util.tree_leaves(args)
        inputs = [np.asarray(leaves[i]) for i in exported.module_kept_var_idx]
        outputs = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
        arrays = {f"input_{i}": a for i, a in enumerate(inputs)}
        arrays |= {f"output_{i}": a for i, a in enumerate(outputs)}
        np.savez(out / f"{name}.npz", **arrays)
        print(f"{name}: jax {jax.__version__}, {len(exported.mlir_module_serialized)} bytes")


if __name__ == "__main__":
    main()
