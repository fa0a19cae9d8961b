"""The issue-10 suite: shlo against XLA, IREE and numpy on twelve models.

  .venv/bin/python -m bench [--quick] [--only matmul,gpt2] [--repeats N]
      [--compiles N] [--budget S] [--systems shlo,xla,iree,numpy] [--threads N] [--out DIR]
      [--target cpu|cuda]

Every model is a JAX function exported with jax.export. For each model, every
system compiles it and runs it once, the result is compared with jax's, and
the systems are then timed interleaved, one call each per round, until a
system has used ``--budget`` seconds or ``--repeats`` calls (at least one
call). The table gives min and median ms, GFLOP/s or GB/s and the share of
the machine's peak (measured first, bench/peak.c), compile times and shlo's
median over the best correct peer's. A compile time is the fastest of
``--compiles`` compiles from StableHLO: ``shlo.compile`` of the exported
artifact, XLA's ``Lowered.compile()`` (jax's tracing and lowering untimed, its
caches cleared first), IREE's ``compile_str``. Results go to DIR/bench.json and
DIR/ratios.png. Exit status 1 when any shlo result is wrong or fails.

``--target cuda`` measures shlo's CUDA backend against XLA on the GPU (jax's
GPU backend, f32 matmuls at full precision), from device arrays, and the
GPU's peak (bench/peak.py, measure_gpu); exit status 2 when jax has no GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any


def _target_in_argv(argv: list[str]) -> str:
    """--target's value in ``argv``, before argparse (which checks it later); "cpu" if absent."""
    for index, arg in enumerate(argv):
        name, _, value = arg.partition("=")
        if len(name) > 3 and "--target".startswith(name):  # argparse takes prefixes too
            return value or (argv[index + 1] if index + 1 < len(argv) else "cpu")
    return "cpu"


# jax picks its platforms once, when it starts, from JAX_PLATFORMS, so the
# target must be known before that: hence this look at sys.argv ahead of
# argparse. CPU mode pins jax to the CPU, as the suite always did; cuda mode
# leaves jax its GPU. Imported (tests call main(argv)), the module pins the
# CPU unless JAX_PLATFORMS is set, and main(["--target", "cuda"]) then says
# that jax has no GPU.
if __name__ != "__main__" or _target_in_argv(sys.argv[1:]) != "cuda":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bench import peak as peak_module  # noqa: E402
from bench.models import BUILDERS, Model  # noqa: E402
from bench.systems import (  # noqa: E402
    CUDA_SYSTEMS,
    PEERS,
    SYSTEMS,
    TARGETS,
    Case,
    Unavailable,
    compare,
    first_line,
    output_leaves,
    peers_for,
    prepare,
    warm_up,
)
from bench.timing import WARM_UP_S, untimed_calls  # noqa: E402

DEFAULT_OUT = Path(__file__).parent / "results"
# Full mode: timing stops after this many seconds or --repeats calls per
# system and model (a slow system, or the scalar-loop strategy, takes seconds per call).
DEFAULT_BUDGET_S = 3.0
DEFAULT_REPEATS = 20
# Compiles per system and model in full mode: a single compile moved by 20-40%
# from one run to the next on the shared machine (attention 1.17x XLA's in one
# run, 2.42x in the next). Each system's fastest is its compile time.
DEFAULT_COMPILES = 3
PACKAGES = (
    "numpy",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "transformers",
    "iree-base-compiler",
    "iree-base-runtime",
    "torch-mlir",
    "shlo",
)


@dataclass
class SystemResult:
    status: str  # "ok", "wrong", "failed", "unchecked" (no reference) or "skipped"
    correct: bool = False
    error: str = ""
    note: str = ""
    compile_s: float | None = None  # the fastest of --compiles compiles
    first_compile_s: float | None = None
    max_error: float | None = None  # worst |difference| / max |value| against jax
    samples_ms: list[float] = field(default_factory=list)
    min_ms: float | None = None
    median_ms: float | None = None
    rate: float | None = None  # GFLOP/s or GB/s at the median
    percent_of_peak: float | None = None
    # Byte models: the same-bytes copy's median time over this median, in %.
    percent_of_copy: float | None = None
    shlo_over_this: float | None = None


