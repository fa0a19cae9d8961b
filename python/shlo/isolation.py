"""Run parsing, passes, code generation and the interpreter in a child process.

An abort, a segfault or a stack overflow there cannot kill the caller. One
long-lived worker per host process serves all requests: pickled,
length-prefixed messages on its stdin and stdout, each carrying the request's
id. Any failure during an exchange (the worker dies, a timeout, a
KeyboardInterrupt, a reply with the wrong id) kills and discards the worker,
so no stale reply is ever read by a later request; the next request starts a
fresh worker. So does a reply marked ``retire``: the worker ran MLIR's
bytecode reader on input it rejected, which may have damaged its heap. The
worker exits soon after its host dies (see ``_worker``).
"""

from __future__ import annotations

import ctypes
import itertools
import math
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, BinaryIO

from shlo import progress
from shlo.diagnostics import ShloError

_HEADER = struct.Struct("<Q")

# Seconds a request may take, unless the caller or SHLO_COMPILE_TIMEOUT says otherwise.
DEFAULT_TIMEOUT = 600.0


_PR_SET_PDEATHSIG = 1


def kill_with_parent_thread() -> None:
    """Ask Linux to SIGKILL this process when the thread that started it exits.

    Best effort (other systems, or no prctl): callers also check that their
    parent is alive.
    """
    if sys.platform != "linux":
        return
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def positive_setting(name: str, kind: type[int] | type[float], unit: str) -> int | float | None:
    """The positive number in environment variable ``name``, or None when it is unset."""
    text = os.environ.get(name)
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ShloError(f"{name}={text!r}: expected a number of {unit}") from None
    if value <= 0:
        raise ShloError(f"{name}={text!r}: expected a positive number of {unit}")
    return value


def default_timeout() -> float:
    """SHLO_COMPILE_TIMEOUT (seconds) when set, else DEFAULT_TIMEOUT."""
    return positive_setting("SHLO_COMPILE_TIMEOUT", float, "seconds") or DEFAULT_TIMEOUT


