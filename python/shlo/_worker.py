"""The child process of ``shlo.isolation.Worker``: runs tasks until stdin closes.

Each request is ``{"id": ..., "task": name, **arguments}`` and gets the reply
``(id, "ok", result, retire)`` or ``(id, "error", (message, diagnostics),
retire)``; after a reply with ``retire`` set the worker exits, since its
memory may be damaged (``shlo.io.heap_may_be_damaged``). The
worker exits when its host dies: the kernel's parent-death signal where the
host allows it, and a watchdog thread polling the parent's pid otherwise.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import resource
import select
import signal
import sys
import threading
import time
import traceback
from typing import Any, BinaryIO

from shlo import fast_walks, progress
from shlo._mlir_compat import (
    defer_context_teardown,
    defer_engine_teardown,
    destroy_finished_engines,
    ir,
    prepare_context,
    release_finished_contexts,
    use_linalg_without_opdsl,
)
from shlo.backends import load_backend
from shlo.custom_calls import install as install_custom_calls
from shlo.diagnostics import ShloError
from shlo.dtypes import storage_element_type
from shlo.frontend import (
    inspect_entry,
    inspect_module,
    retry_verifying_each_pass,
    verifying_each_pass,
)
from shlo.interpreter import interpret
from shlo.io import heap_may_be_damaged, load_module
from shlo.isolation import (
    kill_with_parent_thread,
    positive_setting,
    read_message,
    write_message,
)
from shlo.opt_task import opt
from shlo.pipeline import prepare_pass_managers, record_pipelines, recorded_pipelines
from shlo.refine import refine_to_bytecode
from shlo.torch import lower_to_stablehlo as lower_torch_to_stablehlo


def echo(value: Any, delay: float = 0.0) -> Any:
    """``value`` after ``delay`` seconds: a health check, and slow requests for tests."""
    time.sleep(delay)
    return value


def lower(backend: str, custom_calls: dict[str, str] | None = None, **request: Any) -> Any:
    """The code the backend at ``backend`` ("module:attribute") makes for the request.

    ``custom_calls``: the host's user-registered custom-call handlers.
    """
    install_custom_calls(custom_calls or {})
    return _retried(lambda: load_backend(backend).lower(**request))


def _retried(run: Any) -> Any:
    """A compilation, run again verifying each frontend pass when it fails, unless
    the failure may have damaged the heap (shlo.frontend.retry_verifying_each_pass)."""
    return retry_verifying_each_pass(run, lambda: not heap_may_be_damaged())


def inspect_and_lower(
    backend: str,
    source: bytes | str,
    entry: str,
    filename: str,
    options: Any,
    max_bytes: int,
    custom_calls: dict[str, str] | None = None,
) -> tuple[Any, Any]:
    """``inspect``, then for an entry with static parameters ``lower`` too, in one request.

    One parse and one MLIR context instead of two: 5 of a small program's
    40 ms. The code is None for a shape-polymorphic entry.
    """
    module = load_module(source, filename=filename)
    signature = inspect_module(module, entry, filename)
    if any(None in shape or storage_element_type(t) is None for shape, t in signature.params):
        return signature, None  # shape-polymorphic, or an error the caller reports
    request = {"entry": entry, "arg_types": None, "options": options, "filename": filename}
    install_custom_calls(custom_calls or {})
    target = load_backend(backend)
    # A failed first run changed the parsed module: the second reads the source again.
    sources = iter([module])
    return signature, _retried(
        lambda: target.lower(source=next(sources, source), max_bytes=max_bytes, **request)
    )


def emit(
    backend: str, kind: str, custom_calls: dict[str, str] | None = None, **request: Any
) -> bytes:
    """The artifact of ``kind`` that the backend at ``backend`` makes for the request."""
    install_custom_calls(custom_calls or {})
    target = load_backend(backend)
    return target.emit(kind, _retried(lambda: target.lower(**request)))


# Task name -> function called with the request's other fields.
TASKS = {
    "echo": echo,
    "inspect": inspect_entry,
    "inspect_and_lower": inspect_and_lower,
    "lower": lower,
    "emit": emit,  # shlo-compile (tools/shlo_compile.py)
    "refine": refine_to_bytecode,
    "interpret": interpret,
    "opt": opt,  # shlo-opt: parse, run passes, print (tools/shlo_opt.py)
    "torch_to_stablehlo": lower_torch_to_stablehlo,  # shlo.torch.compile
}

# Deeply nested input recurses deeply in the parser and in passes: tasks run
# on a thread with a large stack (reserved, not committed, memory).
_TASK_STACK_BYTES = 1 << 30
_WATCHDOG_SECONDS = 0.5


def _exit_with_parent(parent: int) -> None:
    if os.environ.get("SHLO_WORKER_DEATHSIG") == "1":
        kill_with_parent_thread()  # best effort: the watchdog below still works

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_WATCHDOG_SECONDS)
        os._exit(1)

    # Also covers a parent that died before prctl ran.
    threading.Thread(target=watch, name="shlo-parent-watchdog", daemon=True).start()


def memory_limit() -> int:
    """Bytes of heap the worker may use: SHLO_WORKER_MEMORY, else 3/4 of physical memory.

    Runaway input (200,000 nested modules) once took 24 GB: past the limit an
    allocation fails and the worker dies, before the OOM killer picks a victim
    that may be the host.
    """
    value = positive_setting("SHLO_WORKER_MEMORY", int, "bytes")
    if value is not None:
        return int(value)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4


def _limit_memory() -> None:
    try:
        limit = memory_limit()
        # RLIMIT_DATA bounds the heap and private mappings, not reserved
        # address space (the task thread's stack, the JIT's reservations).
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError, ShloError):
        pass  # not settable here: the host's byte limit still applies


def _run(request: dict[str, Any]) -> tuple[str, Any]:
    # Set by the host when the request crashed a worker (shlo.isolation).
    careful = request.pop("verify_each_pass", False)
    try:
        task = TASKS[request.pop("task")]
        with verifying_each_pass() if careful else contextlib.nullcontext():
            return ("ok", task(**request))
    except ShloError as error:
        return ("error", (error.summary, error.diagnostics))
    except RecursionError:
        return ("error", ("input nested too deeply", []))
    except Exception as error:  # reported to the caller, which raises it
        traceback.print_exc()
        return ("error", (f"internal error: {error}", []))


def _serve(request_id: Any, request: dict[str, Any], replies: BinaryIO) -> None:
    # Stages entered while this request runs go to the host as interim replies.
    def report(name: str) -> None:
        write_message(replies, (request_id, "progress", name, False))

    progress.set_reporter(report)
    try:
        status, payload = _run(request)
    finally:
        progress.set_reporter(None)
    # Sent before this thread exits: with a damaged heap, the exit itself may
    # abort (glibc frees the thread's cache), and the reply must not be lost.
    try:
        write_message(replies, (request_id, status, payload, heap_may_be_damaged()))
    except BaseException:
        # On this thread an exception would be lost and the host would wait
        # for the reply until its timeout: exit, so that it sees a crash.
        traceback.print_exc()
        os._exit(1)


class _TaskThread:
    """The thread, with a large stack, that serves each request in turn.

    One thread for every request: a new one each time cost about 1 ms of a
    small program's 13 ms compile (its stack and malloc arena start cold).
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Any, dict[str, Any], BinaryIO]] = (
            queue.SimpleQueue()
        )
        self._served = threading.Event()
        # Raises RuntimeError when there is no room for the stack (strict overcommit).
        threading.Thread(target=self._serve_forever, name="shlo-task", daemon=True).start()

    def _serve_forever(self) -> None:
        while True:
            request = self._requests.get()
            try:
                _serve(*request)
            finally:
                self._served.set()

    def serve(self, request_id: Any, request: dict[str, Any], replies: BinaryIO) -> None:
        self._served.clear()
        self._requests.put((request_id, request, replies))
        self._served.wait()


