"""Compile time against program size: shlo.compile and XLA (jax.jit) on elementwise chains.

Each program is a chain of n adds on one f32 vector (``x = x + a`` n times),
exported with jax.export and compiled by shlo (isolated, as by default) and
by XLA (``jax.jit(fn).lower(...).compile()``, a fresh function each time so
nothing is cached), in the same run. It prints seconds, microseconds per op
and the growth from one size to the next: linear compile time keeps the
per-op cost flat. ``--gpt2-layers`` does the same for GPT-2 (transformers
Flax, n_embd 768, seq 128) with that many layers, per layer.

  .venv/bin/python bench/compile_time.py [--sizes 1000,2000,4000,10000] [--width 1024]
  .venv/bin/python bench/compile_time.py --gpt2-layers 1,2,4,8,12
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


def gpt2_compile_times(layer_counts: list[int]) -> None:
    import transformers

    ids = np.zeros((1, 128), np.int32)
    print("| layers | shlo s | xla s | shlo/xla | shlo s/layer | xla s/layer |")
    print("|---:|---:|---:|---:|---:|---:|")
    for layers in layer_counts:
        config = transformers.GPT2Config(n_layer=layers, n_embd=768, n_head=12)
        model = transformers.FlaxGPT2Model(config, seed=0)

        def forward(params, ids, model=model):
            return model(ids, params=params).last_hidden_state

        exported = export.export(jax.jit(forward), platforms=["cpu"])(model.params, ids)
        start = time.perf_counter()
        shlo.compile(exported.mlir_module_serialized)
        shlo_seconds = time.perf_counter() - start
        lowered = jax.jit(forward).lower(model.params, ids)
        start = time.perf_counter()
        lowered.compile()
        xla_seconds = time.perf_counter() - start
        print(
            f"| {layers} | {shlo_seconds:.2f} | {xla_seconds:.2f} | "
            f"{shlo_seconds / xla_seconds:.1f} | {shlo_seconds / layers:.2f} "
            f"| {xla_seconds / layers:.2f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,10000")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--gpt2-layers", help="comma-separated layer counts, e.g. 1,2,4,8,12")
    args = parser.parse_args()
    if args.gpt2_layers:
        gpt2_compile_times([int(n) for n in args.gpt2_layers.split(",")])
        return
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
