"""Compile time against program size: shlo.compile and XLA (jax.jit) on elementwise chains.

Each program is a chain of n adds on one f32 vector (``x = x + a`` n times),
exported with jax.export and compiled by shlo (isolated, as by default) and
by XLA (``jax.jit(fn).lower(...).compile()``, a fresh function each time so
nothing is cached), in the same run. It prints seconds, microseconds per op
and the growth from one size to the next: linear compile time keeps the
per-op cost flat. ``--gpt2-layers`` does the same for GPT-2 (transformers
Flax, n_embd 768, seq 128) with that many layers, per layer. ``--stages``
splits shlo's compile of bench models (``bench.models``) by the stages the
worker reports (``shlo.progress``), the fastest of ``--repeats`` compiles,
next to XLA's first compile of the model in this process; with ``--pause``
each compile comes after that many idle seconds. ``--llvm-split``
times LLVM's code generation alone (``compile_object`` on each model's
LLVM-dialect module, in this process) whole and split into shards on
threads (``parallel_codegen``), alternating, median of ``--repeats``.

  .venv/bin/python bench/compile_time.py [--sizes 1000,2000,4000,10000] [--width 1024]
  .venv/bin/python bench/compile_time.py --gpt2-layers 1,2,4,8,12
  .venv/bin/python -m bench.compile_time --stages matmul,softmax,attention,gpt2 [--repeats 5]
      [--pause 0.1]
  .venv/bin/python -m bench.compile_time --llvm-split mlp,conv2d,attention --repeats 7
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np
import shlo
from jax import export


def chain(n: int):
    def fn(x, a):
        for _ in range(n):
            x = x + a
        return x

    return fn


def gpt2_compile_times(layer_counts: list[int]) -> None:
    import transformers

    ids = np.zeros((1, 128), np.int32)
    print("| layers | shlo s | xla s | shlo/xla | shlo s/layer | xla s/layer |")
    print("|---:|---:|---:|---:|---:|---:|")
    for layers in layer_counts:
        config = transformers.GPT2Config(n_layer=layers, n_embd=768, n_head=12)
        model = transformers.FlaxGPT2Model(config, seed=0)

        def forward(params, ids, model=model):
            return model(ids, params=params).last_hidden_state

        exported = export.export(jax.jit(forward), platforms=["cpu"])(model.params, ids)
        start = time.perf_counter()
        shlo.compile(exported.mlir_module_serialized)
        shlo_seconds = time.perf_counter() - start
        lowered = jax.jit(forward).lower(model.params, ids)
        start = time.perf_counter()
        lowered.compile()
        xla_seconds = time.perf_counter() - start
        print(
            f"| {layers} | {shlo_seconds:.2f} | {xla_seconds:.2f} | "
            f"{shlo_seconds / xla_seconds:.1f} | {shlo_seconds / layers:.2f} "
            f"| {xla_seconds / layers:.2f} |",
            flush=True,
        )


def stage_times(names: list[str], repeats: int, pause: float = 0.0) -> None:
    """A row per model: shlo's fastest compile split by stage, and XLA's compile, in ms.

    ``pause`` seconds pass before each compile, as between a program's compile
    and the next one's in a model's use: the worker prepares the next request
    while it waits (its context and pass managers); 0 measures compiles back
    to back, where a request comes before the worker is done.
    """
    # Run as ``python -m bench.compile_time``: the repository's root is on the path.
    from shlo import progress

    from bench import models
    from bench.systems import Case

    # The worker's start and each compiler's first-use costs are no model's.
    tiny = (np.zeros(4, np.float32), np.ones(4, np.float32))
    shlo.compile(export.export(jax.jit(chain(1)))(*tiny).mlir_module_serialized)
    jax.jit(chain(1)).lower(*tiny).compile()
    print("| model | shlo ms | xla ms | shlo/xla | shlo's stages, ms |")
    print("|---|---:|---:|---:|---|")
    for name in names:
        case = Case.export(getattr(models, name)(False))
        best: tuple[float, list[tuple[str, float]]] | None = None
        for _ in range(repeats):
            marks: list[tuple[str, float]] = []
            time.sleep(pause)
            start = time.perf_counter()
            with progress.listening(lambda stage: marks.append((stage, time.perf_counter()))):
                shlo.compile(case.exported.mlir_module_serialized)
            end = time.perf_counter()
            if best is None or end - start < best[0]:
                # A stage lasts until the next one starts: before the first, the request
                # reaches the worker; the last includes the host's link and load.
                stages = ["request", *(stage for stage, _ in marks)]
                bounds = [start, *(at for _, at in marks), end]
                spans = [(b - a) * 1e3 for a, b in itertools.pairwise(bounds)]
                best = (end - start, list(zip(stages, spans, strict=True)))
        assert best is not None
        lowered = jax.jit(case.model.fn).lower(*case.model.args)  # tracing is not compile time
        time.sleep(pause)
        start = time.perf_counter()
        lowered.compile()
        xla_ms = (time.perf_counter() - start) * 1e3
        shlo_ms = best[0] * 1e3
        split = ", ".join(f"{stage} {ms:.1f}" for stage, ms in best[1])
        print(
            f"| {name} | {shlo_ms:.1f} | {xla_ms:.1f} | {shlo_ms / xla_ms:.1f} | {split} |",
            flush=True,
        )


def llvm_split_times(names: list[str], repeats: int) -> None:
    import statistics

    from shlo._mlir_compat import ir, new_context
    from shlo.backends.cpu import parallel_codegen
    from shlo.backends.cpu.lowering import lower_to_llvm
    from shlo.backends.cpu.runtime import compile_object

    from bench import models
    from bench.systems import Case

    default = parallel_codegen.MIN_SAVED_OPS
    print("| model | whole ms | split ms |")
    print("|---|---:|---:|")
    for name in names:
        case = Case.export(getattr(models, name)(False))
        llvm = lower_to_llvm(case.exported.mlir_module_serialized, "main", None).llvm_bytecode
        module = ir.Module.parse(llvm, new_context())  # neither way changes it
        times: dict[str, list[float]] = {"whole": [], "split": []}
        try:
            for _ in range(repeats + 1):  # the first round warms up
                for kind, min_saved in (("whole", float("inf")), ("split", default)):
                    parallel_codegen.MIN_SAVED_OPS = min_saved
                    start = time.perf_counter()
                    compile_object(module)
                    times[kind].append((time.perf_counter() - start) * 1e3)
        finally:
            parallel_codegen.MIN_SAVED_OPS = default
        whole, split = (statistics.median(times[kind][1:]) for kind in ("whole", "split"))
        print(f"| {name} | {whole:.1f} | {split:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,10000")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--gpt2-layers", help="comma-separated layer counts, e.g. 1,2,4,8,12")
    parser.add_argument("--stages", help="comma-separated bench models, e.g. matmul,attention")
    parser.add_argument("--llvm-split", help="comma-separated bench models, e.g. mlp,attention")
    parser.add_argument("--repeats", type=int, default=5, help="compiles per model")
    parser.add_argument(
        "--pause", type=float, default=0.0, help="--stages: seconds idle before each compile"
    )
    args = parser.parse_args()
    if args.stages:
        stage_times(args.stages.split(","), args.repeats, args.pause)
        return
    if args.llvm_split:
        llvm_split_times(args.llvm_split.split(","), args.repeats)
        return
    if args.gpt2_layers:
        gpt2_compile_times([int(n) for n in args.gpt2_layers.split(",")])
        return
    x = np.zeros(args.width, np.float32)
    a = np.ones(args.width, np.float32)
    print("| ops | shlo s | xla s | shlo/xla | shlo us/op | xla us/op |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (int(size) for size in args.sizes.split(",")):
        fn = chain(n)
        serialized = export.export(jax.jit(fn), platforms=["cpu"])(x, a).mlir_module_serialized
        start = time.perf_counter()
        executable = shlo.compile(serialized)
        shlo_seconds = time.perf_counter() - start
        np.testing.assert_array_equal(executable(x, a), np.full_like(x, n))
        lowered = jax.jit(chain(n)).lower(x, a)  # tracing is not compile time
        start = time.perf_counter()
        lowered.compile()
        xla_seconds = time.perf_counter() - start
        print(
            f"| {n} | {shlo_seconds:.2f} | {xla_seconds:.2f} | {shlo_seconds / xla_seconds:.2f} "
            f"| {shlo_seconds / n * 1e6:.0f} | {xla_seconds / n * 1e6:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
