"""Export a function with jax.export, compile it with shlo, compare with jax.jit.

Every zoo test calls ``check``: parameters are arguments of the exported
function (closed-over weights would become huge constants), the pytree
arguments are flattened in the order the export expects and only the kept ones
are passed, and every output leaf must match ``jax.jit(fn)(*args)``. Each
program's correctness and timings go to ``RESULTS``, then on its test's report
(the zoo's conftest); test/python/conftest.py prints them as a table, from
every process of a ``pytest -n`` run, and writes them to ``$SHLO_ZOO_REPORT``
when it is set.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import shlo
import shlo.jax
from jax import export
from shlo.compiler import emit
from shlo.dtypes import mlir_element_type
from shlo.ir_utils import tensor_type_text

# Timing stops after this many seconds or calls, whichever comes first:
# shlo's CPU code is scalar loops and the machine is shared.
TIMING_BUDGET_S = 0.3
TIMING_MAX_CALLS = 20


@dataclass
class Result:
    name: str
    correct: bool
    compile_s: float | None = None
    shlo_ms: float | None = None
    jax_ms: float | None = None
    # The architectures whose cubin was made from the program ("" when not tried).
    cuda: str = ""
    # On a machine with a GPU: the program compiled for target="cuda" and run there.
    cuda_correct: bool | None = None
    cuda_ms: float | None = None
    error: str = ""


RESULTS: dict[str, Result] = {}

# Every program the CPU compiles correctly must also compile for CUDA: to PTX
# that ptxas accepts for each of these architectures (no GPU needed).
# SHLO_ZOO_CUDA_ARCHS="" skips it (for example without the cuda extra).
CUDA_ARCHS = [a for a in os.environ.get("SHLO_ZOO_CUDA_ARCHS", "sm_80,sm_90").split(",") if a]


def cuda_toolchain_present() -> bool:
    """llvmlite and ptxas, which the cuda extra installs."""
    if importlib.util.find_spec("llvmlite") is None:
        return False
    from shlo.backends.cuda.ptx import find_ptxas

    return find_ptxas() is not None


def gpu_present() -> bool:
    """A CUDA driver that loads, so target="cuda" code can run here."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def markdown_table(results: Sequence[Result]) -> str:
    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [
        "| model | correct | compile s | shlo ms | jax ms | cuda cubin | cuda run | cuda ms |",
        "|---|---|---:|---:|---:|---|---|---:|",
    ]
    for r in results:
        correct = "yes" if r.correct else f"NO: {r.error}" if r.error else "NO"
        cuda_run = {None: "-", True: "yes", False: "NO"}[r.cuda_correct]
        lines.append(
            f"| {r.name} | {correct} | {number(r.compile_s, 1)} "
            f"| {number(r.shlo_ms, 2)} | {number(r.jax_ms, 3)} | {r.cuda or '-'} "
            f"| {cuda_run} | {number(r.cuda_ms, 3)} |"
        )
    return "\n".join(lines) + "\n"


def ms_per_call(call: Callable[[], Any]) -> float:
    """The fastest of a few calls, in milliseconds (the first call warms up)."""
    call()
    best = float("inf")
    start = time.perf_counter()
    for _ in range(TIMING_MAX_CALLS):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() - start > TIMING_BUDGET_S:
            break
    return best * 1e3


def kept_leaves(exported: export.Exported, args: Sequence[Any]) -> list[np.ndarray]:
    """The flattened arguments the exported module takes, in its order."""
    leaves = jax.tree_util.tree_leaves(tuple(args))
    assert len(leaves) == len(exported.in_avals)
    return [np.asarray(leaves[i]) for i in exported.module_kept_var_idx]


def assert_leaf_close(got: np.ndarray, want: np.ndarray, rtol: float, where: str) -> None:
    """Exact for integers and booleans; floats within rtol of the output's magnitude."""
    assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, expected {want.dtype}"
    if not jnp.issubdtype(want.dtype, jnp.inexact):  # bfloat16 is not a numpy float
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    got64 = got.astype(np.float64)
    want64 = want.astype(np.float64)
    assert np.array_equal(np.isfinite(got64), np.isfinite(want64)), (
        f"{where}: non-finite values differ"
    )
    finite = np.isfinite(want64)
    scale = float(np.max(np.abs(want64[finite]), initial=0.0))
    np.testing.assert_allclose(
        got64[finite], want64[finite], rtol=rtol, atol=rtol * max(scale, 1e-6), err_msg=where
    )


