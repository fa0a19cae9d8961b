"""The systems `python -m bench` compares: shlo, XLA (jax.jit), IREE and numpy.

Each ``prepare_*`` compiles one model, calls it once and returns a
``Prepared``: a zero-argument call to time, the first call's outputs as numpy
arrays (flattened in jax's pytree order) and the compile time. Every system
gets the inputs in the form it runs from: numpy arrays for shlo and numpy,
device arrays for XLA and IREE (uploaded once, outside the timing).

With ``--target cuda`` only shlo and XLA run, on the GPU, from jax GPU arrays
uploaded once; IREE and numpy are CPU peers and are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import export

from bench.models import Model

SYSTEMS = ("shlo", "xla", "iree", "numpy")
PEERS = ("xla", "iree", "numpy")
TARGETS = ("cpu", "cuda")
# --target cuda: the systems measured by default and the peers of shlo's ratio.
CUDA_SYSTEMS = ("shlo", "xla")
CUDA_PEERS = ("xla",)
CPU_PEER_NOTE = "CPU peer; not measured with --target cuda"


def peers_for(target: str) -> tuple[str, ...]:
    return CUDA_PEERS if target == "cuda" else PEERS


class Unavailable(Exception):
    """The system is not installed or has no version of this model: skipped, not failed."""


@dataclass
class Case:
    """A model exported once, shared by every system."""

    model: Model
    exported: export.Exported
    inputs: list[np.ndarray]  # the arguments the exported module takes, in its order

    @classmethod
    def export(cls, model: Model) -> Case:
        exported = export.export(jax.jit(model.fn), platforms=["cpu"])(*model.args)
        leaves = jax.tree_util.tree_leaves(tuple(model.args))
        inputs = [np.asarray(leaves[i]) for i in exported.module_kept_var_idx]
        return cls(model, exported, inputs)


@dataclass
class Prepared:
    call: Callable[[], Any]
    outputs: list[np.ndarray]
    compile_s: float | None  # the fastest compile
    note: str = ""
    first_compile_s: float | None = None

    @classmethod
    def compiled(
        cls,
        call: Callable[[], Any],
        outputs: list[np.ndarray],
        seconds: list[float],
        note: str = "",
    ) -> Prepared:
        """A system's Prepared from the seconds of its compiles, in order."""
        return cls(call, outputs, min(seconds), note, seconds[0])


def output_leaves(result: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(result)]


# Idle seconds before each compile after a model's first, as before the first
# (the previous model's timing): shlo's worker prepares for the next request
# while it waits, and compiles back to back were its slowest.
PAUSE_BEFORE_COMPILE_S = 0.1


def timed_compiles(
    compile_once: Callable[[Any], Any], compiles: int, setup: Callable[[], Any] = lambda: None
) -> tuple[Any, list[float]]:
    """The last of ``compiles`` results of ``compile_once(setup())`` (at least one), and the
    seconds each ``compile_once`` took (``setup``, untimed, makes its input afresh)."""
    seconds = []
    result = None
    for index in range(max(compiles, 1)):
        if index:
            time.sleep(PAUSE_BEFORE_COMPILE_S)
        made = setup()
        start = time.perf_counter()
        result = compile_once(made)
        seconds.append(time.perf_counter() - start)
    return result, seconds


def prepare_shlo(case: Case, threads: int | None, compiles: int = 1) -> Prepared:
    import shlo

    inputs = case.inputs
    blob = case.exported.mlir_module_serialized
    executable, seconds = timed_compiles(lambda _: shlo.compile(blob, threads=threads), compiles)
    # A static entry is compiled and loaded by shlo.compile, so its first
    # call, like XLA's and IREE's, is not compile time; a shape-polymorphic
    # one compiles on the first call (timed once).
    start = time.perf_counter()
    first = executable(*inputs)
    if executable.is_dynamic:
        seconds = [s + time.perf_counter() - start for s in seconds]
    return Prepared.compiled(lambda: executable(*inputs), output_leaves(first), seconds)