def write_message(stream: BinaryIO, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_message(stream: BinaryIO) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class _Timeout(Exception):
    pass


# Worker tasks that compile a program: run again, verifying after each
# frontend pass, when they crash a fresh worker.
_COMPILATIONS = frozenset({"lower", "inspect_and_lower", "emit"})


class _Crashed(Exception):
    """The worker died during an exchange, after serving ``served`` earlier requests."""

    def __init__(self, signal: str, last_words: str, served: int) -> None:
        super().__init__(signal)
        self.signal, self.last_words, self.served = signal, last_words, served


def _read_exactly(fd: int, size: int, deadline: float) -> bytes:
    """``size`` bytes from ``fd``; EOFError when it closes, _Timeout past ``deadline``."""
    chunks = []
    # poll, not select: select fails on descriptors above 1023.
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while size:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(math.ceil(remaining * 1000)):
            raise _Timeout
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_reply(fd: int, deadline: float) -> Any:
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    return pickle.loads(_read_exactly(fd, size, deadline))


def _signal_name(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            pass
    return f"exit status {returncode}"


class Worker:
    """A child Python process that runs the tasks of ``shlo._worker.TASKS`` on request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._ids = itertools.count(1)
        self._served = 0  # requests the current process has answered

    @property
    def pid(self) -> int | None:
        """The worker's process id, None before the first request or after a failure."""
        return self._process.pid if self._process is not None else None

    def prestart(self, warm_up: bool = False) -> None:
        """Start the worker process now, if none runs, without waiting for it.

        For callers that know a request will come (``shlo.jax.jit`` when it
        decorates): the process starts (about 0.2 s) while they go on. With
        ``warm_up`` it then compiles a small program for the CPU before it
        reads a request, which pays a process's first-use costs of compiling
        (pass modules, dialects, LLVM's target: about 0.3 s) ahead of time.
        """
        if not self._lock.acquire(blocking=False):
            return  # a request is running: the worker is up
        try:
            if self._process is None or self._process.poll() is not None:
                self._process, self._served = self._start(warm_up), 0
        finally:
            self._lock.release()

    def _start(self, warm_up: bool = False) -> subprocess.Popen[bytes]:
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["SHLO_WORKER_WARM_UP"] = "1" if warm_up else "0"
        # The child must import the same shlo as this process, even one found
        # through a sys.path entry added at run time.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, sys.path))
        env["SHLO_WORKER_PARENT"] = str(os.getpid())
        # The kernel's parent-death signal fires when the *thread* that started
        # the child exits, so it is only safe from the main thread; from other
        # threads the worker relies on its watchdog alone.
        on_main_thread = threading.current_thread() is threading.main_thread()
        env["SHLO_WORKER_DEATHSIG"] = "1" if on_main_thread else "0"
        return subprocess.Popen(
            [sys.executable, "-m", "shlo._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )

    def call(self, task: str, /, *, timeout: float | None = None, **request: Any) -> Any:
        """The result of ``_worker.TASKS[task](**request)``, computed in the worker.

        Raises ShloError for errors in the input (with the worker's
        diagnostics), when the worker crashes and when it takes longer than
        ``timeout`` seconds (default: ``default_timeout()``).
        """
        limit = default_timeout() if timeout is None else timeout
        with self._lock:
            while True:
                if self._process is None or self._process.poll() is not None:
                    self._process, self._served = self._start(), 0
                try:
                    status, payload = self._exchange(task, limit, request)
                    break
                except _Crashed as crash:
                    # Corrupt input can damage a worker's heap and still end
                    # in a clean error; the next request then crashes. Only a
                    # crash in a fresh worker is this request's own.
                    its_own = crash.served == 0
                    if its_own and task in _COMPILATIONS and not request.get("verify_each_pass"):
                        # Perhaps a pass crashed on invalid IR an earlier one
                        # made: verified after each pass, the input gets that
                        # error (shlo.frontend.prepare_static).
                        request = {**request, "verify_each_pass": True}
                        continue
                    if its_own:
                        raise ShloError(
                            f"the {task} process crashed ({crash.signal}) on "
                            f"{request.get('filename', 'the module')}: {crash.last_words}"
                        ) from None
            self._served += 1
        if status == "error":
            message, diagnostics = payload
            raise ShloError(message, diagnostics)
        return payload

    def _exchange(self, task: str, limit: float, request: dict[str, Any]) -> tuple[str, Any]:
        """One request and its reply (lock held); any failure discards the worker."""
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        request_id = next(self._ids)
        try:
            write_message(process.stdin, {"id": request_id, "task": task, **request})
            deadline = time.monotonic() + limit
            while True:
                reply_id, status, payload, retire = _read_reply(process.stdout.fileno(), deadline)
                if status != "progress":
                    break
                # An interim reply: the stage a compilation entered (shlo.progress).
                show = progress.listener()
                if show is not None and reply_id == request_id:
                    show(payload)
            if reply_id != request_id:
                raise ShloError(
                    f"worker protocol error: reply {reply_id!r} to request {request_id}"
                )
        except (EOFError, BrokenPipeError, OSError, pickle.UnpicklingError, ValueError):
            self._discard()
            raise _Crashed(_signal_name(process.returncode), self._last_words(), self._served)
        except _Timeout:
            self._discard()
            raise ShloError(
                f"the {task} process timed out after {limit:g} s on "
                f"{request.get('filename', 'the module')} (raise the limit with "
                "timeout= or SHLO_COMPILE_TIMEOUT)"
            ) from None
        except BaseException:
            # KeyboardInterrupt included: the reply to this request may
            # still arrive, so this worker can never be trusted again.
            self._discard()
            raise
        if retire:
            self._discard()  # it exits: its memory may be damaged
        return status, payload

    def _discard(self) -> None:
        """Kill the worker (lock held); the next request starts a fresh one."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()  # type: ignore[union-attr]
                except OSError:
                    pass

    def _last_words(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return "; ".join(lines[-3:]) or "no message"

    def close(self) -> None:
        with self._lock:
            self._discard()


_worker: Worker | None = None
_worker_lock = threading.Lock()


def shared_worker() -> Worker:
    """The process-wide worker, created on first use (thread-safe)."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = Worker()
        return _worker


def _forget_the_parents_worker() -> None:
    """In a forked child: start a worker of its own when it needs one.

    The child inherits the parent's worker, pipes and request counter: its
    requests would interleave with the parent's on one worker, and a reply
    could reach the process that did not ask (the same request id in both).
    Since shlo.jax.jit starts the worker when it decorates, a program that
    forks after merely importing a decorated function had it too.
    """
    global _worker, _worker_lock
    _worker = None
    _worker_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_the_parents_worker)
