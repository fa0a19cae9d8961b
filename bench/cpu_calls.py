"""CPU backend: time per call of shlo.compile'd code, against jax.jit (XLA) and numpy.

Measured in one run, interleaved, reporting the median of several repeats and
the ratios shlo/XLA and shlo/numpy (below 1 means shlo is faster).

  .venv/bin/python bench/cpu_calls.py [--repeats 7]

Cases: a tiny add (calling overhead dominates), a 1M-element elementwise
chain, a 256x256 matmul and a reduction. The default strategy emits scalar
loops; performance work belongs to its own issue.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
import shlo
from jax import export
from timing import seconds_per_call

CASES: dict[str, tuple[Callable[..., object], list[np.ndarray]]] = {
    "add 4xf32": (lambda a, b: a + b, [np.ones(4, np.float32), np.ones(4, np.float32)]),
    "tanh(a*b+1) 1M f32": (
        lambda a, b: jnp.tanh(a * b + 1),
        [np.linspace(-1, 1, 1 << 20, dtype=np.float32)] * 2,
    ),
    "matmul 256x256 f32": (
        lambda a, b: a @ b,
        [np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)] * 2,
    ),
    "sum 1024x1024 f32 axis 1": (
        lambda a: a.sum(axis=1),
        [np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)],
    ),
}
NUMPY = {
    "add 4xf32": lambda a, b: a + b,
    "tanh(a*b+1) 1M f32": lambda a, b: np.tanh(a * b + 1),
    "matmul 256x256 f32": lambda a, b: a @ b,
    "sum 1024x1024 f32 axis 1": lambda a: a.sum(axis=1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'case':28} {'shlo us':>10} {'xla us':>10} {'numpy us':>10} "
        f"{'shlo/xla':>9} {'shlo/np':>8}"
    )
    for name, (fn, inputs) in CASES.items():
        jitted = jax.jit(fn)
        module = export.export(jitted, platforms=["cpu"])(*inputs).mlir_module()
        exe = shlo.compile(str(module))
        np.testing.assert_allclose(exe(*inputs), jitted(*inputs), rtol=1e-4, atol=1e-3)
        device_inputs = [jax.device_put(x) for x in inputs]
        runs = {"shlo": [], "xla": [], "numpy": []}
        for _ in range(args.repeats):
            runs["shlo"].append(seconds_per_call(lambda: exe(*inputs)))
            runs["xla"].append(seconds_per_call(lambda: jitted(*device_inputs).block_until_ready()))
            runs["numpy"].append(seconds_per_call(lambda: NUMPY[name](*inputs)))
        shlo_s, xla_s, np_s = (statistics.median(runs[k]) for k in ("shlo", "xla", "numpy"))
        print(
            f"{name:28} {shlo_s * 1e6:10.1f} {xla_s * 1e6:10.1f} {np_s * 1e6:10.1f} "
            f"{shlo_s / xla_s:9.2f} {shlo_s / np_s:8.2f}"
        )


if __name__ == "__main__":
    main()
