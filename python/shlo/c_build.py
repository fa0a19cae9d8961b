"""C code that shlo compiles on this machine, with its C compiler."""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading

from shlo.diagnostics import ShloError

_built_lock = threading.Lock()
_built: dict[tuple[str, ...], str] = {}  # (driver, source, *flags) -> the file


def build_once(driver: str, source: str, name: str, flags: list[str]) -> str:
    """The C ``source`` compiled by ``driver`` with ``flags`` into a file ``name``.

    The file is kept in a directory of this user's that every process shares
    (``shared_directory``), under a name that hashes the compiler, the flags
    and the source: it is built once per machine, not once per process, and
    a process killed at any point leaves nothing that grows. (Each process
    used to build its own in a temporary directory, removed at exit: a full
    test run left 9 behind, from processes that were killed.) Without such a
    directory, each process builds into a temporary one of its own.
    """
    key = (driver, source, *flags)
    with _built_lock:
        path = _built.get(key)
        if path is None or not os.path.exists(path):
            directory = shared_directory()
            if directory is None:
                path = _build_in_private_directory(driver, source, name, flags)
            else:
                path = _build_in_shared_directory(directory, driver, source, name, flags)
            _built[key] = path
        return path


def shared_directory() -> str | None:
    """``shlo-built-<uid>`` in the temporary directory, made if missing; None when it
    is not a private directory of this user's (a symlink, another owner, open to others)."""
    directory = os.path.join(tempfile.gettempdir(), f"shlo-built-{os.getuid()}")
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        status = os.lstat(directory)
    except OSError:
        return None
    private = stat.S_ISDIR(status.st_mode) and not status.st_mode & 0o077
    return directory if private and status.st_uid == os.getuid() else None


def _build_in_shared_directory(
    directory: str, driver: str, source: str, name: str, flags: list[str]
) -> str:
    path = os.path.join(directory, f"{_digest(driver, source, flags)}-{name}")
    if os.path.exists(path):
        return path
    # Written under a temporary name and renamed: another process never sees
    # a partial file, and two that build it at once write the same bytes.
    handle, partial = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
    os.close(handle)
    try:
        _compile(driver, source, name, flags, partial)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return path


def _build_in_private_directory(driver: str, source: str, name: str, flags: list[str]) -> str:
    directory = tempfile.mkdtemp(prefix="shlo-built-")
    atexit.register(shutil.rmtree, directory, True)
    path = os.path.join(directory, name)
    _compile(driver, source, name, flags, path)
    return path


def _compile(driver: str, source: str, name: str, flags: list[str], output: str) -> None:
    """Compile the C ``source``, given on the compiler's standard input, into ``output``."""
    compiled = subprocess.run(
        [driver, *flags, "-x", "c", "-", "-o", output],
        input=source.encode(),
        capture_output=True,
        check=False,
    )
    if compiled.returncode != 0:
        message = compiled.stderr.decode(errors="replace").strip()
        raise ShloError(f"compiling {name} failed: {message}")


def _digest(driver: str, source: str, flags: list[str]) -> str:
    """A hash of the compiler (its path, size and time: a new version builds anew),
    the flags and the source."""
    found = shutil.which(driver)
    compiler = os.path.realpath(found) if found else driver
    try:
        status = os.stat(compiler)
        identity = (compiler, status.st_size, status.st_mtime_ns)
    except OSError:
        identity = (compiler, 0, 0)
    text = repr((identity, flags, source))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def load_built_in_memory(driver: str, source: str, name: str) -> ctypes.PyDLL:
    """The C ``source`` compiled by ``driver`` into a shared library in memory, loaded.

    Nothing of it is ever on disk: the compiler writes into an anonymous
    file (memfd) of this process and reads the source from its stdin, so a
    worker killed while it builds (as its host exits) leaves no file
    behind. PyDLL: calls keep the GIL. Raises ShloError when the compiler
    fails or the system has no memfd.
    """
    if not hasattr(os, "memfd_create"):
        raise ShloError(f"compiling {name} needs memfd_create (Linux)")
    fd = os.memfd_create(name)
    try:
        _compile(driver, source, name, ["-shared", "-fPIC", "-O2"], f"/proc/{os.getpid()}/fd/{fd}")
        return ctypes.PyDLL(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)  # the loaded library keeps its mapping
