"""The worker process: protocol, interruption, timeouts, host death and crashing input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo._mlir_compat import LOADED_DIALECTS, ir, new_context, prepare_context
from shlo.backends.cpu import CpuBackend, runtime
from shlo.io import module_to_bytecode
from shlo.isolation import Worker, shared_worker, write_message

NEGATE = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.negate %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
CHLO_ERF = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = chlo.erf %x : tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
DOUBLE = NEGATE.replace("stablehlo.negate %x", "stablehlo.add %x, %x")
X = np.array([1, 2, 3], np.float32)


@pytest.fixture
def worker():
    worker = Worker()
    yield worker
    worker.close()


def _interrupt_after(seconds: float):
    """Raise KeyboardInterrupt in the main thread after ``seconds``, as Ctrl-C would."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return previous


def test_interrupted_request_leaves_no_stale_reply() -> None:
    worker = shared_worker()
    assert worker.call("echo", value="warm") == "warm"
    previous = _interrupt_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            worker.call("echo", value="stale", delay=1.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert worker.pid is None, "the interrupted worker must be discarded"
    # Long enough for the interrupted reply to have been written, had the worker lived.
    time.sleep(1.0)
    assert worker.call("echo", value="first") == "first"
    np.testing.assert_array_equal(shlo.compile(NEGATE)(X), -X)
    np.testing.assert_array_equal(shlo.compile(DOUBLE)(X), 2 * X)


def test_interrupted_compile_leaves_no_stale_reply() -> None:
    # A compilation that takes seconds, interrupted while the worker lowers it.
    slow = call_chain(3000, "stablehlo.exponential", "3")
    np.testing.assert_array_equal(shlo.compile(NEGATE)(X), -X)  # a warm worker
    previous = _interrupt_after(1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            shlo.compile(slow)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    np.testing.assert_array_equal(shlo.compile(DOUBLE)(X), 2 * X)
    np.testing.assert_array_equal(shlo.compile(NEGATE)(X), -X)


def test_prepared_context_is_handed_out_once_and_is_complete() -> None:
    # The worker prepares the next request's context while it waits.
    prepare_context()
    prepared = new_context()
    assert new_context() is not prepared  # taken: the next one is made anew
    prepare_context()
    prepare_context()  # one is prepared, not two
    assert new_context() is not new_context()
    module = ir.Module.parse(CHLO_ERF, prepared)  # every dialect new_context loads
    assert "chlo.erf" in str(module)


def test_context_loads_the_working_dialects_and_parses_any_other() -> None:
    # Loading every registered dialect made each canonicalize slower; the
    # rest load when the parser first meets one of their ops.
    context = new_context()
    assert all(context.is_dialect_loaded(name) for name in LOADED_DIALECTS)
    assert not context.is_dialect_loaded("tosa")
    module = ir.Module.parse(
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = tosa.abs %x : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %y : tensor<4xf32>\n}",
        context,
    )
    assert "tosa.abs" in str(module)
    assert context.is_dialect_loaded("tosa")


@pytest.mark.parametrize("pause", [0.0, 0.2])
def test_compiles_in_a_row_each_get_their_own_program(pause: float) -> None:
    # Each request parses into the context prepared while the worker was idle,
    # and with a pause runs the pass managers it prepared for that context.
    sources = [NEGATE, DOUBLE, NEGATE.replace("negate", "abs"), DOUBLE] * 3
    expected = [-X, 2 * X, np.abs(X), 2 * X] * 3
    for source, want in zip(sources, expected):
        time.sleep(pause)
        np.testing.assert_array_equal(shlo.compile(source)(X), want)


def test_reply_to_another_request_is_a_protocol_error(worker: Worker) -> None:
    assert worker.call("echo", value=1) == 1
    first_pid = worker.pid
    # A request the host did not make: its reply arrives before the next one's.
    write_message(worker._process.stdin, {"id": 10_000, "task": "echo", "value": "stale"})
    with pytest.raises(shlo.ShloError, match=r"worker protocol error: reply 10000 to request 2"):
        worker.call("echo", value=2)
    assert worker.pid is None
    assert worker.call("echo", value=3) == 3
    assert worker.pid != first_pid


def test_timeout_kills_the_worker(worker: Worker) -> None:
    assert worker.call("echo", value=1) == 1
    pid = worker.pid
    started = time.monotonic()
    with pytest.raises(shlo.ShloError, match=r"the echo process timed out after 0.5 s"):
        worker.call("echo", value=2, delay=30, timeout=0.5)
    assert time.monotonic() - started < 10
    assert worker.pid is None
    assert not _alive(pid)
    assert worker.call("echo", value=3) == 3


def test_bytecode_the_reader_would_overrun_on_is_refused_before_reading() -> None:
    # A bit-flipped artifact (found by the fuzzer): MLIR's reader wrote past
    # its attribute array, then the worker hung or aborted, now or later.
    poison = (Path(__file__).parent / "fuzz_regressions" / "heap_poison.mlirbc").read_bytes()
    worker = Worker()
    try:
        for _ in range(3):
            with pytest.raises(
                shlo.ShloError, match=r"^poison: error: malformed bytecode: a group"
            ):
                worker.call("inspect", source=poison, entry="main", filename="poison")
            pid = worker.pid
            signature = worker.call("inspect", source=NEGATE, entry="main", filename="negate")
            assert signature.params == [((3,), "f32")]
            assert worker.pid == pid, "the reader never ran: the worker is kept"
    finally:
        worker.close()


def test_worker_is_replaced_after_the_bytecode_reader_fails(worker: Worker) -> None:
    # The reader can damage the heap before it reports an error, so the worker
    # that ran it exits; errors in text leave the worker in service.
    bytecode = module_to_bytecode(shlo.load_module(NEGATE))
    with pytest.raises(shlo.ShloError, match=r"^text:4:27: error"):
        worker.call("inspect", source=NEGATE[:-3], entry="main", filename="text")
    text_pid = worker.pid
    assert text_pid is not None
    with pytest.raises(shlo.ShloError):
        worker.call("inspect", source=bytecode[:-20], entry="main", filename="cut")
    assert worker.pid is None
    assert not _alive(text_pid)
    assert worker.call("inspect", source=bytecode, entry="main", filename="whole").params
    assert worker.pid is not None


def test_worker_memory_is_limited(monkeypatch, worker: Worker) -> None:
    # Runaway input once grew a worker to 24 GB; past its limit it dies instead.
    monkeypatch.setenv("SHLO_WORKER_MEMORY", str(400 << 20))
    assert len(worker.call("echo", value=b"x" * (50 << 20))) == 50 << 20
    with pytest.raises(shlo.ShloError, match="crashed"):
        worker.call("echo", value=b"x" * (600 << 20))
    monkeypatch.delenv("SHLO_WORKER_MEMORY")
    assert worker.call("echo", value=1) == 1


def test_compile_timeout_from_argument_and_environment(monkeypatch) -> None:
    # A fresh worker takes far longer than 1 ms to start and parse.
    shared_worker().close()
    with pytest.raises(shlo.ShloError, match=r"timed out after 0.001 s.*timeout= or SHLO_COMPILE"):
        shlo.compile(NEGATE, timeout=0.001)
    shared_worker().close()
    monkeypatch.setenv("SHLO_COMPILE_TIMEOUT", "0.001")
    with pytest.raises(shlo.ShloError, match=r"timed out after 0.001 s"):
        shlo.compile(NEGATE)
    monkeypatch.setenv("SHLO_COMPILE_TIMEOUT", "soon")
    with pytest.raises(shlo.ShloError, match=r"SHLO_COMPILE_TIMEOUT='soon': expected a number"):
        shlo.compile(NEGATE)
    monkeypatch.delenv("SHLO_COMPILE_TIMEOUT")
    np.testing.assert_array_equal(shlo.compile(NEGATE)(X), -X)


def test_shared_worker_is_created_once_across_threads(monkeypatch) -> None:
    import shlo.isolation as isolation

    monkeypatch.setattr(isolation, "_worker", None)
    created = []
    original_init = Worker.__init__

    def slow_init(self) -> None:
        time.sleep(0.05)  # widens the window between the check and the assignment
        original_init(self)
        created.append(self)

    monkeypatch.setattr(Worker, "__init__", slow_init)
    barrier = threading.Barrier(8)
    found = []

    def get() -> None:
        barrier.wait()
        found.append(shared_worker())

    threads = [threading.Thread(target=get) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(created) == 1 and all(w is created[0] for w in found)
    created[0].close()


def _alive(pid: int | None) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped counts as gone)."""
    if pid is None:
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


HOST = """
import sys, threading, time
sys.path[:0] = {path!r}
from shlo.isolation import shared_worker
worker = shared_worker()
start = lambda: worker.call("echo", value=0)
if {from_thread!r}:
    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
else:
    start()
print(worker.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("from_thread", [False, True], ids=["main-thread", "other-thread"])
def test_worker_exits_when_its_host_is_killed(from_thread: bool) -> None:
    # From another thread the parent-death signal is not used: the watchdog works alone.
    script = HOST.format(path=sys.path, from_thread=from_thread)
    host = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(host.stdout.readline())
        assert _alive(pid)
    finally:
        host.kill()
        host.wait()
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), f"worker {pid} outlived its host"


DEEP_INPUTS = {
    "nested modules": "module {\n" * 6000 + "}\n" * 6000,
    "nested brackets": (
        "func.func @main() -> tensor<f32> attributes {a = " + "(" * 100_000 + ")" * 100_000 + "}"
    ),
}


@pytest.mark.parametrize("source", DEEP_INPUTS.values(), ids=DEEP_INPUTS.keys())
def test_deeply_nested_input_is_an_error_not_a_crash(source: str) -> None:
    # Parsed in the host, these overflow the stack and kill it.
    with pytest.raises(shlo.ShloError) as caught:
        shlo.compile(source)
    assert "Traceback" not in str(caught.value)


def test_corrupt_bytecode_never_kills_the_host() -> None:
    bytecode = module_to_bytecode(shlo.load_module(NEGATE))
    rng = np.random.default_rng(0)
    for _ in range(20):
        data = bytearray(bytecode)
        position = int(rng.integers(8, len(data)))
        data[position] ^= 1 << int(rng.integers(8))
        try:
            # One of these flips sends the bytecode reader into an endless loop.
            shlo.compile(bytes(data), timeout=10)
        except shlo.ShloError as error:
            assert "internal error" not in str(error)
    np.testing.assert_array_equal(shlo.compile(bytecode)(X), -X)


def test_isolated_compile_generates_no_code_in_the_host(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the host ran LLVM's code generator")

    monkeypatch.setattr(runtime, "ExecutionEngine", refuse)
    monkeypatch.setattr(runtime, "write_object_file", refuse)
    monkeypatch.setattr(runtime, "compile_object", refuse)
    np.testing.assert_array_equal(shlo.compile(DOUBLE)(X), 2 * X)
    with pytest.raises(AssertionError, match="code generator"):
        shlo.compile(DOUBLE, isolate=False)


def call_chain(depth: int, last_op: str, shape: str) -> str:
    """@main calling @f0 calling @f1 ... calling @f{depth-1}, which applies ``last_op``."""
    tensor = f"tensor<{shape}xf32>"
    functions = [
        f"func.func @main(%x: {tensor}) -> {tensor} {{\n"
        f"  %0 = call @f0(%x) : ({tensor}) -> {tensor}\n"
        f"  return %0 : {tensor}\n}}"
    ]
    for index in range(depth):
        body = (
            f"%0 = call @f{index + 1}(%x) : ({tensor}) -> {tensor}"
            if index < depth - 1
            else f"%0 = {last_op} %x : {tensor}"
        )
        functions.append(
            f"func.func private @f{index}(%x: {tensor}) -> {tensor} {{\n"
            f"  {body}\n  return %0 : {tensor}\n}}"
        )
    return "\n".join(functions)


def test_refine_runs_in_the_worker_and_returns_a_module() -> None:
    # 3,000 nested private calls: the inliner's recursion overflows a normal stack.
    source = call_chain(3000, "stablehlo.negate", "?")
    context = shlo.new_context()
    refined = shlo.refine(source, ["tensor<3xf32>"], context=context)
    assert isinstance(refined, shlo.ir.Module) and refined.context is context
    text = str(refined)
    assert "call" not in text and "stablehlo.negate %arg0 : tensor<3xf32>" in text


def test_shlo_error_keeps_its_diagnostics_across_the_process_boundary(tmp_path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  return %y\n}\n")
    with pytest.raises(shlo.ShloError) as caught:
        shlo.compile(path)
    diagnostic = caught.value.diagnostics[0]
    assert (diagnostic.file, diagnostic.line) == (str(path), 2)
    assert str(caught.value).startswith(f"{path}:2:")


def test_worker_ignores_ctrl_c_sent_to_the_process_group(worker: Worker) -> None:
    assert worker.call("echo", value=1) == 1
    os.kill(worker.pid, signal.SIGINT)
    assert worker.call("echo", value=2, delay=0.2) == 2


def test_a_reply_that_cannot_be_sent_ends_the_worker() -> None:
    # The reply is written on the task thread, where an exception would be
    # lost and the host would wait for it until its timeout.
    script = """
import io, threading
from shlo import _worker
class Closed(io.RawIOBase):
    def write(self, data):
        raise BrokenPipeError("the host is gone")
_worker._serve_on_large_stack(1, {"task": "echo", "value": 2}, Closed())
print("still running")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "still running" not in done.stdout and "the host is gone" in done.stderr


def test_import_shlo_leaves_the_linalg_and_llvm_op_modules_to_the_worker() -> None:
    # They took 100 ms of the 260 ms of `import shlo`; the calling process
    # never builds linalg or LLVM ops, and the worker imports them on first use.
    check = (
        "import sys, shlo\n"
        "heavy = [m for m in ('torch_mlir.dialects.linalg', 'torch_mlir.dialects.llvm')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from shlo._mlir_compat import linalg, translate_module_to_llvmir\n"
        "assert callable(translate_module_to_llvmir) and hasattr(linalg, 'MatmulOp')\n"
        "exe = shlo.compile('func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {"
        " %b = stablehlo.add %a, %a : tensor<2xf32> return %b : tensor<2xf32> }')\n"
        "import numpy as np\n"
        "assert list(exe(np.ones(2, np.float32))) == [2, 2]\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


RELU_CALL = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @crash_unless_verified(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_a_compilation_that_crashes_runs_again_verifying_each_pass() -> None:
    # The frontend verifies once per pipeline; a pass that crashes on IR an
    # earlier pass left invalid gets a second run that verifies after each
    # pass. The handler stands in for that pass: it dies unless verifying.
    from shlo import custom_calls

    handler = "custom_call_handlers:lower_relu_unless_passes_run_unverified"
    custom_calls.register_custom_call("crash_unless_verified", handler)
    try:
        x = np.array([-1, 2, -3, 4], np.float32)
        np.testing.assert_array_equal(shlo.compile(RELU_CALL)(x), [0, 2, 0, 4])
        # A crash while verifying each pass is the input's: one retry, no more.
        custom_calls.register_custom_call("abort_always", "custom_call_handlers:abort")
        with pytest.raises(shlo.ShloError, match="process crashed"):
            shlo.compile(RELU_CALL.replace("@crash_unless_verified", "@abort_always"))
    finally:
        custom_calls.install({})


def test_the_frontend_verifies_each_pass_only_on_a_second_run_after_a_failure(
    monkeypatch,
) -> None:
    from shlo import frontend

    calls: list[bool] = []
    run_pipeline = frontend.run_pipeline

    def spy(module, pipeline, filename="<module>", verify_each=True):
        calls.append(verify_each)
        run_pipeline(module, pipeline, filename, verify_each)

    monkeypatch.setattr(frontend, "run_pipeline", spy)
    shlo.compile(NEGATE, isolate=False)
    assert calls == [False, False]
    calls.clear()
    unsupported = RELU_CALL.replace("@crash_unless_verified", "@nobody_handles_this")
    with pytest.raises(shlo.ShloError, match="custom call @nobody_handles_this is not supported"):
        shlo.compile(unsupported, isolate=False)
    assert calls == [False, False, True, True]


def test_prestarted_worker_warms_up_and_serves(worker: Worker) -> None:
    worker.prestart(warm_up=True)
    pid = worker.pid
    assert pid is not None and _alive(pid)
    worker.prestart(warm_up=True)  # running: nothing new
    assert worker.pid == pid
    # The warm-up compilation does not stand in the way of requests or their results.
    assert worker.call("echo", value=1) == 1
    assert worker.pid == pid
    lowered = worker.call(
        "lower",
        backend="shlo.backends.cpu:CpuBackend",
        source=DOUBLE,
        entry="main",
        arg_types=None,
        options=CpuBackend().options(None, None, None),
        filename="<string>",
        max_bytes=1 << 30,
    )
    np.testing.assert_array_equal(CpuBackend().load(lowered)([X])[0], 2 * X)
    assert worker.pid == pid


def test_jit_starts_the_worker_when_it_decorates(monkeypatch) -> None:
    import shlo.isolation as isolation
    import shlo.jax

    fresh = Worker()
    monkeypatch.setattr(isolation, "_worker", fresh)
    try:
        shlo.jax.jit(lambda x: x * 2)
        assert fresh.pid is not None  # started, not waited for
        shlo.jax.jit(lambda x: x * 2, isolate=False)  # compiles in this process: no worker
    finally:
        fresh.close()


def test_a_forked_child_compiles_with_a_worker_of_its_own() -> None:
    np.testing.assert_array_equal(shlo.compile(NEGATE)(X), -X)
    parent_worker = shared_worker()
    read, write = os.pipe()
    # As if another thread were compiling when the program forks: the child's
    # copy of the parent's worker is locked for good.
    with parent_worker._lock:
        child = os.fork()
    if child == 0:  # pragma: no cover (runs in the child)
        try:
            signal.alarm(120)  # a deadlock ends the child instead of the test
            ok = np.array_equal(shlo.compile(DOUBLE)(X), 2 * X)
            own = shared_worker() is not parent_worker
            os.write(write, b"ok" if ok and own else b"bad")
            shared_worker().close()
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 16) == b"ok"
    os.close(read)
    # The parent's worker was not disturbed.
    assert shared_worker() is parent_worker and parent_worker.pid is not None
    np.testing.assert_array_equal(shlo.compile(NEGATE.replace("negate", "abs"))(X), np.abs(X))
