"""Measure the error, in ULPs, of shlo's f32 math functions against the correctly rounded result.

Usage: python -m shlo.tools.measure_ulp [--functions exp,...] [--stride N] [--libm | --vectorized]
       python -m shlo.tools.measure_ulp --time N [--functions ...]

Compiles ``math.<function>`` over a vector of f32 inputs with shlo (by
default with ``shlo-approximate-math``; ``--libm`` measures the C library
calls instead; ``--vectorized`` compiles with the default, vectorizing
strategy, where the ops are on vectors and exp has a shorter path for vectors
whose lanes are all moderate) and compares it with the float64 result of numpy or scipy,
which is the exact value to about 1e-9 ULP. ``--stride 1`` (the default)
runs every one of the 2^32 bit patterns; ``--stride N`` every N-th, plus the
special values. Special values (NaN, infinities, signed zeros, overflow and
underflow) must match exactly: a mismatch is reported as an infinite error.
``--time N`` times N inputs instead, against the C library and jax.jit.
``--division N`` measures N random quotients of rows divided by a shared
divisor (``x / broadcast(b)``, which ``shlo-reciprocal-division`` computes
with ``1 / b``) through the default pipeline, against the float64 quotient.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable

import numpy as np
import shlo
from scipy import special
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, CpuPipeline

# The float64 reference of each function.
REFERENCES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "erf": special.erf,
}

# The scalar-loop strategy, which runs shlo-approximate-math; LIBM is the same
# without it (a C library call per element), for comparison.
APPROXIMATE = CpuPipeline(strategy=SCALAR_LOOPS)
LIBM = CpuPipeline(
    strategy=dataclasses.replace(
        SCALAR_LOOPS,
        name="libm",
        loop_passes=tuple(p for p in SCALAR_LOOPS.loop_passes if p != "shlo-approximate-math"),
    )
)

# The default pipeline: vector codegen, then shlo-approximate-math on vectors.
VECTORIZED = CpuPipeline()

SPECIAL_VALUES = np.array(
    [
        *(np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0**-149, -(2.0**-149)),
        *(2.0**-126, 88.72283, 88.722839, 88.7228394, 89.0, -87.33654, -103.97, -104.0, -150.0),
        *(9.0, 9.01, -9.01, 3.92, 4.0, -4.0, 1e-8, -1e-8, -0.9999999, 3.4028235e38, -3.4028235e38),
    ],
    np.float32,
)


def function_source(name: str, size: int) -> str:
    """``@main`` applying ``math.<name>`` to each element of a tensor<size x f32>.

    Written as a linalg.generic because StableHLO has no erf (chlo.erf is
    expanded into a polynomial before code generation).
    """
    type_ = f"tensor<{size}xf32>"
    return f"""#map = affine_map<(d0) -> (d0)>
