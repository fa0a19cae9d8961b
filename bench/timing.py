"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable


def seconds_per_call(fn: Callable[[], object], budget: float = 0.2) -> float:
    """Mean time per call of ``fn`` over ``budget`` seconds of calls, after one warm-up."""
    fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        fn()
        calls += 1
    return (time.perf_counter() - start) / max(calls, 1)
