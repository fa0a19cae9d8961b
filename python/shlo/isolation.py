"""Run passes and the interpreter in a child process, so that an abort cannot kill the caller.

One long-lived worker per host process serves all compilations: requests and
replies are pickled, length-prefixed messages on its stdin and stdout. When
the worker dies, the request fails with a ShloError that quotes the worker's
last words on stderr, and the next request starts a fresh worker.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Any, BinaryIO

from shlo.diagnostics import ShloError

_HEADER = struct.Struct("<Q")


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


def _signal_name(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            pass
    return f"exit status {returncode}"


class Worker:
    """A child Python process that runs the tasks of ``shlo._worker`` on request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def _start(self) -> subprocess.Popen[bytes]:
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        # The child must import the same shlo as this process, even one found
        # through a sys.path entry added at run time.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, sys.path))
        return subprocess.Popen(
            [sys.executable, "-m", "shlo._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )

    def call(self, task: str, **request: Any) -> Any:
        """The result of ``task`` ("lower" or "interpret") with keyword arguments ``request``."""
        request["task"] = task
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            process = self._process
            assert process.stdin is not None and process.stdout is not None
            try:
                write_message(process.stdin, request)
                status, payload = read_message(process.stdout)
            except (EOFError, BrokenPipeError, OSError):
                process.wait()
                self._process = None
                raise ShloError(
                    f"the {task} process crashed ({_signal_name(process.returncode)}) on "
                    f"{request.get('filename', 'the module')}: {self._last_words()}"
                ) from None
        if status == "error":
            message, diagnostics = payload
            raise ShloError(message, diagnostics)
        return payload

    def _last_words(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return "; ".join(lines[-3:]) or "no message"

    def close(self) -> None:
        with self._lock:
            if self._process is not None:
                self._process.kill()
                self._process.wait()
                self._process = None


_worker: Worker | None = None


def shared_worker() -> Worker:
    global _worker
    if _worker is None:
        _worker = Worker()
    return _worker