func.func @main(%x: {type_}) -> {type_} {{
  %init = tensor.empty() : {type_}
  %0 = linalg.generic {{indexing_maps = [#map, #map], iterator_types = ["parallel"]}}
      ins(%x : {type_}) outs(%init : {type_}) {{
  ^bb0(%a: f32, %b: f32):
    %y = math.{name} %a : f32
    linalg.yield %y : f32
  }} -> {type_}
  return %0 : {type_}
}}
"""


def compile_function(
    name: str, size: int, approximate: bool = True, vectorized: bool = False
) -> shlo.Executable:
    pipeline = VECTORIZED if vectorized else APPROXIMATE if approximate else LIBM
    return shlo.compile(function_source(name, size), isolate=False, pipeline=pipeline)


def ulp_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the f32 spacing at the correctly rounded ``exact``.

    Where the rounded result is not finite (NaN, +-inf, overflow), or is zero
    (the sign of zero matters), ``got`` must be the same value: 0 if it is, inf if not.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = exact.astype(np.float32)
        spacing = np.spacing(np.abs(rounded)).astype(np.float64)
        errors = np.abs(got.astype(np.float64) - exact) / spacing
    exact_only = ~np.isfinite(rounded) | (rounded == 0) | ~np.isfinite(got)
    same = (got == rounded) & (np.signbit(got) == np.signbit(rounded))
    same |= np.isnan(got) & np.isnan(rounded)
    errors[exact_only] = np.where(same[exact_only], 0.0, np.inf)
    return errors


@dataclasses.dataclass
class Worst:
    """The largest error seen; results equal to the correctly rounded one (at most
    0.5 ULP away) are only counted, which keeps the exhaustive run fast."""

    ulps: float = 0.0
    at: float = 0.0
    got: float = 0.0
    exact: float = 0.0
    count: int = 0  # inputs measured
    misrounded: int = 0  # results other than the correctly rounded one

    def update(self, x: np.ndarray, got: np.ndarray, exact: np.ndarray) -> None:
        with np.errstate(over="ignore"):
            rounded = exact.astype(np.float32)
        differ = got.view(np.uint32) != rounded.view(np.uint32)
        x, got, exact = x[differ], got[differ], exact[differ]
        errors = ulp_errors(got, exact)
        self.count += differ.size
        self.misrounded += int(np.count_nonzero(errors))  # NaN payloads do not count
        if errors.size and errors.max() > self.ulps:
            index = int(np.argmax(errors))
            self.ulps = float(errors[index])
            self.at, self.got, self.exact = float(x[index]), float(got[index]), float(exact[index])


def measure(
    name: str, stride: int, chunk: int, approximate: bool, vectorized: bool = False
) -> Worst:
    function = compile_function(name, chunk, approximate, vectorized)
    reference = REFERENCES[name]
    worst = Worst()

    def run(x: np.ndarray) -> None:
        padded = np.resize(x, chunk) if x.size != chunk else x
        got = function(padded)[: x.size]
        with np.errstate(all="ignore"):
            exact = reference(x.astype(np.float64))
        worst.update(x, got, exact)

    run(SPECIAL_VALUES)
    step = chunk * stride
    for start in range(0, 2**32, step):
        bits = np.arange(start, min(start + step, 2**32), stride, dtype=np.uint64)
        run(bits.astype(np.uint32).view(np.float32))
    return worst


# x / broadcast(b) over rows of DIVISION_COLUMNS lanes, as softmax divides by a row's sum.
DIVISION_COLUMNS = 1024


def division_source(rows: int) -> str:
    shape = f"tensor<{rows}x{DIVISION_COLUMNS}xf32>"
    return f"""
func.func @main(%x: {shape}, %b: tensor<{rows}xf32>) -> {shape} {{
  %lanes = stablehlo.broadcast_in_dim %b, dims = [0] : (tensor<{rows}xf32>) -> {shape}
  %q = stablehlo.divide %x, %lanes : {shape}
  return %q : {shape}
}}
"""


def measure_division(count: int, chunk: int, seed: int = 0) -> Worst:
    """Random normal numerators over divisors of every magnitude the reciprocal takes.

    Divisors are random bit patterns in [2^-126, 2^126), where the pass
    multiplies by ``1 / b``; numerators random normal bit patterns. Results
    that overflow or become subnormal are compared like any others.
    """
    rows = max(chunk // DIVISION_COLUMNS, 1)
    function = shlo.compile(division_source(rows), isolate=False, pipeline=VECTORIZED)
    rng = np.random.default_rng(seed)
    worst = Worst()
    for _ in range(-(-count // (rows * DIVISION_COLUMNS))):
        x_bits = rng.integers(0x00800000, 0x7F800000, (rows, DIVISION_COLUMNS), dtype=np.uint32)
        x_bits |= rng.integers(0, 2, x_bits.shape, dtype=np.uint32) << 31
        b_bits = rng.integers(0x00800000, 0x7E800000, rows, dtype=np.uint32)
        b_bits |= rng.integers(0, 2, rows, dtype=np.uint32) << 31
        x, b = x_bits.view(np.float32), b_bits.view(np.float32)
        got = function(x, b)
        with np.errstate(all="ignore"):
            exact = x.astype(np.float64) / b.astype(np.float64)[:, None]
        worst.update(x.ravel(), got.ravel(), exact.ravel())
    return worst


def best_time(function: Callable[[np.ndarray], object], x: np.ndarray, repeats: int = 5) -> float:
    function(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(x)
        times.append(time.perf_counter() - start)
    return min(times)


def time_functions(names: list[str], size: int) -> None:
    """Milliseconds per call on ``size`` inputs: approximated, C library, jax.jit.

    The three are timed in turn, three rounds, best of each, so that load on
    the machine affects them alike.
    """
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import erf as jax_erf

    jax_functions = {"exp": jnp.exp, "expm1": jnp.expm1, "log": jnp.log}
    jax_functions |= {"log1p": jnp.log1p, "tanh": jnp.tanh, "erf": jax_erf}
    x = (np.random.default_rng(0).standard_normal(size) * 3).astype(np.float32)
    print("| function | approximated | C library | jax.jit | C library / approximated |")
    print("|---|---|---|---|---|")
    for name in names:
        inputs = np.abs(x) if name.startswith("log") else x
        jitted = jax.jit(jax_functions[name])
        device_inputs = jax.numpy.asarray(inputs)
        candidates = {
            "approximated": compile_function(name, size),
            "libm": compile_function(name, size, approximate=False),
            "jax": lambda _, f=jitted, a=device_inputs: f(a).block_until_ready(),
        }
        times = {key: min(best_time(f, inputs) for _ in range(3)) for key, f in candidates.items()}
        ms = {key: f"{t * 1e3:.2f} ms" for key, t in times.items()}
        ratio = times["libm"] / times["approximated"]
        print(f"| {name} | {ms['approximated']} | {ms['libm']} | {ms['jax']} | {ratio:.1f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--functions", default=",".join(REFERENCES))
    parser.add_argument("--stride", type=int, default=1, help="measure every N-th bit pattern")
    parser.add_argument("--chunk", type=int, default=1 << 24, help="inputs per call")
    parser.add_argument("--libm", action="store_true", help="measure the C library calls instead")
    parser.add_argument(
        "--vectorized", action="store_true", help="measure the default, vectorized strategy"
    )
    parser.add_argument("--time", type=int, metavar="N", help="time calls on N inputs instead")
    parser.add_argument(
        "--division", type=int, metavar="N", help="measure N quotients by a shared divisor instead"
    )
    args = parser.parse_args(argv)
    names = args.functions.split(",")
    unknown = [name for name in names if name not in REFERENCES]
    if unknown or args.stride < 1 or args.chunk < 1 or (args.libm and args.vectorized):
        parser.error(
            f"expected functions among {', '.join(REFERENCES)}, positive sizes, "
            "and at most one of --libm and --vectorized"
        )
    if args.time:
        time_functions(names, args.time)
        return 0
    if args.division:
        w = measure_division(args.division, args.chunk)
        share = f"{100 * w.misrounded / w.count:.2f}%"
        print(
            f"x / broadcast(b): max error {w.ulps:.3f} ULP at x = {np.float32(w.at)} "
            f"(got {np.float32(w.got)}, exact {w.exact:.9g}); {w.count} quotients, "
            f"{share} not correctly rounded"
        )
        return 0
    print("| function | max error (ULP) | at x | got | exact | inputs | not correctly rounded |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        start = time.perf_counter()
        w = measure(name, args.stride, args.chunk, not args.libm, args.vectorized)
        at, got = str(np.float32(w.at)), str(np.float32(w.got))
        share = f"{100 * w.misrounded / w.count:.2f}%"
        print(
            f"| {name} | {w.ulps:.3f} | {at} | {got} | {w.exact:.9g} | {w.count} | {share} |",
            flush=True,
        )
        print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
