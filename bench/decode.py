"""The matrix products of a decoding step against XLA and numpy: few rows, weights in memory.

A decoding step multiplies one token per sequence by every weight of the
model, so its time is reading the weights from memory (they exceed the
32 MiB L3 cache). Programs exported from jax, checked against jax.jit and
timed in interleaved rounds in one process:

- ``mlp m=...``: x[m, 512] through ten (512 x 1408, 1408 x 512) weight pairs
  with tanh and a residual (58 MB), for m = 1, 2, 4 and 8 rows;
- ``tied_output``: x[2, 768] @ wte[50257, 768].T, GPT-2's tied output
  layer (154 MB), whose weight is used transposed.

  .venv/bin/python -m bench.decode [--repeats 9] [--quick]

It prints median ms, the weights' GB/s and the ratio to XLA (below 1:
shlo is faster). ``--quick`` runs tiny sizes once: it checks that the
script works and the results match, not their speed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np

from bench import models
from bench.systems import Case, compare, prepare_shlo, prepare_xla
from bench.timing import interleaved_medians

# A program, its arguments (the weights after the first) and numpy's version.
Program = tuple[Callable[..., Any], tuple[Any, ...], Callable[[], object]]


def mlp(rows: int, width: int, hidden: int, pairs: int) -> Program:
    weights = tuple(
        models.normal(shape, seed=i) * 0.03
        for i in range(pairs)
        for shape in ((width, hidden), (hidden, width))
    )
    x = models.normal((rows, width))

    def forward(x, weights, tanh=jnp.tanh):
        for up, down in zip(weights[::2], weights[1::2]):
            x = x + tanh(x @ up) @ down
        return x

    return forward, (x, weights), lambda: forward(x, weights, np.tanh)


def tied_output(vocabulary: int, width: int) -> Program:
    x, table = models.normal((2, width)), models.normal((vocabulary, width), seed=1)
    return (lambda x, table: x @ table.T), (x, table), lambda: x @ table.T


def programs(quick: bool) -> dict[str, Program]:
    if quick:
        return {"mlp m=2": mlp(2, 32, 48, 2), "tied_output": tied_output(1000, 64)}
    found = {f"mlp m={rows}": mlp(rows, 512, 1408, 10) for rows in (1, 2, 4, 8)}
    return {**found, "tied_output": tied_output(50257, 768)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round")
    options = parser.parse_args(argv)
    repeats, budget = (1, 0.01) if options.quick else (options.repeats, 0.3)
    print("| program | weights MB | shlo ms | XLA ms | numpy ms | shlo GB/s | shlo / XLA |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (fn, args, numpy_fn) in programs(options.quick).items():
        model = models.Model(name, "", fn, args, work=None, unit="flop")
        case = Case.export(model)
        shlo, xla = prepare_shlo(case, None), prepare_xla(case)
        for system, outputs in (("shlo", shlo.outputs), ("numpy", [numpy_fn()])):
            problem, _ = compare(outputs, xla.outputs, model.rtol)
            if problem:
                raise SystemExit(f"{name}: {system} differs from jax.jit: {problem}")
        shlo_s, xla_s, numpy_s = interleaved_medians(
            [shlo.call, xla.call, numpy_fn], repeats, budget
        )
        megabytes = sum(np.asarray(a).nbytes for a in jax.tree_util.tree_leaves(args[1:])) / 1e6
        print(
            f"| {name} | {megabytes:.3g} | {shlo_s * 1e3:.3g} | {xla_s * 1e3:.3g}"
            f" | {numpy_s * 1e3:.3g} | {megabytes / 1e3 / shlo_s:.1f} | {shlo_s / xla_s:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
