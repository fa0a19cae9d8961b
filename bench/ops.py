"""Single ops and small compositions of real programs against XLA: the cliffs.

The suite (``python -m bench``) times twelve models; a program built of an
op those do not use can still run many times slower than under XLA (a 3-D
convolution ran 12x, a transposed one 1.7x, a complex matmul 3x, jax's eigh
12,000x). This script keeps such ops measured: each is exported from jax,
checked against jax.jit, and timed with it in interleaved rounds (medians).

  .venv/bin/python -m bench.ops [--only conv3d,segment_sum] [--repeats 7] [--quick]

It prints median ms and the ratio to XLA (below 1: shlo is faster).
``--quick`` runs small sizes once: it checks that the script works and the
results match, not their speed.
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
from jax import lax

from bench import models
from bench.systems import Case, compare, prepare_shlo, prepare_xla
from bench.timing import interleaved_medians

# name -> (function, arguments, relative tolerance) at a size (1: full, small for --quick)
Op = tuple[Callable[..., Any], tuple[Any, ...], float]
# Ops on f64: exported, checked and timed with jax's x64 mode on (off, jax
# computes in f32).
X64_OPS = frozenset({"f64_matmul", "f64_conv"})


def _ints(high: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int32)


def _complex(shape: tuple[int, ...]) -> np.ndarray:
    return (models.normal(shape) + 1j * models.normal(shape, seed=1)).astype(np.complex64)


def _spd(n: int) -> np.ndarray:
    a = models.normal((n, n))
    return a @ a.T / n + np.eye(n, dtype=np.float32)


def _conv(**keywords: Any) -> Callable[..., Any]:
    def conv(x, w):
        return lax.conv_general_dilated(x, w, **keywords)

    return conv


def ops(small: bool) -> dict[str, Op]:
    s = 4 if small else 1  # sizes divided by s for --quick
    hw = 56 // s
    return {
        "conv3d": (
            _conv(
                window_strides=(1, 1, 1),
                padding="SAME",
                dimension_numbers=("NDHWC", "DHWIO", "NDHWC"),
            ),
            (models.normal((1, 16 // s, 32 // s, 32 // s, 16)), models.normal((3, 3, 3, 16, 32))),
            1e-4,
        ),
        "conv_transpose": (
            lambda x, w: lax.conv_transpose(
                x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            ),
            (models.normal((1, 28 // s, 28 // s, 128)), models.normal((3, 3, 128, 64))),
            1e-4,
        ),
        "depthwise3x3": (
            _conv(
                window_strides=(1, 1),
                padding="SAME",
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
                feature_group_count=128,
            ),
            (models.normal((1, hw, hw, 128)), models.normal((3, 3, 1, 128))),
            1e-4,
        ),
        "segment_sum": (
            lambda d, i: jax.ops.segment_sum(d, i, 1000),
            (models.normal((100000 // s, 16)), _ints(1000, (100000 // s,))),
            1e-4,
        ),
        "scatter_add": (
            lambda x, i, u: x.at[i].add(u),
            (
                models.normal((10000, 64)),
                _ints(10000, (4096 // s,)),
                models.normal((4096 // s, 64)),
            ),
            1e-4,
        ),
        "embed_gather": (
            lambda t, i: t[i],
            (models.normal((50257 // s, 768)), _ints(50257 // s, (8, 128))),
            0.0,
        ),
        "complex_matmul": (
            lambda a, b: a @ b,
            (_complex((256 // s, 256)), _complex((256, 256 // s))),
            1e-4,
        ),
        "masked_where": (
            lambda a, x, y: (
                jnp.where((a > 0)[:, None], x, 0.0)
                + jnp.where((a > 0)[:, None], y * 2, 1.0).sum(axis=1, keepdims=True)
            ),
            (
                models.normal((4096 // s,)),
                models.normal((4096 // s, 256)),
                models.normal((4096 // s, 256)),
            ),
            1e-4,
        ),
        "causal_softmax": (
            lambda q, k: jax.nn.softmax(
                jnp.where(jnp.tril(jnp.ones((q.shape[0],) * 2, bool)), q @ k.T / 8, -1e9), -1
            ),
            (models.normal((512 // s, 64)), models.normal((512 // s, 64), seed=1)),
            1e-4,
        ),
        "top_k": (lambda x: lax.top_k(x, 50)[0], (models.normal((8, 50257 // s)),), 0.0),
        "argsort": (lambda x: jnp.argsort(x, -1), (models.normal((64, 1024 // s)),), 0.0),
        "fft": (lambda x: jnp.fft.fft(x), (_complex((64, 4096 // s)),), 1e-4),
        # f64 ops run with jax's x64 mode on (X64_OPS).
        "f64_matmul": (
            lambda a, b: a @ b,
            (
                models.normal((512 // s, 512)).astype(np.float64),
                models.normal((512, 512 // s), seed=1).astype(np.float64),
            ),
            1e-10,
        ),
        "f64_conv": (
            _conv(
                window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            ),
            (
                models.normal((1, hw, hw, 32)).astype(np.float64),
                models.normal((3, 3, 32, 32), seed=1).astype(np.float64),
            ),
            1e-10,
        ),
        "rng_uniform": (
            lambda k: jax.random.uniform(jax.random.key(0), (2048 // s, 2048)) + k,
            (np.float32(0),),
            0.0,
        ),
        "int8_matmul": (
            lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32),
            (
                _ints(200, (512 // s, 512)).astype(np.int8) - np.int8(100),
                _ints(200, (512, 512 // s), seed=1).astype(np.int8) - np.int8(100),
            ),
            0.0,
        ),
        "qr": (
            lambda a: jnp.abs(jnp.linalg.qr(a)[1]),
            (models.normal((256 // s, 128 // s)),),
            1e-3,
        ),
        "slogdet": (lambda a: jnp.linalg.slogdet(a)[1], (_spd(256 // s),), 1e-3),
        "eigvalsh": (jnp.linalg.eigvalsh, (_spd(128 // s),), 1e-3),
        "svdvals": (
            lambda a: jnp.linalg.svd(a, compute_uv=False),
            (models.normal((128 // s, 96 // s)),),
            1e-3,
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated op names")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    options = parser.parse_args(argv)
    table = ops(options.quick)
    names = options.only.split(",") if options.only else list(table)
    unknown = [name for name in names if name not in table]
    if unknown:
        raise SystemExit(f"unknown ops: {', '.join(unknown)} (known: {', '.join(table)})")
    repeats, budget = (1, 0.01) if options.quick else (options.repeats, 0.3)
    print("| op | shlo ms | XLA ms | shlo / XLA | compile s shlo / XLA |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        fn, args, rtol = table[name]
        model = models.Model(name, "", fn, args, work=None, unit="flop", rtol=rtol)
        x64 = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", name in X64_OPS)
        try:
            case = Case.export(model)
            shlo, xla = prepare_shlo(case, None), prepare_xla(case)
            problem, _ = compare(shlo.outputs, xla.outputs, model.rtol)
            if problem:
                raise SystemExit(f"{name}: shlo differs from jax.jit: {problem}")
            shlo_s, xla_s = interleaved_medians([shlo.call, xla.call], repeats, budget)
        finally:
            jax.config.update("jax_enable_x64", x64)
        print(
            f"| {name} | {shlo_s * 1e3:.3g} | {xla_s * 1e3:.3g} | {shlo_s / xla_s:.2f}"
            f" | {shlo.compile_s:.2f} / {xla.compile_s:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
