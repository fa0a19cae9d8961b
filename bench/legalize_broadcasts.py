"""shlo-legalize-broadcasts against upstream's C++ chlo-legalize-to-stablehlo: time and op counts.

Both passes run on the same generated module of static CHLO broadcasting ops
(default 10,000: binary, comparison, select, logical and shift ops, scalars,
vectors, columns and same-shape operands, numpy-style dimensions so that
upstream accepts them), each through a PassManager on a freshly parsed copy,
interleaved; the median of the repeats is reported, with their ratio.

  .venv/bin/python bench/legalize_broadcasts.py [--ops 10000] [--repeats 5]

Op counts are every op inside the function (the function and its return
excluded), as each pass leaves it and after ``cse`` on both.
"""

from __future__ import annotations

import argparse
import statistics
import time

import shlo
from shlo._mlir_compat import ir, passmanager
from shlo.pipeline import build_pass_manager

OURS = "builtin.module(shlo-legalize-broadcasts)"
UPSTREAM = "builtin.module(func.func(chlo-legalize-to-stablehlo))"

X = "tensor<16x32xf32>"
XI = "tensor<16x32xi32>"
P = "tensor<16x32xi1>"
# (chlo op, second operand, its type, extra attributes); the first operand is
# the running f32 (or i32) value, so every op depends on the previous one.
FLOAT_STEPS = [
    ("add", "%v", "tensor<32xf32>", ""),
    ("multiply", "%c", "tensor<16x1xf32>", ""),
    ("subtract", "%s", "tensor<f32>", ""),
    ("maximum", "%x", X, ""),
    ("divide", "%r", "tensor<1x32xf32>", ""),
    ("add", "%v", "tensor<32xf32>", " {broadcast_dimensions = array<i64: 1>}"),
    ("minimum", "%s", "tensor<f32>", ""),
    ("atan2", "%c", "tensor<16x1xf32>", ""),
]
INT_STEPS = [
    ("and", "%iv", "tensor<32xi32>", ""),
    ("shift_left", "%is", "tensor<i32>", ""),
    ("xor", "%ic", "tensor<16x1xi32>", ""),
]


def make_module(count: int, fresh: bool, selects: bool = True) -> str:
    """``count`` chlo ops; with ``fresh``, the small operands change every 13 ops.

    Without it the scalar, vector and column operands are the function's
    arguments, whose broadcasts the pass makes once per function. Without
    ``selects`` there are no comparisons and selects (which upstream wraps
    in shape ops): binary ops only.
    """
    lines = [
        "func.func @main(%x: tensor<16x32xf32>, %v: tensor<32xf32>, %c: tensor<16x1xf32>, "
        "%r: tensor<1x32xf32>, %s: tensor<f32>, %i: tensor<16x32xi32>, %iv: tensor<32xi32>, "
        "%ic: tensor<16x1xi32>, %is: tensor<i32>) -> (tensor<16x32xf32>, tensor<16x32xi32>) {"
    ]
    current, integer, n = "%x", "%i", 0
    names = {"%v": "%v", "%c": "%c", "%s": "%s"}
    while n < count:
        k = n % 13
        if fresh and k == 0 and n + 3 <= count:
            # New scalar, vector and column values: their broadcasts cannot be shared.
            s, v, c = names["%s"], names["%v"], names["%c"]
            lines.append(
                f"  %{n} = chlo.broadcast_add {s}, {s} : (tensor<f32>, tensor<f32>) -> tensor<f32>"
            )
            lines.append(
                f"  %{n + 1} = chlo.broadcast_multiply {v}, %{n} : "
                "(tensor<32xf32>, tensor<f32>) -> tensor<32xf32>"
            )
            lines.append(
                f"  %{n + 2} = chlo.broadcast_multiply {c}, %{n} : "
                "(tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32>"
            )
            names = {"%s": f"%{n}", "%v": f"%{n + 1}", "%c": f"%{n + 2}"}
            n += 3
            continue
        if k < len(FLOAT_STEPS) or (k in (8, 9) and not selects):
            op, other, type_, attribute = FLOAT_STEPS[k % len(FLOAT_STEPS)]
            other = names.get(other, other)
            signature = f"({X}, {type_}) -> {X}"
            lines.append(
                f"  %{n} = chlo.broadcast_{op} {current}, {other}{attribute} : {signature}"
            )
            current = f"%{n}"
        elif k == 8 and n + 2 <= count:
            # A comparison against a vector, then a select between it and a column.
            lines.append(
                f"  %{n} = chlo.broadcast_compare {current}, {names['%v']} "
                "{comparison_direction = #chlo<comparison_direction GT>} : "
                f"({X}, tensor<32xf32>) -> {P}"
            )
            lines.append(
                f"  %{n + 1} = chlo.broadcast_select %{n}, {current}, {names['%c']} : "
                f"({P}, {X}, tensor<16x1xf32>) -> {X}"
            )
            current = f"%{n + 1}"
            n += 1
        else:
            op, other, type_, attribute = INT_STEPS[(k - 10) % len(INT_STEPS)]
            lines.append(
                f"  %{n} = chlo.broadcast_{op} {integer}, {other} : ({XI}, {type_}) -> {XI}"
            )
            integer = f"%{n}"
        n += 1
    lines.append(f"  return {current}, {integer} : {X}, {XI}\n}}")
    return "\n".join(lines)


