"""The machine's peak: FMA throughput and copy bandwidth, measured on all cores.

``bench/peak.c`` is compiled at run time with ``cc -O3 -march=native
-fopenmp`` and called through ctypes. Without a C compiler (or OpenMP) the
numbers are numpy estimates (a large float32 matmul and ``np.copyto``), which
understate the peak; ``method`` says which one was used.

With ``--target cuda`` the GPU's peak is measured with jax instead
(``measure_gpu``): a fused elementwise copy and a fused chain of FMAs.
"""

from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SOURCE = Path(__file__).with_name("peak.c")
# Two arrays this size (source and destination) are far larger than any cache.
COPY_FLOATS = 32 << 20  # 128 MiB per array
# The best of many short runs: on a shared machine a long run is always
# sliced by other processes, a short one often is not. 2^16 iterations of 16
# chains take about 0.3 ms on a 4 GHz AVX-512 core.
FMA_ITERATIONS = 1 << 16
FMA_RUNS = 1000
FMA_SECONDS = 1.0
# 2 MiB chunks: about 0.1 ms each at 40 GB/s.
COPY_CHUNK = 1 << 19
COPY_PASSES = 20
COPY_SECONDS = 1.0
# The GPU (measure_gpu): a 256 MiB f32 array for the copy, far larger than
# the L2 cache; 256 FMAs on each of 64M elements, compute-bound. Each run
# chains GPU_CALLS calls, dispatched while the previous one computes, so jax's
# dispatch time does not count; the best of GPU_RUNS runs after a warm-up.
GPU_COPY_FLOATS = 64 << 20
GPU_FMA_FLOATS = 64 << 20
GPU_FMA_STEPS = 256
GPU_CALLS = 5
GPU_RUNS = 10


@dataclass
class Peak:
    fma_gflops: float
    copy_gbps: float
    threads: int  # CPU threads; on a GPU its streaming multiprocessors (0: unknown)
    method: str  # "cc -O3 -march=native -fopenmp", "numpy estimate (...)" or "jax on <GPU>"


def _compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def measure(threads: int) -> Peak:
    compiler = _compiler()
    if compiler is not None:
        try:
            return _measure_c(compiler, threads)
        except (OSError, subprocess.SubprocessError) as error:
            reason = f"C kernel failed: {str(error).splitlines()[0][:80]}"
    else:
        reason = "no C compiler"
    return _measure_numpy(threads, reason)


_FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]


@functools.cache
def _library(compiler: str) -> ctypes.CDLL:
    """``peak.c`` compiled and loaded, once per process."""
    with tempfile.TemporaryDirectory(prefix="shlo-bench-peak-") as tmp:
        library = Path(tmp) / "peak.so"
        subprocess.run(
            [compiler, *_FLAGS, str(SOURCE), "-o", str(library)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        lib = ctypes.CDLL(str(library))
    lib.fma_gflops.restype = ctypes.c_double
    lib.fma_gflops.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.c_int, ctypes.c_double]
    lib.copy_gbps.restype = ctypes.c_double
    lib.copy_gbps.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_long,
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_double,
    ]
    return lib


def _measure_c(compiler: str, threads: int) -> Peak:
    lib = _library(compiler)
    fma = lib.fma_gflops(threads, FMA_ITERATIONS, FMA_RUNS, FMA_SECONDS)
    src = np.ones(COPY_FLOATS, np.float32)
    dst = np.zeros_like(src)
    # All threads, or one thread when that is faster: on a loaded machine the
    # threads may never run at the same time, and all cores together move at
    # least what one core does.
    copy = max(
        lib.copy_gbps(
            t, dst.ctypes.data, src.ctypes.data, src.size, COPY_CHUNK, COPY_PASSES, COPY_SECONDS
        )
        for t in {threads, 1}
    )
    return Peak(fma, copy, threads, f"{Path(compiler).name} {' '.join(_FLAGS[:3])}")