_task_thread: _TaskThread | None = None


def _serve_on_large_stack(request_id: Any, request: dict[str, Any], replies: BinaryIO) -> None:
    global _task_thread
    if _task_thread is None:
        try:
            _task_thread = _TaskThread()
        except RuntimeError:  # no room for the stack: the normal one
            _serve(request_id, request, replies)
            return
    _task_thread.serve(request_id, request, replies)


# A little of everything a compilation of a model imports: a matmul, an
# elementwise chain with exp, a reduction.
_WARM_UP_PROGRAM = """
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8xf32> {
  %m = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %e = stablehlo.exponential %m : tensor<8x32xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<8x32xf32>, tensor<f32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}
"""


def _warm_up() -> None:
    """Compile a small program for the CPU, for the first-use costs of compiling."""
    from shlo.backends.cpu.lowering import lower_to_object

    try:
        lower_to_object(_WARM_UP_PROGRAM, "main", None)
    except Exception:  # the first real request reports whatever fails
        pass


# Python's cyclic collector at its defaults (a young collection every 700
# allocations, older ones in turn) traversed the 90,000 objects the worker's
# imports and warm-up leave, in the middle of compiles: 4.5 ms of collections
# in each GPT-2 compile, the worst 56 ms, and 9-20 ms in one matmul compile
# of ten. Those objects live as long as the worker: they are frozen out of
# collections, and young objects are collected after 20,000 allocations, more
# than a GPT-2 compile leaves (none of its compiles collected then).
GC_THRESHOLDS = (20_000, 20, 100)
_gc_tuned = False


