"""Compile time against program size: shlo.compile and XLA (jax.jit) on elementwise chains.

Each program is a chain of n adds on one f32 vector (``x = x + a`` n times),
exported with jax.export and compiled by shlo (isolated, as by default) and
by XLA (``jax.jit(fn).lower(...).compile()``, a fresh function each time so
nothing is cached), in the same run. It prints seconds, microseconds per op
and the growth from one size to the next: linear compile time keeps the
per-op cost flat.

  .venv/bin/python bench/compile_time.py [--sizes 1000,2000,4000,10000] [--width 1024]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np
import shlo
from jax import export


def chain(n: int):
    def fn(x, a):
        for _ in range(n):
            x = x + a
        return x

    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,10000")
    parser.add_argument("--width", type=int, default=1024)
    args = parser.parse_args()
    x = np.zeros(args.width, np.float32)
    a = np.ones(args.width, np.float32)
    print("| ops | shlo s | xla s | shlo/xla | shlo us/op | xla us/op |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (int(size) for size in args.sizes.split(",")):
        fn = chain(n)
        serialized = export.export(jax.jit(fn), platforms=["cpu"])(x, a).mlir_module_serialized
        start = time.perf_counter()
        executable = shlo.compile(serialized)
        shlo_seconds = time.perf_counter() - start
        np.testing.assert_array_equal(executable(x, a), np.full_like(x, n))
        lowered = jax.jit(chain(n)).lower(x, a)  # tracing is not compile time
        start = time.perf_counter()
        lowered.compile()
        xla_seconds = time.perf_counter() - start
        print(
            f"| {n} | {shlo_seconds:.2f} | {xla_seconds:.2f} | {shlo_seconds / xla_seconds:.2f} "
            f"| {shlo_seconds / n * 1e6:.0f} | {xla_seconds / n * 1e6:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