def same_bytes_copy(nbytes: float, threads: int) -> Callable[[], object] | None:
    """A call that copies one array to another on ``threads`` threads, moving ``nbytes``.

    The floor for a kernel that reads and writes that many bytes. The bench
    times it interleaved with the systems on each byte-bound model, so that
    it meets the same state of the machine: its memory bandwidth moves by
    1.5x from minute to minute (whole copies of 2 x 128 MiB: 37 GB/s in one
    minute, 60 GB/s in the next), and a peak measured once at the start
    does not follow. Arrays that fit in a cache make the copy faster, as
    they make the model. None without a C compiler.
    """
    compiler = _compiler()
    if compiler is None:
        return None
    try:
        lib = _library(compiler)
    except (OSError, subprocess.SubprocessError):
        return None
    floats = max(int(nbytes) // 8, 1)  # read once, written once
    src = np.ones(floats, np.float32)
    dst = np.zeros_like(src)

    def copy() -> object:
        # One chunk of the whole array, one pass: a plain parallel copy.
        return lib.copy_gbps(threads, dst.ctypes.data, src.ctypes.data, floats, floats, 1, 1e9)

    return copy


def _measure_numpy(threads: int, reason: str) -> Peak:
    a = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    best = min(_seconds(lambda: a @ a) for _ in range(3))
    src = np.ones(COPY_FLOATS, np.float32)
    dst = np.zeros_like(src)
    copy_s = min(_seconds(lambda: np.copyto(dst, src)) for _ in range(3))
    return Peak(
        fma_gflops=2 * 2048**3 / best / 1e9,
        copy_gbps=2 * src.nbytes / copy_s / 1e9,
        threads=threads,
        method=f"numpy estimate ({reason}): float32 matmul 2048^3 and np.copyto",
    )


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_gpu(
    device: Any, floats: int = GPU_COPY_FLOATS, fma_floats: int = GPU_FMA_FLOATS
) -> Peak:
    """The jax GPU ``device``'s copy bandwidth (bytes read + written) and f32 FMA throughput.

    The copy is a jitted ``x + 1.0``; the FMA peak a jitted chain of
    GPU_FMA_STEPS ``y * a + b`` (unrolled when traced, so XLA fuses it into
    one kernel; ``a`` and ``b`` are arguments, so nothing folds), 2 flops each.
    """
    import jax
    import numpy as np

    add_one = jax.jit(lambda x: x + np.float32(1.0))
    x = jax.device_put(np.zeros(floats, np.float32), device)
    copy_s = _best_gpu_seconds(add_one, x)
    del x

    def fma_chain(y, a, b):
        for _ in range(GPU_FMA_STEPS):
            y = y * a + b
        return y

    # y stays 1.0: no overflow, no denormals.
    scalars = jax.device_put((np.float32(0.5), np.float32(0.5)), device)
    fma = jax.jit(fma_chain)
    y = jax.device_put(np.ones(fma_floats, np.float32), device)
    fma_s = _best_gpu_seconds(lambda v: fma(v, *scalars), y)
    return Peak(
        fma_gflops=2 * GPU_FMA_STEPS * fma_floats / fma_s / 1e9,
        copy_gbps=2 * 4 * floats / copy_s / 1e9,
        threads=int(getattr(device, "core_count", 0) or 0),
        method=f"jax on {device.device_kind}",
    )


def _best_gpu_seconds(fn, x) -> float:
    """Best seconds per call of ``fn`` over GPU_RUNS runs of GPU_CALLS chained calls."""
    fn(x).block_until_ready()  # compiles and warms up
    best = float("inf")
    for _ in range(GPU_RUNS):
        y = x
        start = time.perf_counter()
        for _ in range(GPU_CALLS):
            y = fn(y)
        y.block_until_ready()
        best = min(best, (time.perf_counter() - start) / GPU_CALLS)
    return best