def count_ops(module: ir.Module) -> int:
    names: list[str] = []
    module.operation.walk(lambda op: names.append(op.name) or ir.WalkResult.ADVANCE)
    return sum(name not in ("builtin.module", "func.func", "func.return") for name in names)


def run_once(text: str, pipeline: str, context: ir.Context) -> tuple[float, ir.Module]:
    with context:
        module = ir.Module.parse(text)
        if pipeline == OURS:
            pm = build_pass_manager(pipeline, context)
        else:
            pm = passmanager.PassManager.parse(pipeline)
        start = time.perf_counter()
        pm.run(module.operation)
        return time.perf_counter() - start, module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    context = shlo.new_context()
    ratios = []
    variants = [
        (False, True, "small operands shared (arguments)"),
        (True, True, "fresh small operands"),
        (True, False, "fresh small operands, binary ops only"),
    ]
    for fresh, selects, label in variants:
        text = make_module(args.ops, fresh, selects)
        times: dict[str, list[float]] = {OURS: [], UPSTREAM: []}
        modules: dict[str, ir.Module] = {}
        for _ in range(args.repeats):
            for pipeline in (UPSTREAM, OURS):
                seconds, modules[pipeline] = run_once(text, pipeline, context)
                times[pipeline].append(seconds)
        with context:
            source_ops = count_ops(ir.Module.parse(text))
        ours, upstream = statistics.median(times[OURS]), statistics.median(times[UPSTREAM])
        print(f"\nmodule: {source_ops} CHLO broadcasting ops, {label}; median of {args.repeats}")
        print("| pass | ms | ops | ops after cse |")
        print("|---|---:|---:|---:|")
        for label, pipeline, seconds in (
            ("chlo-legalize-to-stablehlo (C++)", UPSTREAM, upstream),
            ("shlo-legalize-broadcasts (Python)", OURS, ours),
        ):
            module = modules[pipeline]
            before = count_ops(module)
            with context:
                passmanager.PassManager.parse("builtin.module(cse)").run(module.operation)
            print(f"| {label} | {seconds * 1e3:.1f} | {before} | {count_ops(module)} |")
        ratios.append(ours / upstream)
        print(f"time ratio shlo/upstream: {ours / upstream:.2f}")
    print(f"\nworst time ratio: {max(ratios):.2f} (target: within 3x)")


if __name__ == "__main__":
    main()
