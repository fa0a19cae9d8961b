"""Progress of a long compilation, by stage, from the worker to a terminal.

The lowering calls ``stage(name)`` as it enters each stage. In the worker a
reporter sends the name to the host as an interim reply (``shlo._worker``);
in the host, ``Worker.call`` hands it to the listener that a command-line
tool installed with ``show_on_terminal`` (nothing is shown otherwise).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

# Where stage() sends names: set in the worker while a request runs.
_reporter: Callable[[str], None] | None = None
# What the host does with them: set by show_on_terminal.
_listener: Callable[[str], None] | None = None

# Compilations shorter than this show nothing.
QUIET_SECONDS = 1.0


def stage(name: str) -> None:
    """Say that the compilation enters stage ``name``."""
    if _reporter is not None:
        _reporter(name)


def set_reporter(reporter: Callable[[str], None] | None) -> None:
    global _reporter
    _reporter = reporter


def listener() -> Callable[[str], None] | None:
    return _listener


@contextlib.contextmanager
def listening(callback: Callable[[str], None]) -> Iterator[None]:
    """Within the block, the host calls ``callback(name)`` as each compilation enters
    a stage (``bench/compile_time.py --stages`` times them)."""
    global _listener
    previous, _listener = _listener, callback
    try:
        yield
    finally:
        _listener = previous


class TerminalProgress:
    """Writes ``prog: compiling: <stage> (2.4 s)`` over one line of a terminal."""

    def __init__(self, prog: str, stream=None) -> None:  # type: ignore[no-untyped-def]
        self.prog = prog
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.shown = False
        self._current = ""
        self._lock = threading.Lock()

    def __call__(self, name: str) -> None:
        with self._lock:
            self._current = name
            elapsed = time.monotonic() - self.started
            if elapsed < QUIET_SECONDS:
                return
            self.stream.write(f"\r\x1b[K{self.prog}: compiling: {name} ({elapsed:.1f} s)")
            self.stream.flush()
            self.shown = True

    def clear(self) -> None:
        with self._lock:
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()


@contextlib.contextmanager
def show_on_terminal(prog: str) -> Iterator[None]:
    """Within the block, compilations longer than QUIET_SECONDS show their stage on stderr.

    Only when stderr is a terminal: logs and pipes stay clean.
    """
    if not sys.stderr.isatty():
        yield
        return
    progress = TerminalProgress(prog)
    try:
        with listening(progress):
            yield
    finally:
        progress.clear()