@dataclass
class ModelResult:
    name: str
    shapes: str
    unit: str
    work: float | None
    work_source: str
    rtol: float
    systems: dict[str, SystemResult]
    best_peer: str | None = None
    shlo_over_best_peer: float | None = None
    error: str = ""
    seconds: float = 0.0  # wall time for the model: export, compiles, checks, timing
    # Reference outputs with more than one element, all equal: a check against
    # them proves little (e.g. a network whose relus output only zeros).
    constant_outputs: list[int] = field(default_factory=list)
    # Byte models on the CPU: a copy of the same bytes, timed with the systems.
    copy: SystemResult | None = None


def short_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {first_line(str(error)) or '(no message)'}"


def xla_flops(model: Model) -> float | None:
    """Flops per call from XLA's HLO cost analysis, for the models without a formula."""
    try:
        cost = jax.jit(model.fn).lower(*model.args).cost_analysis()
    except Exception:
        return None
    if isinstance(cost, list):  # older jax: one dict per computation
        cost = cost[0] if cost else {}
    flops = cost.get("flops") if cost else None
    return float(flops) if flops else None


def time_interleaved(
    calls: dict[str, Any],
    repeats: int,
    budget_s: float,
    results: dict[str, SystemResult],
    settle_s: float = 0.0,
    warm_s: float = WARM_UP_S,
) -> None:
    """One call per system per round; a system stops after budget_s or ``repeats`` calls.

    Before each timed call the machine idles ``settle_s`` seconds, then the
    system makes untimed calls for ``warm_s`` seconds (at least one): thread
    pools spin-wait after their work (OpenBLAS, OpenMP's 200 ms blocktime,
    XLA's Eigen pool), and a call timed right after another system's would
    share the cores with those spinning threads; the untimed calls wake the
    system's own threads, caches and the cores themselves, as in a loop of
    calls. One call was not enough: after the pause the cores need about
    5 ms of work to reach their steady speed.
    """
    spent = dict.fromkeys(calls, 0.0)
    for _ in range(repeats):
        active = [s for s in calls if spent[s] < budget_s or not results[s].samples_ms]
        if not active:
            break
        for system in active:
            try:
                if settle_s and len(active) > 1:
                    time.sleep(settle_s)
                    untimed_calls(calls[system], warm_s)
                start = time.perf_counter()
                calls[system]()
            except Exception as error:
                result = results[system]
                result.status, result.error = "failed", f"while timing: {short_error(error)}"
                result.correct = False
                del calls[system]
                continue
            elapsed = time.perf_counter() - start
            results[system].samples_ms.append(elapsed * 1e3)
            spent[system] += elapsed


# Below this a copy's time is its parallel region's start and end, not bytes
# (cumsum's 32 KB: 0.054 ms, 0.6 GB/s).
MIN_COPY_BYTES = 1 << 20


