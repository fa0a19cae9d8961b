"""Real shape-polymorphic JAX exports, shared by the pytest and lit tests.

Each `Case` is a jitted function exported by ``jax.export`` with symbolic
dimensions: the module has a @main wrapper that checks the shape assertions
and calls @_wrapped_jax_export_main with the dimension variables as leading
``tensor<i32>`` arguments. The exports are written here, with the pinned jax
(0.10.2), never checked in, so the tests follow what jax really emits.

As a script it prints one case for lit:

  python jax_exports.py attention               # module text (with locations)
  python jax_exports.py attention --serialized  # portable artifact bytes
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

Sizes = Mapping[str, int]


@dataclass(frozen=True)
class Case:
    """One export: ``fn`` over arguments whose shapes use the symbols in ``args``.

    ``args`` holds one ``(spec, dtype)`` per argument, the spec in
    ``jax.export.symbolic_shape`` syntax restricted to symbol names and integers
    ("b, 4, s"), so concrete shapes follow by substitution. ``sizes`` are the
    two concrete size choices the tests refine to.
    """

    name: str
    fn: Callable[..., Any]
    args: tuple[tuple[str, Any], ...]
    sizes: tuple[dict[str, int], ...]
    # Why shlo cannot refine this export yet; the tests expect the failure.
    known_failure: str | None = None

    def shapes(self, sizes: Sizes) -> list[tuple[int, ...]]:
        """The concrete argument shapes for ``sizes``."""
        return [concrete_shape(spec, sizes) for spec, _ in self.args]

    def inputs(self, sizes: Sizes, seed: int = 0) -> list[np.ndarray]:
        """Deterministic numpy arguments of the concrete shapes for ``sizes``."""
        rng = np.random.default_rng(seed)
        arrays = []
        for shape, (_, dtype) in zip(self.shapes(sizes), self.args):
            if np.issubdtype(dtype, np.integer):
                arrays.append(rng.integers(-8, 8, size=shape).astype(dtype))
            else:
                arrays.append(rng.standard_normal(shape).astype(dtype))
        return arrays

    def arg_types(self, sizes: Sizes) -> list[tuple[tuple[int, ...], Any]]:
        """``(shape, dtype)`` pairs for ``shlo.refine``."""
        return [(shape, dtype) for shape, (_, dtype) in zip(self.shapes(sizes), self.args)]

    def result_shapes(self, sizes: Sizes) -> list[jax.ShapeDtypeStruct]:
        """What jax itself computes for the concrete argument shapes."""
        structs = [jax.ShapeDtypeStruct(s, d) for s, (_, d) in zip(self.shapes(sizes), self.args)]
        return jax.tree_util.tree_leaves(jax.eval_shape(self.fn, *structs))

    def export(self) -> export.Exported:
        return export_case(self.name)


def concrete_shape(spec: str, sizes: Sizes) -> tuple[int, ...]:
    """``"b, 4, s"`` with ``{"b": 2, "s": 7}`` -> ``(2, 4, 7)``."""
    dims = [dim.strip() for dim in spec.split(",") if dim.strip()]
    return tuple(int(dim) if re.fullmatch(r"\d+", dim) else int(sizes[dim]) for dim in dims)


# Fixed weights, captured as constants by the exported programs.
_RNG = np.random.default_rng(1234)
_W1 = _RNG.standard_normal((16, 32)).astype(np.float32)
_B1 = _RNG.standard_normal((32,)).astype(np.float32)
_W2 = _RNG.standard_normal((32, 8)).astype(np.float32)
_GAIN = _RNG.standard_normal((8,)).astype(np.float32)


def mlp(x: jax.Array) -> jax.Array:
    """batch: a two-layer MLP over a symbolic batch ``b``."""
    hidden = jax.nn.relu(x @ _W1 + _B1)
    return jax.nn.log_softmax(hidden @ _W2, axis=-1)


def sequence(x: jax.Array) -> jax.Array:
    """sequence: a layer norm along the symbolic sequence axis of (b, s, 8)."""
    mean = jnp.mean(x, axis=1, keepdims=True)
    var = jnp.var(x, axis=1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * _GAIN


def cumsum(x: jax.Array) -> jax.Array:
    """cumsum: a cumulative sum along ``s``; jax emits @stablehlo.dynamic_reduce_window."""
    return jnp.cumsum(x, axis=1)


def several_symbols(x: jax.Array, w: jax.Array) -> jax.Array:
    """several symbols: (b, n) x (n, k) with three independent symbols."""
    return jnp.tanh(x @ w)


def reshape(x: jax.Array) -> jax.Array:
    """reshape: flatten (b, 4, s) -> (b, 4*s), and back to (b*4, s)."""
    flat = jnp.reshape(x, (x.shape[0], -1))
    rows = jnp.reshape(x, (-1, x.shape[2]))
    return flat * 2.0, rows.sum(axis=1)


def concat(x: jax.Array, y: jax.Array) -> jax.Array:
    """concat: inputs of ``a`` and ``b`` rows, stacked along axis 0 into ``a + b``."""
    both = jnp.concatenate([x, y], axis=0)
    return both - jnp.mean(both, axis=0)


def iota(x: jax.Array) -> jax.Array:
    """iota: positions from ``jnp.arange(n)``, a causal mask and a scaled copy."""
    n = x.shape[0]
    positions = jnp.arange(n, dtype=jnp.int32)
    mask = positions[:, None] >= positions[None, :]
    weighted = x * positions
    return jnp.where(mask, weighted[None, :], 0).sum(axis=1)


def reductions(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """reductions: sum, max, mean and argmax over the symbolic axes of (b, s, 8)."""
    return (
        jnp.sum(x, axis=1),
        jnp.max(x, axis=0),
        jnp.mean(x, axis=(0, 1)),
        jnp.argmax(x, axis=1),
    )


def attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """attention: softmax(q k^T / sqrt(d)) v over batch ``b`` and sequence ``s``."""
    scores = jnp.einsum("bsd,btd->bst", q, k) / math.sqrt(q.shape[-1])
    return jnp.einsum("bst,btd->bsd", jax.nn.softmax(scores, axis=-1), v)


def top_k(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """top_k: the two largest of each row of (b, 5); jax emits a chlo.top_k composite."""
    return jax.lax.top_k(x, 2)


def slicing(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """slicing: first differences and the first element along ``s`` (needs s >= 1)."""
    return x[:, 1:] - x[:, :-1], x[:, 0]


F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)

CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case("batch", mlp, (("b, 16", F32),), ({"b": 3}, {"b": 64})),
        Case("sequence", sequence, (("b, s, 8", F32),), ({"b": 2, "s": 5}, {"b": 1, "s": 33})),
        Case(
            "several_symbols",
            several_symbols,
            (("b, n", F32), ("n, k", F32)),
            ({"b": 3, "n": 5, "k": 7}, {"b": 16, "n": 1, "k": 2}),
        ),
        Case("reshape", reshape, (("b, 4, s", F32),), ({"b": 2, "s": 3}, {"b": 5, "s": 1})),
        Case(
            "concat",
            concat,
            (("a, 3", F32), ("b, 3", F32)),
            ({"a": 2, "b": 5}, {"a": 7, "b": 7}),
        ),
        Case("iota", iota, (("n", I32),), ({"n": 6}, {"n": 1})),
        Case("reductions", reductions, (("b, s, 8", F32),), ({"b": 2, "s": 3}, {"b": 9, "s": 1})),
        Case(
            "attention",
            attention,
            (("b, s, 16", F32),) * 3,
            ({"b": 2, "s": 10}, {"b": 1, "s": 3}),
        ),
        Case("slicing", slicing, (("b, s", F32),), ({"b": 2, "s": 6}, {"b": 3, "s": 2})),
        # A stablehlo.composite whose decomposition is shape-polymorphic too.
        Case("top_k", top_k, (("b, 5", F32),), ({"b": 3}, {"b": 1})),
        # jax emits a @stablehlo.dynamic_reduce_window custom_call for it.
        Case("cumsum", cumsum, (("b, s, 8", F32),), ({"b": 2, "s": 5}, {"b": 1, "s": 33})),
    )
}


@functools.cache
def export_case(name: str) -> export.Exported:
    """Export ``CASES[name]`` with one symbolic scope shared by all arguments."""
    case = CASES[name]
    scope = export.SymbolicScope()
    specs = [
        jax.ShapeDtypeStruct(export.symbolic_shape(spec, scope=scope), dtype)
        for spec, dtype in case.args
    ]
    # Lowered for CPU whatever the host has, so the module is the same everywhere
    # (several platforms would add a platform-index argument to @main).
    return export.export(jax.jit(case.fn), platforms=["cpu"])(*specs)


def module_text(name: str) -> str:
    return str(export_case(name).mlir_module())


def serialized(name: str) -> bytes:
    """The StableHLO portable artifact jax ships (``mlir_module_serialized``)."""
    return bytes(export_case(name).mlir_module_serialized)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(CASES))
    parser.add_argument(
        "--serialized", action="store_true", help="write the portable artifact bytes instead"
    )
    options = parser.parse_args(argv)
    if options.serialized:
        sys.stdout.buffer.write(serialized(options.name))
    else:
        sys.stdout.write(module_text(options.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