def check(
    name: str,
    fn: Callable[..., Any],
    args: Sequence[Any],
    *,
    rtol: float = 1e-4,
    polymorphic_shapes: Sequence[str | None] | None = None,
    more_args: Sequence[Sequence[Any]] = (),
) -> None:
    """Run ``fn`` through ``shlo.jax.jit`` and compare every output with ``jax.jit``.

    As a jax user would: the arguments are pytrees, ``shlo.jax.jit`` exports
    and compiles. With ``polymorphic_shapes`` the export is shape-polymorphic
    and each of ``more_args`` (other shapes) is checked too. Fails on any
    difference.
    """
    result = Result(name, correct=False)
    RESULTS[name] = result
    try:
        shlo_jitted = shlo.jax.jit(fn, polymorphic_shapes=polymorphic_shapes)
        jitted = jax.jit(fn)
        start = time.perf_counter()
        for case_args in [args, *more_args]:
            got = shlo_jitted(*case_args)
            # Exported and compiled on the first call (for its first shapes).
            result.compile_s = result.compile_s or time.perf_counter() - start
            want = jitted(*case_args)
            assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want), (
                f"output structure {jax.tree_util.tree_structure(got)}, "
                f"expected {jax.tree_util.tree_structure(want)}"
            )
            got_leaves = [np.asarray(g) for g in jax.tree_util.tree_leaves(got)]
            want_leaves = [np.asarray(w) for w in jax.tree_util.tree_leaves(want)]
            for index, (g, w) in enumerate(zip(got_leaves, want_leaves)):
                assert_leaf_close(g, w, rtol, f"{name} output {index}")
        result.correct = True
        result.shlo_ms = ms_per_call(lambda: shlo_jitted(*args))
        result.jax_ms = ms_per_call(lambda: jax.block_until_ready(jitted(*args)))
        exported = shlo_jitted.export(*args)
        inputs = kept_leaves(exported, args)
        compile_for_cuda(exported.mlir_module_serialized, inputs, result)
        if gpu_present():
            want = [np.asarray(w) for w in jax.tree_util.tree_leaves(jitted(*args))]
            run_on_gpu(name, exported.mlir_module_serialized, inputs, want, rtol, result)
    except Exception as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        result.error = f"{type(error).__name__}: {first_line}"[:120].replace("|", "/")
        raise


def compile_for_cuda(module: bytes, inputs: Sequence[np.ndarray], result: Result) -> None:
    """Compile ``module`` for CUDA, specialized to ``inputs``: a cubin per CUDA_ARCHS."""
    if not CUDA_ARCHS or not cuda_toolchain_present():
        return
    arg_types = [tensor_type_text(a.shape, mlir_element_type(a.dtype)) for a in inputs]
    for arch in CUDA_ARCHS:
        cubin = emit(module, "cuda", "cubin", arch=arch, arg_types=arg_types)
        assert cubin.startswith(b"\x7fELF"), f"{arch}: not a cubin"
    result.cuda = "+".join(CUDA_ARCHS)


def run_on_gpu(
    name: str,
    module: bytes,
    inputs: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    rtol: float,
    result: Result,
) -> None:
    """Compile ``module`` for target="cuda", run it on this machine's GPU, compare with ``want``."""
    result.cuda_correct = False
    executable = shlo.compile(module, target="cuda")
    got = executable(*inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want), f"{name} on the GPU: {len(got)} outputs, expected {len(want)}"
    for index, (g, w) in enumerate(zip(got, want)):
        assert_leaf_close(np.asarray(g), w, rtol, f"{name} output {index} on the GPU")
    result.cuda_correct = True
    result.cuda_ms = ms_per_call(lambda: executable(*inputs))
