"""Whether a byte model is bound by memory or by arithmetic: its compute floor against a copy.

A byte model (softmax, the elementwise chain, layernorm, reduce_sum) can only
move its bytes at the copy's speed if its arithmetic keeps up. This compiles
each one at the bench's size, and on two slices of its first argument that
fit in the cores' L2 caches (the same rows, fewer of them: about 128K and 64K
elements, both large enough to be split over the threads), all on the same
threads. The difference of the slices' times over the difference of their
sizes is the time per element without the call's fixed cost (the threads'
start among it); times the full size, it is the compute floor, the time the
arithmetic alone takes on those threads. The slices once ran on one thread,
their time divided by the thread count: that assumed two threads run twice
as fast as one, and on the bench's machine they run the elementwise chain
1.5x as fast (its floor came out at 0.59 ms for 0.77). The full model, the
slices and a copy of the model's bytes (``bench.peak.same_bytes_copy``) are
timed in the same interleaved rounds, each after an idle pause and 20 ms
of untimed calls, as in ``python -m bench``. The last column is the most a model
can reach of the copy's speed when its arithmetic runs at the floor:
copy / max(copy, floor).

  .venv/bin/python -m bench.compute_floor [--only softmax,elementwise] [--repeats 15] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np
import shlo
from jax import export
from shlo.backends.cpu.pipeline import default_threads

from bench import models, peak
from bench.__main__ import MIN_COPY_BYTES
from bench.timing import untimed_calls

# About 512 KB of f32 in the larger slice: in two cores' L2 caches with its
# result; the smaller one, half of it, still gets a thread per core
# (plan_vector_codegen.MIN_ELEMENTS_PER_THREAD).
SLICE_ELEMENTS = 1 << 17
# Each slice is called in a loop of at least this long.
SLICE_SECONDS = 2e-3


def sliced(args: tuple[np.ndarray, ...], elements: int) -> tuple[np.ndarray, ...]:
    """The args with the first one cut to about ``elements`` along its first axis."""
    first, *rest = args
    rows = max(1, elements // math.prod(first.shape[1:]))
    return (np.ascontiguousarray(first[:rows]), *rest)


def compiled(fn: Callable, args: tuple[np.ndarray, ...], threads: int) -> Callable[[], object]:
    serialized = export.export(jax.jit(fn), platforms=["cpu"])(*args).mlir_module_serialized
    executable = shlo.compile(serialized, threads=threads)
    return lambda: executable(*args)


def seconds(call: Callable[[], object], calls: int, settle: float) -> float:
    """Seconds per call of ``calls`` calls in a row, after an idle pause and a warm-up."""
    time.sleep(settle)
    untimed_calls(call)
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def measure(
    name: str, threads: int, repeats: int, settle: float, quick: bool = False
) -> dict[str, float] | None:
    """The medians and the floor; None for a model too small for the copy to time bytes.

    ``quick``: the bench's small sizes, whatever their bytes (a check that it runs).
    """
    model = models.BUILDERS[name](quick)
    if model.work < MIN_COPY_BYTES and not quick:
        return None
    args = tuple(np.asarray(a) for a in model.args)
    large = sliced(args, SLICE_ELEMENTS)
    small = sliced(args, large[0].size // 2)
    if small[0].size == large[0].size:
        raise SystemExit(f"{name}: its first argument has a single row, which cannot be sliced")
    calls = {
        "full": compiled(model.fn, args, threads),
        "large": compiled(model.fn, large, threads),
        "small": compiled(model.fn, small, threads),
        "copy": peak.same_bytes_copy(model.work, threads),
    }
    if calls["copy"] is None:
        raise SystemExit("no C compiler: the copy cannot be timed")
    in_a_row = {kind: 1 for kind in calls}
    for kind in ("large", "small"):
        in_a_row[kind] = max(1, round(SLICE_SECONDS / seconds(calls[kind], 3, 0.0)))
    samples: dict[str, list[float]] = {kind: [] for kind in calls}
    for _ in range(repeats):
        for kind, call in calls.items():
            samples[kind].append(seconds(call, in_a_row[kind], settle))
    median = {kind: statistics.median(values) for kind, values in samples.items()}
    per_element = (median["large"] - median["small"]) / (large[0].size - small[0].size)
    return {
        "full_ms": median["full"] * 1e3,
        "copy_ms": median["copy"] * 1e3,
        "slice_ns_per_element": per_element * 1e9,
        "floor_ms": per_element * args[0].size * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated byte models (default: all)")
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--settle", type=float, default=0.25, help="idle seconds before a call")
    parser.add_argument("--quick", action="store_true", help="the bench's small sizes")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(models.BYTE_MODELS)
    print(f"threads {args.threads}, medians of {args.repeats} interleaved rounds")
    print(
        "| model | shlo ms | copy ms | % of copy | all threads, in cache (ns/element) "
        "| compute floor ms | best % of copy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        m = measure(name, args.threads, args.repeats, args.settle, args.quick)
        if m is None:
            print(f"| {name} | below {MIN_COPY_BYTES} bytes: a copy times its start, not bytes |")
            continue
        best = 100 * m["copy_ms"] / max(m["copy_ms"], m["floor_ms"])
        print(
            f"| {name} | {m['full_ms']:.3f} | {m['copy_ms']:.3f} "
            f"| {100 * m['copy_ms'] / m['full_ms']:.0f}% | {m['slice_ns_per_element']:.3f} "
            f"| {m['floor_ms']:.3f} | {best:.0f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
