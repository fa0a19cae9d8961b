"""shlo-fuse-elementwise-by-indexing: compiled code with the pass against the pipeline without it.

Measured in one run, interleaved, reporting the median of several repeats and
the ratio with/without (below 1 means the pass made the code faster), plus the
time the pass itself takes on a large module.

  .venv/bin/python bench/fuse_elementwise_by_indexing.py [--repeats 7]

Cases: a cheap product read by two reductions (copied into both), the same
product read by ``p + transpose(p)`` (two maps: not copied, the code is
unchanged), and a chain of four cheap ops read by two reductions (copying
would duplicate four ops, over the default ``max-recompute=2``: unchanged;
a last row copies it with ``max-recompute=4``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.pipeline import run_pipeline
from timing import interleaved_medians

PASS = "shlo-fuse-elementwise-by-indexing"


@dataclasses.dataclass(frozen=True)
class WithoutThePass(CpuPipeline):
    def stages(self) -> list[tuple[str, list[str]]]:
        return [(name, [e for e in stage if e != PASS]) for name, stage in super().stages()]


@dataclasses.dataclass(frozen=True)
class LargerBudget(CpuPipeline):
    """The pass with ``max-recompute=4``: copies the four-op chain too."""

    def stages(self) -> list[tuple[str, list[str]]]:
        element = PASS + "{max-recompute=4}"
        return [
            (name, [element if e == PASS else e for e in stage]) for name, stage in super().stages()
        ]


N = 1024
T = f"tensor<{N}x{N}xf32>"
R = f"tensor<{N}xf32>"
HEAD = """
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>"""


def reductions(value: str) -> str:
    signature = f"across dimensions = [1] : ({T}, tensor<f32>) -> {R}"
    return f"""
  %s = stablehlo.reduce({value} init: %zero) applies stablehlo.add {signature}
  %m = stablehlo.reduce({value} init: %ninf) applies stablehlo.maximum {signature}"""


CASES = {
    "x*x+x read by sum and max (copied)": f"""
func.func @main(%x: {T}) -> ({R}, {R}) {{{HEAD}
  %p = stablehlo.multiply %x, %x : {T}
  %c = stablehlo.add %p, %x : {T}{reductions("%c")}
  return %s, %m : {R}, {R}
}}""",
    "p + transpose(p), p = x*x+x (two maps: not copied)": f"""
func.func @main(%x: {T}) -> {T} {{
  %p = stablehlo.multiply %x, %x : {T}
  %c = stablehlo.add %p, %x : {T}
  %t = stablehlo.transpose %c, dims = [1, 0] : ({T}) -> {T}
  %a = stablehlo.add %c, %t : {T}
  return %a : {T}
}}""",
    "4 cheap ops read by sum and max (over budget: not copied)": f"""
func.func @main(%x: {T}, %y: {T}) -> ({R}, {R}) {{{HEAD}
  %0 = stablehlo.multiply %x, %y : {T}
  %1 = stablehlo.add %0, %x : {T}
  %2 = stablehlo.maximum %1, %y : {T}
  %c = stablehlo.subtract %2, %x : {T}{reductions("%c")}
  return %s, %m : {R}, {R}
}}""",
}


def pass_time(ops: int) -> tuple[float, int]:
    """Seconds the pass takes on a module of ``ops`` ops, each product read by two reductions."""
    lines = [f"func.func @main(%x: tensor<8x8xf32>) -> tensor<8xf32> {{{HEAD}"]
    last = "%x"
    for i in range(ops // 4):
        lines.append(f"  %p{i} = stablehlo.multiply {last}, %x : tensor<8x8xf32>")
        for kind, init in (("add", "%zero"), ("maximum", "%ninf")):
            lines.append(
                f"  %{kind}{i} = stablehlo.reduce(%p{i} init: {init}) applies stablehlo.{kind} "
                "across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>"
            )
        lines.append(
            f"  %b{i} = stablehlo.broadcast_in_dim %add{i}, dims = [0] : "
            "(tensor<8xf32>) -> tensor<8x8xf32>"
        )
        last = f"%b{i}"
    lines.append(f"  return %maximum{ops // 4 - 1} : tensor<8xf32>\n}}")
    module = shlo.load_module("\n".join(lines), shlo.new_context())
    count = len(list(module.body.operations[0].regions[0].blocks[0].operations))
    start = time.perf_counter()
    run_pipeline(module, [PASS])
    return time.perf_counter() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| case | without us | with us | with/without |")
    print("|---|---:|---:|---:|")
    runs = [(name, source, CpuPipeline()) for name, source in CASES.items()]
    chain = "4 cheap ops read by sum and max (over budget: not copied)"
    runs.append(("same, max-recompute=4 (copied)", CASES[chain], LargerBudget()))
    for name, source, pipeline in runs:
        arguments = source.split("@main(")[1].split(")")[0].count("%")
        inputs = [rng.standard_normal((N, N)).astype(np.float32) for _ in range(arguments)]
        with_pass = shlo.compile(source, isolate=False, pipeline=pipeline)
        without = shlo.compile(source, isolate=False, pipeline=WithoutThePass())
        for got, want in zip(with_pass(*inputs), without(*inputs), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5)
        a, b = interleaved_medians(
            [lambda: without(*inputs), lambda: with_pass(*inputs)], args.repeats
        )
        print(f"| {name} | {a * 1e6:.0f} | {b * 1e6:.0f} | {b / a:.2f} |")
    seconds, count = pass_time(4000)
    print(
        f"\npass time on a module of {count} ops (1000 products, each read by two reductions): "
        f"{seconds * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