def run_model(
    name: str,
    quick: bool,
    systems: list[str],
    args: argparse.Namespace,
    peak: Any,
    device: Any = None,
) -> ModelResult:
    """One model on every system; ``device``: the jax GPU with --target cuda."""
    try:
        model = BUILDERS[name](quick)
        case = Case.export(model)
    except ImportError as error:
        # flax, optax or transformers not installed: nothing to measure.
        note = f"needs {error.name or error}, which is not installed"
        skipped = {s: SystemResult("skipped", note=note) for s in systems}
        return ModelResult(name, "", "", None, "", 0.0, skipped, error=note)
    except Exception as error:
        failed = {s: SystemResult("failed", error=f"export: {short_error(error)}") for s in systems}
        return ModelResult(name, "", "", None, "", 0.0, failed, error=short_error(error))
    work, source = model.work, "formula" + (f" ({model.work_note})" if model.work_note else "")
    if work is None:
        work, source = xla_flops(model), "XLA cost analysis"
    result = ModelResult(name, model.shapes, model.unit, work, source, model.rtol, {})
    # The reference: jax.jit's result (XLA's own, when XLA is measured).
    reference: list[np.ndarray] | str | None = None  # str: why jax could not run it
    calls: dict[str, Any] = {}
    order = sorted(systems, key=lambda s: s != "xla")  # XLA first: it is the reference
    for system in order:
        try:
            prepared = prepare(system, case, args.threads, args.target, device, args.compiles)
        except Unavailable as reason:
            result.systems[system] = SystemResult("skipped", note=str(reason))
            continue
        except Exception as error:
            result.systems[system] = SystemResult("failed", error=short_error(error))
            continue
        entry = SystemResult(
            "ok",
            note=prepared.note,
            compile_s=prepared.compile_s,
            first_compile_s=prepared.first_compile_s,
        )
        result.systems[system] = entry
        if reference is None:
            try:
                model_args = model.args if device is None else jax.device_put(model.args, device)
                reference = (
                    prepared.outputs
                    if system == "xla"
                    else output_leaves(jax.jit(model.fn)(*model_args))
                )
            except Exception as error:
                reference = short_error(error)
            else:
                result.constant_outputs = [
                    index
                    for index, value in enumerate(reference)
                    if value.size > 1 and bool(np.all(value == value.flat[0]))
                ]
        if isinstance(reference, str):
            entry.status, entry.error = "unchecked", f"no jax reference: {reference}"
            continue
        message, worst = compare(prepared.outputs, reference, model.rtol)
        entry.max_error = worst if math.isfinite(worst) else None
        if message:
            entry.status, entry.error = "wrong", message
        else:
            entry.correct = True
        calls[system] = prepared.call
    timed = dict(result.systems)
    # --quick times the copy at any size: it checks that the copy runs.
    big_enough = work and (quick or work >= MIN_COPY_BYTES)
    if model.unit == "byte" and big_enough and device is None and calls:
        copy = peak_module.same_bytes_copy(work, peak.threads)
        if copy is not None:
            calls["copy"] = copy
            timed["copy"] = result.copy = SystemResult("ok", correct=True)
    time_interleaved(calls, args.repeats, args.budget, timed, args.settle, args.warm)
    for entry in timed.values():
        if entry.samples_ms:
            entry.min_ms = min(entry.samples_ms)
            entry.median_ms = statistics.median(entry.samples_ms)
            if work:
                entry.rate = work / (entry.median_ms * 1e-3) / 1e9
                top = peak.fma_gflops if model.unit == "flop" else peak.copy_gbps
                entry.percent_of_peak = 100 * entry.rate / top
    if result.copy is not None and result.copy.median_ms:
        for entry in timed.values():
            if entry.median_ms:
                entry.percent_of_copy = 100 * result.copy.median_ms / entry.median_ms
    shlo = result.systems.get("shlo")
    peer_names = peers_for(args.target)
    if shlo is not None and shlo.correct and shlo.median_ms:
        for system, entry in result.systems.items():
            if system != "shlo" and entry.median_ms:
                entry.shlo_over_this = shlo.median_ms / entry.median_ms
        peers = [
            (entry.median_ms, system)
            for system, entry in result.systems.items()
            if system in peer_names and entry.correct and entry.median_ms
        ]
        if peers:
            best_ms, result.best_peer = min(peers)
            result.shlo_over_best_peer = shlo.median_ms / best_ms
    return result


