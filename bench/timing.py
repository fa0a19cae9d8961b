"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

# After an idle pause this machine takes about 5 ms of work to reach its
# steady state again: a 0.2 ms layernorm and a same-bytes copy each ran 1.7x
# slower right after 0.25 s of sleep and one untimed call, and at their
# loop-of-calls speed after 5 ms of calls (bench/README.md, "Warm-up").
WARM_UP_S = 0.02


def untimed_calls(fn: Callable[[], object], seconds: float = WARM_UP_S) -> None:
    """Call ``fn`` untimed for ``seconds`` (at least once)."""
    end = time.perf_counter() + seconds
    fn()
    while time.perf_counter() < end:
        fn()


def seconds_per_call(fn: Callable[[], object], budget: float = 0.2) -> float:
    """Mean time per call of ``fn`` over ``budget`` seconds of calls, after one warm-up."""
    fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        fn()
        calls += 1
    return (time.perf_counter() - start) / max(calls, 1)


def interleaved_medians(
    fns: list[Callable[[], object]], repeats: int, budget: float = 0.3
) -> list[float]:
    """Median seconds per call of each of ``fns``, timed in turn ``repeats`` times.

    Interleaving spreads the machine's slow moments over all of them.
    """
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, samples in zip(fns, times):
            samples.append(seconds_per_call(fn, budget))
    return [statistics.median(samples) for samples in times]
