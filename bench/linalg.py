"""jax.numpy.linalg and jax.scipy.linalg on the CPU against XLA and numpy.

On the CPU, jax calls LAPACK (``lapack_*_ffi`` custom calls); shlo compiles
those calls from StableHLO ops (passes/decompose/lapack_handlers.py), blocked
as LAPACK is: LU (``solve``, ``inv``, ``lu_factor``), Cholesky and the
triangular solves. Programs exported from jax, checked against jax.jit and
timed in interleaved rounds in one process, f32:

- ``lu_factor n``, ``solve n`` (8 right-hand columns), ``inv n``;
- ``cholesky n`` of a positive definite matrix;
- ``solve_triangular n`` (64 right-hand columns, lower);
- ``solve batch=8 n``: eight systems at once;
- ``eigvalsh n`` and ``svdvals n`` (singular values of an n x n matrix),
  up to n = 256: Jacobi in StableHLO, far slower than LAPACK.

  .venv/bin/python -m bench.linalg [--sizes 256,512] [--repeats 7] [--quick]

It prints median ms and the ratio to XLA (below 1: shlo is faster).
``--quick`` runs one tiny size once: it checks that the script works and
the results match, not their speed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import scipy.linalg

from bench import models
from bench.systems import Case, compare, prepare_shlo, prepare_xla
from bench.timing import interleaved_medians

# Jacobi eigenvalues and singular values take seconds above this size.
JACOBI_MAX = 256

# A program, its arguments and numpy's (or scipy's) version.
Program = tuple[Callable[..., Any], tuple[Any, ...], Callable[[], object]]


def _general(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    # Diagonally weighted so that the solves are well conditioned.
    return models.normal((*batch, n, n)) + np.float32(n**0.5) * np.eye(n, dtype=np.float32)


def programs(n: int) -> dict[str, Program]:
    a, b = _general(n), models.normal((n, 8), seed=1)
    spd = (lambda m: m @ m.T / n + np.eye(n, dtype=np.float32))(models.normal((n, n), seed=2))
    lower, rhs = np.tril(a), models.normal((n, 64), seed=3)
    batched, batched_b = _general(n, (8,)), models.normal((8, n, 4), seed=4)
    jacobi: dict[str, Program] = {}
    if n <= JACOBI_MAX:
        jacobi = {
            f"eigvalsh {n}": (jnp.linalg.eigvalsh, (spd,), lambda: np.linalg.eigvalsh(spd)),
            f"svdvals {n}": (
                lambda m: jnp.linalg.svd(m, compute_uv=False),
                (a,),
                lambda: np.linalg.svd(a, compute_uv=False),
            ),
        }
    return {
        f"lu_factor {n}": (jsl.lu_factor, (a,), lambda: scipy.linalg.lu_factor(a)),
        f"solve {n}": (jnp.linalg.solve, (a, b), lambda: np.linalg.solve(a, b)),
        f"inv {n}": (jnp.linalg.inv, (a,), lambda: np.linalg.inv(a)),
        f"cholesky {n}": (jnp.linalg.cholesky, (spd,), lambda: np.linalg.cholesky(spd)),
        f"solve_triangular {n}": (
            lambda t, y: jsl.solve_triangular(t, y, lower=True),
            (lower, rhs),
            lambda: scipy.linalg.solve_triangular(lower, rhs, lower=True),
        ),
        f"solve batch=8 {n}": (
            jnp.linalg.solve,
            (batched, batched_b),
            lambda: np.linalg.solve(batched, batched_b),
        ),
        **jacobi,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="64,256,512")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="one tiny size, one round")
    options = parser.parse_args(argv)
    sizes = [40] if options.quick else [int(s) for s in options.sizes.split(",")]
    repeats, budget = (1, 0.01) if options.quick else (options.repeats, 0.3)
    print("| program | shlo ms | XLA ms | numpy ms | shlo / XLA | compile s shlo / XLA |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in sizes:
        for name, (fn, args, numpy_fn) in programs(n).items():
            # Factorizations round differently from LAPACK's: compare at 1e-3
            # of each output's largest magnitude (pivots exactly).
            model = models.Model(name, "", fn, args, work=None, unit="flop", rtol=1e-3)
            case = Case.export(model)
            shlo, xla = prepare_shlo(case, None), prepare_xla(case)
            problem, _ = compare(shlo.outputs, xla.outputs, model.rtol)
            if problem:
                raise SystemExit(f"{name}: shlo differs from jax.jit: {problem}")
            shlo_s, xla_s, numpy_s = interleaved_medians(
                [shlo.call, xla.call, numpy_fn], repeats, budget
            )
            print(
                f"| {name} | {shlo_s * 1e3:.3g} | {xla_s * 1e3:.3g} | {numpy_s * 1e3:.3g}"
                f" | {shlo_s / xla_s:.2f} | {shlo.compile_s:.2f} / {xla.compile_s:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