def _freeze_long_lived_objects() -> None:
    global _gc_tuned
    _gc_tuned = True
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


_fast_walks_tried = False


def _try_fast_walks() -> None:
    """Walks in C (``shlo.fast_walks``) from now on, when the machine has a C compiler."""
    global _fast_walks_tried
    _fast_walks_tried = True
    from shlo.backends.cpu.runtime import linker

    driver = linker()
    if driver is None:
        return
    try:
        fast_walks.enable(driver)
    except Exception:  # walks stay in Python
        pass


_glue_codegen_tried = False


def _prepare_glue_codegen() -> None:
    """The target machine that compiles glue-only modules (``glue_codegen``), about
    30 ms, before a request needs it."""
    global _glue_codegen_tried
    _glue_codegen_tried = True
    from shlo.backends.cpu import glue_codegen

    glue_codegen.prepare()


def _request_waiting() -> bool:
    return bool(select.select([0], [], [], 0)[0])


def _prepare_pass_managers(context: ir.Context) -> None:
    """The pass managers of the last request's pipelines, initialized for the next
    one's context (``shlo.pipeline.prepare_pass_managers``), until a request arrives."""
    try:
        prepare_pass_managers(context, recorded_pipelines(), _request_waiting)
    except Exception:  # the request builds its own
        pass


def main() -> None:
    parent = int(os.environ.get("SHLO_WORKER_PARENT", os.getppid()))
    _exit_with_parent(parent)
    _limit_memory()
    # Ctrl-C in a terminal reaches the whole process group; the host decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.stack_size(_TASK_STACK_BYTES)
    sys.setrecursionlimit(50_000)
    # One request at a time, and no other thread in MLIR or LLVM when code
    # generation forks (shlo.backends.cpu.parallel_codegen).
    from shlo.backends.cpu import parallel_codegen

    parallel_codegen.fork_allowed = True
    use_linalg_without_opdsl()
    defer_engine_teardown()
    defer_context_teardown()
    record_pipelines()
    # Not when the host already waits: the request itself pays those costs.
    if os.environ.get("SHLO_WORKER_WARM_UP") == "1" and not _request_waiting():
        _warm_up()
    # Replies go to the original stdout; anything printed there later, by C++
    # or Python, goes to stderr instead and cannot corrupt the reply stream.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        try:
            context = prepare_context()
        except Exception:  # the request makes its own, and reports what fails
            context = None
        # Building it takes about 40 ms: not while a request waits.
        if not _fast_walks_tried and not _request_waiting():
            _try_fast_walks()
        if not _glue_codegen_tried and not _request_waiting():
            _prepare_glue_codegen()
        # After the first-use costs above, whose objects live on too.
        if not _gc_tuned and not _request_waiting():
            _freeze_long_lived_objects()
        if context is not None:
            _prepare_pass_managers(context)
        # Last, and not while a request waits: each takes about 2 ms.
        destroy_finished_engines(_request_waiting)
        release_finished_contexts(_request_waiting)
        try:
            request = read_message(requests)
        except EOFError:
            return
        _serve_on_large_stack(request.pop("id", None), request, replies)
        if heap_may_be_damaged():
            return


if __name__ == "__main__":
    main()
