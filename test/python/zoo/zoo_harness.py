"""Export a function with jax.export, compile it with shlo, compare with jax.jit.

Every zoo test calls ``check``: parameters are arguments of the exported
function (closed-over weights would become huge constants), the pytree
arguments are flattened in the order the export expects and only the kept ones
are passed, and every output leaf must match ``jax.jit(fn)(*args)``. Each
program's correctness and timings go to ``RESULTS``; the zoo's conftest prints
them as a table and writes them to ``$SHLO_ZOO_REPORT`` when it is set.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import shlo
from jax import export

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
    error: str = ""


RESULTS: dict[str, Result] = {}


def markdown_table(results: Sequence[Result]) -> str:
    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [
        "| model | correct | compile s | shlo ms | jax ms |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results:
        correct = "yes" if r.correct else f"NO: {r.error}" if r.error else "NO"
        lines.append(
            f"| {r.name} | {correct} | {number(r.compile_s, 1)} "
            f"| {number(r.shlo_ms, 2)} | {number(r.jax_ms, 3)} |"
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
    """Export ``fn(*args)``, compile it with shlo and compare every output with jax.

    With ``polymorphic_shapes`` the export is shape-polymorphic and each of
    ``more_args`` (other shapes) is checked too. Fails on any difference.
    """
    result = Result(name, correct=False)
    RESULTS[name] = result
    try:
        exported = export.export(jax.jit(fn), platforms=["cpu"])(
            *symbolic_specs(args, polymorphic_shapes)
        )
        jitted = jax.jit(fn)
        start = time.perf_counter()
        executable = shlo.compile(exported.mlir_module_serialized)
        for case_args in [args, *more_args]:
            inputs = kept_leaves(exported, case_args)
            got = executable(*inputs)
            # A polymorphic export is compiled for its first shapes on the first call.
            result.compile_s = result.compile_s or time.perf_counter() - start
            got_leaves = list(got) if isinstance(got, tuple) else [got]
            want_leaves = [np.asarray(w) for w in jax.tree_util.tree_leaves(jitted(*case_args))]
            assert len(got_leaves) == len(want_leaves), (
                f"{len(got_leaves)} outputs, expected {len(want_leaves)}"
            )
            for index, (g, w) in enumerate(zip(got_leaves, want_leaves)):
                assert_leaf_close(g, w, rtol, f"{name} output {index}")
        result.correct = True
        inputs = kept_leaves(exported, args)
        result.shlo_ms = ms_per_call(lambda: executable(*inputs))
        result.jax_ms = ms_per_call(lambda: jax.block_until_ready(jitted(*args)))
    except Exception as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        result.error = f"{type(error).__name__}: {first_line}"[:120].replace("|", "/")
        raise


def symbolic_specs(args: Sequence[Any], polymorphic_shapes: Sequence[str | None] | None) -> list:
    """The arguments, or ShapeDtypeStructs with symbolic shapes (one scope for all)."""
    if polymorphic_shapes is None:
        return list(args)
    specs = export.symbolic_args_specs(args, polymorphic_shapes)
    return list(specs)