def prepare_shlo_cuda(case: Case, device: Any) -> Prepared:
    """shlo's CUDA executable, called with jax GPU arrays uploaded once, outside the timing.

    It takes any DLPack array on a CUDA device, returns device-resident results
    (``.numpy()`` copies one to the host) and synchronizes before returning, so
    a call's time includes the GPU work.
    """
    import shlo

    device_inputs = jax.block_until_ready([jax.device_put(x, device) for x in case.inputs])
    start = time.perf_counter()
    executable = shlo.compile(case.exported.mlir_module_serialized, target="cuda")
    first = executable(*device_inputs)
    compile_s = time.perf_counter() - start
    results = first if isinstance(first, (list, tuple)) else (first,)
    outputs = [np.asarray(r.numpy()) for r in results]
    return Prepared(lambda: executable(*device_inputs), outputs, compile_s)


def prepare_xla(case: Case, device: Any = None, compiles: int = 1) -> Prepared:
    """jax.jit's executable; on ``device`` (a jax GPU) when given, else jax's default (CPU).

    Its compile time is XLA's from StableHLO, as shlo's is: ``Lowered.compile()``,
    after an untimed trace and lowering to StableHLO. jax keeps what it traced,
    lowered and compiled for a function: its caches are cleared before each
    lowering, so that every compile is XLA's whole work (a second
    ``jax.jit(fn).lower(...).compile()`` took 0.3-1.2 ms).
    """
    # Committed to ``device`` when one is given, so that it is compiled for it.
    device_args = jax.block_until_ready(jax.device_put(case.model.args, device))

    def lowered() -> Any:
        jax.clear_caches()
        return jax.jit(case.model.fn).lower(*device_args)

    compiled, seconds = timed_compiles(lambda lowering: lowering.compile(), compiles, lowered)
    first = jax.block_until_ready(compiled(*device_args))
    return Prepared.compiled(
        lambda: jax.block_until_ready(compiled(*device_args)), output_leaves(first), seconds
    )


def prepare_iree(case: Case, compiles: int = 1) -> Prepared:
    try:
        import iree.compiler as iree_compiler
        import iree.runtime as iree_runtime
    except ImportError as error:
        raise Unavailable(f"IREE is not installed ({error.name})") from None

    def compile_text(text: str) -> bytes:
        return iree_compiler.compile_str(
            text,
            target_backends=["llvm-cpu"],
            input_type="stablehlo",
            extra_args=["--iree-llvmcpu-target-cpu=host"],
        )

    note = ""
    text = case.exported.mlir_module()
    start = time.perf_counter()
    try:
        vmfb = compile_text(text)
    except iree_compiler.CompilerToolError as error:
        # IREE may not know jax's Shardy annotations: retry with the module as
        # shlo's loader prints it, Shardy stripped.
        import shlo

        text = str(shlo.load_module(case.exported.mlir_module_serialized))
        start = time.perf_counter()
        vmfb = compile_text(text)
        note = f"compiled after shlo's loader stripped Shardy ({first_line(str(error))})"
    seconds = [time.perf_counter() - start]
    if compiles > 1:
        time.sleep(PAUSE_BEFORE_COMPILE_S)
        vmfb, more = timed_compiles(lambda _: compile_text(text), compiles - 1)
        seconds += more
    # local-task: IREE's multi-threaded CPU driver, one worker per core.
    config = iree_runtime.Config("local-task")
    context = iree_runtime.SystemContext(config=config)
    vm_module = iree_runtime.VmModule.copy_buffer(context.instance, vmfb)
    context.add_vm_module(vm_module)
    main = context.modules[vm_module.name]["main"]
    device_inputs = [iree_runtime.asdevicearray(config.device, x) for x in case.inputs]
    # The Python invoker waits for the results, so a call's time includes the work.
    first = main(*device_inputs)
    results = list(first) if isinstance(first, (list, tuple)) else [first]
    outputs = [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in results]
    return Prepared.compiled(lambda: main(*device_inputs), outputs, seconds, note)


