"""Subnormal data: shlo's IEEE code, shlo with flush_denormals, and XLA, on the same calls.

x86 cores take a microcode assist for each operation on a subnormal float;
XLA's CPU code avoids it by running with FTZ and DAZ set (subnormals are
zero), and so does shlo with ``flush_denormals=True`` (docs/cpu.md,
"Subnormal floats"). Each program runs on normal data and on data whose
operands or results are subnormal, all systems timed in interleaved rounds
(``bench.timing.interleaved_medians``). Every result is first compared with
jax.jit's: the flushing code within 1e-5 of each value, with no absolute
slack, so zero wherever jax's is; the IEEE code is not compared on subnormal
data, where it is meant to differ.

  .venv/bin/python -m bench.subnormals [--size 4194304] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
import shlo
from jax import export

from bench.timing import interleaved_medians

PROGRAMS = {
    # Subnormal operands: products and sums of them.
    "scale_add": lambda x: x * 0.5 + x * 0.25,
    # Subnormal operands through a square root and a division.
    "sqrt_div": lambda x: jnp.sqrt(jnp.abs(x)) / (jnp.abs(x) + 1.0e-39),
    # Normal logits whose exponentials are subnormal half the time.
    "softmax": lambda x: jax.nn.softmax(x, axis=-1),
}


def data(name: str, size: int, subnormal: bool) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.uniform(1.0, 2.0, (size // 4096, 4096)).astype(np.float32)
    if not subnormal:
        return x
    if name == "softmax":
        # exp(-95 + ...) is below 2^-126: every other logit's probability is subnormal.
        return np.where(np.arange(4096) % 2 == 0, x, x - 96.0).astype(np.float32)
    return (x * np.float32(1e-39)).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 22, help="elements (default 4M)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    columns = ["shlo IEEE ms", "shlo flushing ms", "XLA ms", "IEEE / XLA", "flushing / XLA"]
    print("| program | data | " + " | ".join(columns) + " |")
    print("|---|---|" + "---:|" * len(columns))
    for name, fn in PROGRAMS.items():
        for subnormal in (False, True):
            x = data(name, args.size, subnormal)
            module = export.export(jax.jit(fn), platforms=["cpu"])(x).mlir_module_serialized
            ieee = shlo.compile(module)
            flushing = shlo.compile(module, flush_denormals=True)
            xla = jax.jit(fn)
            device_x = jax.device_put(x)
            want = np.asarray(xla(device_x))
            got = np.asarray(flushing(x))
            # Within rounding of jax.jit's (softmax's exp and division round
            # differently), and zero wherever jax's is: no subnormal survives.
            if not np.allclose(got, want, rtol=1e-5, atol=0.0, equal_nan=True):
                raise SystemExit(f"{name}: the flushing code differs from jax.jit")
            times = interleaved_medians(
                [lambda: ieee(x), lambda: flushing(x), lambda: xla(device_x).block_until_ready()],
                args.repeats,
            )
            ms = [t * 1e3 for t in times]
            print(
                f"| {name} | {'subnormal' if subnormal else 'normal'} | {ms[0]:.2f} | "
                f"{ms[1]:.2f} | {ms[2]:.2f} | {ms[0] / ms[2]:.2f} | {ms[1] / ms[2]:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
