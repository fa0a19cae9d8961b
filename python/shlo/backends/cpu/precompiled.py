"""Kernels written in C (``kernels/*.c``), built once per machine and called by generated code.

XLA calls Eigen, compiled with XLA itself, for its matrix products and
convolutions, and YNNPACK for reductions and softmax; shlo's equivalents are
built on first use by the system's C compiler, for this machine's CPU
(``-march=native``), and kept like shlo's other C helpers
(``shlo.c_build.build_once``). ``shlo-call-precompiled-kernels``
makes programs call them, and they need a C compiler anyway: their object
code is loaded by it, or by ``object_loader``, which resolves the calls here.

The kernels take threads from the OpenMP runtime the generated code uses
(libgomp's entry points, which libiomp5 implements), whose addresses the host
gives them when it loads them.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
from pathlib import Path

from shlo.c_build import build_once

MATMUL = "shlo_matmul_f32"
CONV2D = "shlo_conv2d_f32"
REDUCE = "shlo_reduce_f32"
SOFTMAX = "shlo_softmax_f32"
ELEMENTWISE = "shlo_elementwise_f32"
TRANSPOSE = "shlo_transpose_f32"
SYMBOLS = (MATMUL, CONV2D, REDUCE, SOFTMAX, ELEMENTWISE, TRANSPOSE)
# One translation unit, in this order: the convolutions and the row kernels use the
# matmuls' thread entry points and vector types, the elementwise kernel the row
# kernels' vector helpers and exp, the transposes the matmuls' thread entry points.
_SOURCES = tuple(
    Path(__file__).with_name("kernels") / name
    for name in (
        "matmul_f32.c",
        "conv2d_f32.c",
        "rows_f32.c",
        "elementwise_f32.c",
        "transpose_f32.c",
    )
)
_FLAGS = ["-O3", "-march=native", "-fPIC"]


def enabled() -> bool:
    """Whether programs may call the kernels: there is a C compiler to build them, and
    the host has the vectors they are written for, AVX-512 or AVX2 with FMA.

    Their vectors and register tiles take the host's width (LANES in matmul_f32.c):
    16 floats in 32 zmm registers, or 8 in 16 ymm ones. Elsewhere they would split
    through memory, as vectors wider than the host's do (on a Zen 3, 16-lane tiles
    took 534 ms for the 1024^3 matmul against 34 for the generated code).
    """
    from shlo.backends.cpu.runtime import linker

    return linker() is not None and host_suits_kernels()


def host_suits_kernels() -> bool:
    """Whether the host has the vectors the kernels are written for (see ``enabled``)."""
    from shlo.disk_cache import host_has_avx2_fma, host_has_avx512

    return host_has_avx512() or host_has_avx2_fma()


@functools.cache
def source_digest() -> str:
    """A hash of the kernels' source (part of the compile cache's key)."""
    return hashlib.sha256(_joined_sources().encode()).hexdigest()[:16]


def _joined_sources() -> str:
    return "\n".join(source.read_text() for source in _SOURCES)


def _source() -> str:
    # The CPU's name and features are part of the source, so the hash that names the
    # built file (build_once) changes with the machine that -march=native builds for.
    return f"{_joined_sources()}\n/* built for: {_cpu_signature()} */\n"


@functools.cache
def _cpu_signature() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    wanted = [line for line in lines if line.startswith(("model name", "flags"))][:2]
    return hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]


def shared_library_path(driver: str) -> str:
    """The kernels as a shared library (built once per machine)."""
    return build_once(driver, _source(), "kernels.so", ["-shared", *_FLAGS])


def object_path(driver: str) -> str:
    """The kernels as a relocatable object, to join into code compiled ahead of time.
    Their symbols are weak: two such objects link into one program."""
    return build_once(driver, _source(), "kernels.o", ["-c", "-DSHLO_WEAK_KERNELS", *_FLAGS])


@functools.cache
def library() -> ctypes.CDLL:
    """The kernels, loaded, and given the threads of the generated code's OpenMP runtime
    (when there is one; by address: another runtime may be loaded too)."""
    from shlo.backends.cpu.runtime import linker, load_openmp

    driver = linker()
    if driver is None:
        raise RuntimeError("the precompiled kernels need a C compiler")
    # Global: code linked into a shared library (where object_loader declines) finds
    # the kernels when it is loaded.
    kernels = ctypes.CDLL(shared_library_path(driver), mode=ctypes.RTLD_GLOBAL)
    openmp = load_openmp()
    if openmp is not None:
        runtime = ctypes.CDLL(openmp)
        kernels.shlo_kernels_use_openmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        kernels.shlo_kernels_use_openmp(
            ctypes.cast(runtime.GOMP_parallel, ctypes.c_void_p),
            ctypes.cast(runtime.omp_get_thread_num, ctypes.c_void_p),
        )
    return kernels


def uses_kernels(object_code: bytes) -> bool:
    return any(name.encode() in object_code for name in SYMBOLS)
