"""Matrix products and convolutions with the vectorize-matmul/-conv recipes, against XLA and numpy.

Measured in one run, interleaved: each round times every variant once, and the
best round is reported (the machine is shared, so the minimum is the least
disturbed measurement). Ratios are shlo/XLA and shlo/numpy time (below 1 means
shlo is faster); shlo runs on 1 and on 2 threads.

  .venv/bin/python bench/matmul_recipe.py [--repeats 5] [--threads 1,2] [--case matmul]
      [--clock process]

``--clock process`` measures the CPU time of the whole process per call (all
its threads) instead of the elapsed time: on a loaded machine it still shows
how much work each version does, though not how long a caller waits.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np
import shlo
from jax import export
from shlo.backends.cpu.pipeline import VECTORIZED, CpuPipeline
from timing import seconds_per_call


def _f32(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def _conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


# name: (jax function, inputs, numpy function or None)
CASES: dict[str, tuple[Callable[..., object], list[np.ndarray], Callable[..., object] | None]] = {
    "matmul 1024x1024x1024": (jax.numpy.matmul, [_f32(1024, 1024), _f32(1024, 1024)], np.matmul),
    "mlp 256x1024 @ 1024x4096": (jax.numpy.matmul, [_f32(256, 1024), _f32(1024, 4096)], np.matmul),
    "matmul 512x512x512": (jax.numpy.matmul, [_f32(512, 512), _f32(512, 512)], np.matmul),
    "batch_matmul 8x512x64x512": (
        jax.numpy.matmul,
        [_f32(8, 512, 64), _f32(8, 64, 512)],
        np.matmul,
    ),
    "conv 1x56x56x64 3x3x64x64 SAME": (_conv, [_f32(1, 56, 56, 64), _f32(3, 3, 64, 64)], None),
}


def cpu_seconds_per_call(fn: Callable[[], object], budget: float = 0.2) -> float:
    """Process CPU time per call of ``fn`` (every thread), after one warm-up."""
    fn()
    calls, start, wall = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - wall < budget or calls == 0:
        fn()
        calls += 1
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--case", default="", help="only the cases whose name contains this")
    parser.add_argument("--clock", choices=("wall", "process"), default="wall")
    args = parser.parse_args()
    measure = seconds_per_call if args.clock == "wall" else cpu_seconds_per_call
    threads = [int(t) for t in args.threads.split(",")]
    shlo_columns = [f"shlo {t}T ms" for t in threads]
    print(
        f"{'case':32} "
        + " ".join(f"{c:>11}" for c in shlo_columns)
        + f" {'xla ms':>8} {'numpy ms':>9} "
        + " ".join(f"{f'{t}T/xla':>7} {f'{t}T/np':>6}" for t in threads)
    )
    for name, (fn, inputs, numpy_fn) in CASES.items():
        if args.case not in name:
            continue
        jitted = jax.jit(fn)
        module = str(export.export(jitted, platforms=["cpu"])(*inputs).mlir_module())
        want = np.asarray(jitted(*inputs))
        calls: dict[str, Callable[[], object]] = {}
        for t in threads:
            exe = shlo.compile(module, pipeline=CpuPipeline(strategy=VECTORIZED, threads=t))
            np.testing.assert_allclose(exe(*inputs), want, rtol=1e-4, atol=1e-3)
            calls[f"shlo {t}T ms"] = lambda exe=exe: exe(*inputs)
        device_inputs = [jax.device_put(x) for x in inputs]
        calls["xla"] = lambda: jitted(*device_inputs).block_until_ready()
        if numpy_fn is not None:
            calls["numpy"] = lambda: numpy_fn(*inputs)
        best = {key: float("inf") for key in calls}
        for _ in range(args.repeats):
            for key, call in calls.items():
                best[key] = min(best[key], measure(call))
        numpy_s = best.get("numpy", float("nan"))
        print(
            f"{name:32} "
            + " ".join(f"{best[c] * 1e3:11.3f}" for c in shlo_columns)
            + f" {best['xla'] * 1e3:8.3f} {numpy_s * 1e3:9.3f} "
            + " ".join(
                f"{best[c] / best['xla']:7.2f} {best[c] / numpy_s:6.2f}" for c in shlo_columns
            )
        )


if __name__ == "__main__":
    main()