def warm_up(systems: Sequence[str], target: str) -> dict[str, float]:
    """Seconds each compiler takes for its first, tiny program (``x + 1.0`` on 4 floats).

    Run once before the models, so no model's compile time includes a
    system's start-up: shlo's worker process importing MLIR, XLA's and IREE's
    first compilation in the process. The bench reports these times apart.
    """
    tiny = Model("warm-up", "4", lambda x: x + 1.0, (np.ones(4, np.float32),), 32.0, "byte")
    case = Case.export(tiny)
    times: dict[str, float] = {}
    for system in systems:
        start = time.perf_counter()
        try:
            if system == "shlo":
                import shlo

                shlo.compile(case.exported.mlir_module_serialized, target=target)
            elif system == "xla":
                jax.jit(tiny.fn).lower(*tiny.args).compile()
            elif system == "iree" and target == "cpu":
                prepare_iree(case)
            else:
                continue
        except Unavailable:
            continue
        times[system] = time.perf_counter() - start
    return times


def prepare_numpy(case: Case) -> Prepared:
    numpy_fn = case.model.numpy_fn
    if numpy_fn is None:
        raise Unavailable("no natural numpy version")
    args = jax.tree_util.tree_map(np.asarray, case.model.args)
    first = numpy_fn(*args)
    return Prepared(lambda: numpy_fn(*args), output_leaves(first), None)


def prepare(
    system: str,
    case: Case,
    threads: int | None,
    target: str = "cpu",
    device: Any = None,
    compiles: int = 1,
) -> Prepared:
    """The system's Prepared; ``device`` is the jax GPU with ``target="cuda"``.
    Each compiler compiles the model ``compiles`` times: its compile time is
    the fastest (shlo's CUDA backend compiles once)."""
    if target == "cuda":
        if system == "shlo":
            return prepare_shlo_cuda(case, device)
        if system == "xla":
            return prepare_xla(case, device, compiles)
        if system in SYSTEMS:
            raise Unavailable(CPU_PEER_NOTE)
    elif target != "cpu":
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    if system == "shlo":
        return prepare_shlo(case, threads, compiles)
    if system == "xla":
        return prepare_xla(case, compiles=compiles)
    if system == "iree":
        return prepare_iree(case, compiles)
    if system == "numpy":
        return prepare_numpy(case)
    raise ValueError(f"unknown system {system!r}; expected one of {', '.join(SYSTEMS)}")


def first_line(text: str, limit: int = 160) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else "")[:limit]


def compare(
    got: Sequence[np.ndarray], want: Sequence[np.ndarray], rtol: float
) -> tuple[str, float]:
    """("", worst error) when ``got`` matches ``want``, else (what differs, worst error).

    Integers and booleans must be equal. Floats (and complex numbers' real and
    imaginary parts) must have the same non-finite
    values and differ by at most ``rtol`` times the output's largest finite
    magnitude (relative errors of single elements near zero mean nothing after
    a reduction). The worst error is that difference over the magnitude.
    """
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}", float("inf")
    worst = 0.0
    for index, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        where = f"output {index}"
        if g.shape != w.shape:
            return f"{where}: shape {g.shape}, expected {w.shape}", float("inf")
        if g.dtype != w.dtype:
            return f"{where}: dtype {g.dtype}, expected {w.dtype}", float("inf")
        if not np.issubdtype(w.dtype, np.inexact) and not w.dtype.kind == "V":
            if not np.array_equal(g, w):
                return f"{where}: {np.count_nonzero(g != w)} elements differ", float("inf")
            continue
        if np.iscomplexobj(w):  # the real and imaginary parts side by side
            g, w = g.view(g.real.dtype), w.view(w.real.dtype)
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        finite = np.isfinite(w64)
        if not np.array_equal(np.isfinite(g64), finite) or not np.array_equal(
            g64[~finite], w64[~finite], equal_nan=True
        ):
            return f"{where}: non-finite values differ", float("inf")
        if not finite.any():
            continue
        scale = max(float(np.max(np.abs(w64[finite]))), 1e-30)
        error = float(np.max(np.abs(g64[finite] - w64[finite]))) / scale
        worst = max(worst, error)
        if not error <= rtol:
            return f"{where}: max |error| is {error:.2e} of max |value|, over rtol {rtol:g}", error
    return "", worst
