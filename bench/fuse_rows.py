"""shlo-fuse-rows: row groups run one block of rows at a time, against separate loop nests.

Measured in one run, interleaved, reporting the median of several repeats and
the ratio with/without (below 1 means the pass made the code faster). Every
case is fused here, whatever its size (``min-bytes=1``), to show why the
pipeline only fuses groups whose values exceed the 32 MiB last-level cache:

  .venv/bin/python bench/fuse_rows.py [--repeats 7]

Softmax, layernorm and RMSNorm over the last axis, each at a size whose
values stay in the L3 cache between loop nests and at one that does not.
"""

from __future__ import annotations

import argparse
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import shlo
from jax import export
from shlo.backends.cpu.pipeline import CpuPipeline
from timing import interleaved_medians

PASS = "shlo-fuse-rows"


@dataclasses.dataclass(frozen=True)
class Pipeline(CpuPipeline):
    """The CPU pipeline with shlo-fuse-rows' ``min-bytes`` set."""

    min_bytes: int = 1

    def stages(self) -> list[tuple[str, list[str]]]:
        option = f" min-bytes={self.min_bytes}}}"
        return [
            (name, [e.replace("}", option) if e.startswith(PASS) else e for e in stage])
            for name, stage in super().stages()
        ]


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layernorm(x):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)


def rmsnorm(x):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6)


CASES = [
    (softmax, (512, 4096)),
    (softmax, (2048, 8192)),
    (layernorm, (1024, 1024)),
    (layernorm, (8192, 2048)),
    (rmsnorm, (1024, 1024)),
    (rmsnorm, (8192, 2048)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| case | MB in | without us | with us | with/without |")
    print("|---|---:|---:|---:|---:|")
    for function, shape in CASES:
        x = rng.standard_normal(shape).astype(np.float32)
        spec = jax.ShapeDtypeStruct(shape, jnp.float32)
        text = export.export(jax.jit(function))(spec).mlir_module_serialized
        with_pass = shlo.compile(text, isolate=False, pipeline=Pipeline())
        # No group has this many bytes: the pass leaves every op alone.
        without = shlo.compile(text, isolate=False, pipeline=Pipeline(min_bytes=1 << 62))
        np.testing.assert_allclose(with_pass(x), without(x), rtol=1e-5, atol=1e-6)
        a, b = interleaved_medians([lambda: without(x), lambda: with_pass(x)], args.repeats)
        name = f"{function.__name__} {shape}"
        print(f"| {name} | {x.nbytes / 1e6:.0f} | {a * 1e6:.0f} | {b * 1e6:.0f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