def number(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if value != 0 and abs(value) < 10**-digits:
        return f"{value:.1e}"
    return f"{value:.{digits}f}"


def print_model(result: ModelResult) -> None:
    unit = "GFLOP/s" if result.unit == "flop" else "GB/s"
    print(f"\n{result.name}: {result.shapes} ({result.seconds:.1f} s)")
    print(
        f"  {'system':7} {'result':8} {'min ms':>10} {'median ms':>10} {unit:>8} "
        f"{'% peak':>7} {'compile s':>9} {'shlo/this':>9}"
    )
    for system, r in result.systems.items():
        label = {"ok": "correct", "wrong": "WRONG", "failed": "FAILED"}.get(r.status, r.status)
        if system == "xla" and r.status == "ok":
            label = "ref"
        print(
            f"  {system:7} {label:8} {number(r.min_ms, 3):>10} {number(r.median_ms, 3):>10} "
            f"{number(r.rate, 1):>8} {number(r.percent_of_peak, 1):>7} "
            f"{number(r.compile_s, 2):>9} {number(r.shlo_over_this, 2):>9}"
        )
        for text in (r.error, r.note):
            if text:
                print(f"          {text}")
    copy = result.copy
    if copy is not None and copy.median_ms:
        shlo = result.systems.get("shlo")
        against = ""
        if shlo is not None and shlo.percent_of_copy is not None:
            against = f"; shlo at {shlo.percent_of_copy:.0f}% of its speed"
        print(
            f"  a copy of the same bytes, timed with them: median {copy.median_ms:.3f} ms "
            f"({copy.rate:.1f} GB/s){against}"
        )
    if result.constant_outputs:
        print(f"  warning: reference outputs {result.constant_outputs} are constant arrays")
    if result.shlo_over_best_peer is not None:
        print(f"  shlo / best peer ({result.best_peer}): {result.shlo_over_best_peer:.2f}")


def print_summary(results: list[ModelResult], peers: Sequence[str] = PEERS) -> float | None:
    # One column per peer, at least 9 wide: "shlo/xla", "shlo/iree", "shlo/numpy".
    widths = [max(9, len(f"shlo/{peer}")) for peer in peers]
    columns = "".join(f" {f'shlo/{peer}':>{w}}" for peer, w in zip(peers, widths))
    print(f"\n{'model':12} {'shlo/best peer':>14} {'best peer':>9}{columns}")
    for result in results:
        ratios = [
            number(result.systems[s].shlo_over_this) if s in result.systems else "-" for s in peers
        ]
        cells = "".join(f" {ratio:>{w}}" for ratio, w in zip(ratios, widths))
        print(
            f"{result.name:12} {number(result.shlo_over_best_peer):>14} "
            f"{result.best_peer or '-':>9}{cells}"
        )
    ratios = [r.shlo_over_best_peer for r in results if r.shlo_over_best_peer]
    geomean = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else None
    if geomean is not None:
        print(
            f"\ngeometric mean of shlo / best peer over {len(ratios)} of {len(results)} "
            f"models: {geomean:.2f} (below 1: shlo is faster)"
        )
    else:
        print("\nno model has both a correct shlo result and a correct peer")
    return geomean


def plot(
    results: list[ModelResult], path: Path, peers: Sequence[str] = PEERS, title: str = ""
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(peers)
    figure, axes = plt.subplots(figsize=(max(6, 1.1 * len(results)), 4.5))
    for index, peer in enumerate(peers):
        xs, ys = [], []
        for position, result in enumerate(results):
            entry = result.systems.get(peer)
            if entry is not None and entry.shlo_over_this:
                xs.append(position + (index - (len(peers) - 1) / 2) * width)
                ys.append(entry.shlo_over_this)
        axes.bar(xs, ys, width, label=f"shlo / {peer}")
    axes.axhline(1.0, color="black", linewidth=1)
    axes.set_yscale("log")
    axes.set_xticks(range(len(results)), [r.name for r in results], rotation=30, ha="right")
    axes.set_ylabel("median time ratio (below 1: shlo faster)")
    axes.set_title(title or "shlo / peer, python -m bench")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def machine_info(device: Any = None) -> dict[str, Any]:
    """The host; with ``device`` (the jax GPU of --target cuda) the GPU's name too."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    if device is not None:
        info["gpu"] = device.device_kind
    return info


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    try:
        found["shlo git commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        found["shlo git commit"] = None
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and one timed call: checks that every model runs and is correct",
    )
    parser.add_argument("--only", help="comma-separated models: " + ",".join(BUILDERS))
    parser.add_argument("--repeats", type=int, help=f"most timed calls (default {DEFAULT_REPEATS})")
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"seconds of timed calls per system and model (default {DEFAULT_BUDGET_S})",
    )
    parser.add_argument(
        "--settle",
        type=float,
        help="seconds of idle, then --warm seconds of untimed calls, before each timed call, "
        "so that the previous system's spinning threads sleep (default 0.25; 0 in --quick mode)",
    )
    parser.add_argument(
        "--warm",
        type=float,
        default=WARM_UP_S,
        help="seconds of untimed calls after the idle, before each timed call "
        f"(default {WARM_UP_S}; at least one call)",
    )
    parser.add_argument(
        "--systems",
        help="comma-separated, from " + ",".join(SYSTEMS) + " (default: all; with --target "
        f"cuda: {','.join(CUDA_SYSTEMS)}, and iree and numpy, CPU peers, are skipped there)",
    )
    parser.add_argument(
        "--compiles",
        type=int,
        help="compiles per system and model; compile time is the fastest (default 3; 1 in "
        "--quick mode)",
    )
    parser.add_argument("--threads", type=int, help="threads for shlo.compile (default: its own)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="cpu",
        help="cpu (default): shlo, XLA, IREE and numpy on the CPU; cuda: shlo's CUDA backend "
        "against XLA on the GPU (jax with its GPU backend)",
    )
    args = parser.parse_args(argv)
    args.models = _choose(parser, "--only", args.only, list(BUILDERS))
    args.system_list = _choose(parser, "--systems", args.systems, list(SYSTEMS))
    if args.systems is None and args.target == "cuda":
        args.system_list = list(CUDA_SYSTEMS)
    if args.repeats is None:
        args.repeats = 1 if args.quick else DEFAULT_REPEATS
    if args.settle is None:
        args.settle = 0.0 if args.quick else 0.25
    if args.compiles is None:
        args.compiles = 1 if args.quick else DEFAULT_COMPILES
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.compiles < 1:
        parser.error("--compiles must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.threads is not None and args.target != "cpu":
        parser.error("--threads applies to --target cpu only")
    return args


def _choose(parser: argparse.ArgumentParser, flag: str, value: str | None, known: list[str]):
    if value is None:
        return known
    chosen = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        parser.error(
            f"{flag}: unknown {', '.join(unknown) or '(empty)'}; expected {', '.join(known)}"
        )
    return [name for name in known if name in chosen]


class NoGpu(Exception):
    """--target cuda, and jax has no GPU."""


def gpu_device() -> Any:
    """jax's first GPU, or NoGpu saying why there is none and what to do."""
    try:
        devices, reason = jax.devices("gpu"), "jax.devices('gpu') is empty"
    except Exception as error:  # RuntimeError: "Unknown backend: 'gpu' requested, ..."
        devices, reason = [], short_error(error)
    if devices:
        return devices[0]
    hint = "a CUDA GPU and jax's CUDA plugin (jax[cuda12] or jax[cuda13])"
    platforms = os.environ.get("JAX_PLATFORMS")
    if platforms:
        hint += (
            f"; JAX_PLATFORMS is {platforms!r}, which may hide the GPU (the suite sets "
            "'cpu' when imported, not run as python -m bench --target cuda)"
        )
    raise NoGpu(f"--target cuda needs {hint}: {reason}")


@contextlib.contextmanager
def full_f32_matmuls() -> Iterator[None]:
    """XLA at jax_default_matmul_precision "highest" inside, as before outside.

    On a GPU, XLA's default precision may compute f32 matmuls and convolutions
    in TF32 (10-bit mantissas); shlo computes them in f32.
    """
    previous = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "highest")
    try:
        yield
    finally:
        jax.config.update("jax_default_matmul_precision", previous)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.target == "cpu":
        return run(args, None)
    try:
        device = gpu_device()
    except NoGpu as error:
        print(f"python -m bench: error: {error}", file=sys.stderr)
        return 2
    with full_f32_matmuls():
        return run(args, device)


def run(args: argparse.Namespace, device: Any) -> int:
    """The suite; ``device`` is jax's GPU with --target cuda, else None."""
    started = time.perf_counter()
    if device is None:
        # The machine's peak uses every core, whatever --threads gives shlo.
        peak = peak_module.measure(os.cpu_count() or 1)
        units = "threads"
    else:
        peak = peak_module.measure_gpu(device)
        units = "SMs"
    print(
        f"peak ({peak.method}, {peak.threads} {units}): "
        f"{peak.fma_gflops:.1f} GFLOP/s FMA, {peak.copy_gbps:.1f} GB/s copy"
    )
    if os.environ.get("SHLO_CACHE_DIR"):
        print("note: SHLO_CACHE_DIR is set, so shlo's compile times may be cache hits")
    mode = "quick (small sizes, correctness)" if args.quick else "full"
    print(
        f"mode: {mode}; systems: {', '.join(args.system_list)}; repeats {args.repeats}, "
        f"budget {args.budget} s per system and model, {args.settle} s idle and {args.warm} s "
        "of untimed calls before each call; compile time: the fastest of "
        f"{args.compiles} compile(s) from StableHLO (XLA: Lowered.compile())"
    )
    if device is not None:
        print(
            f"target: cuda on {device.device_kind}; XLA at jax_default_matmul_precision="
            f"{jax.config.jax_default_matmul_precision} (full f32, no TF32); peers: "
            + ", ".join(peers_for(args.target))
        )
    warm_up_s = warm_up(args.system_list, args.target)
    print(
        "first compile in this process, excluded from the models' compile times: "
        + ", ".join(f"{system} {seconds:.2f} s" for system, seconds in warm_up_s.items())
    )
    results = []
    for name in args.models:
        model_start = time.perf_counter()
        result = run_model(name, args.quick, args.system_list, args, peak, device)
        result.seconds = time.perf_counter() - model_start
        print_model(result)
        results.append(result)
    peers = peers_for(args.target)
    geomean = print_summary(results, peers)
    bad = [
        f"{r.name}: {s.status} ({s.error})"
        for r in results
        if (s := r.systems.get("shlo")) is not None and s.status not in ("ok", "skipped")
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "options": {
            "target": args.target,
            "jax_default_matmul_precision": jax.config.jax_default_matmul_precision,
            "models": args.models,
            "systems": args.system_list,
            "repeats": args.repeats,
            "compiles": args.compiles,
            "budget_s": args.budget,
            "settle_s": args.settle,
            "warm_s": args.warm,
            "threads": args.threads,
            "SHLO_CACHE_DIR": os.environ.get("SHLO_CACHE_DIR"),
            "SHLO_THREADS": os.environ.get("SHLO_THREADS"),
        },
        "machine": machine_info(device),
        "versions": versions(),
        "peak": asdict(peak),
        "warm_up_s": warm_up_s,
        "models": [asdict(r) for r in results],
        "geomean_shlo_over_best_peer": geomean,
        "shlo_failures": bad,
        "seconds": time.perf_counter() - started,
    }
    json_path = args.out / "bench.json"
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    png_path = args.out / "ratios.png"
    title = "" if device is None else "shlo / peer, python -m bench --target cuda"
    plot(results, png_path, peers, title)
    print(f"\nwrote {json_path} and {png_path} ({report['seconds']:.0f} s)")
    if bad:
        print("shlo is wrong or failed on: " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
