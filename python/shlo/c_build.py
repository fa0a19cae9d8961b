"""C code that shlo compiles on this machine, with its C compiler."""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import subprocess
import tempfile
import threading

from shlo.diagnostics import ShloError

_built_lock = threading.Lock()
_built: dict[tuple[str, ...], str] = {}  # (driver, source, *flags) -> the file


def build_once(driver: str, source: str, name: str, flags: list[str]) -> str:
    """The C ``source`` compiled by ``driver`` with ``flags`` into a file ``name``, once
    per process."""
    key = (driver, source, *flags)
    with _built_lock:
        path = _built.get(key)
        if path is not None and os.path.exists(path):
            return path
        directory = tempfile.mkdtemp(prefix="shlo-built-")
        atexit.register(shutil.rmtree, directory, True)
        source_path = os.path.join(directory, "source.c")
        path = os.path.join(directory, name)
        with open(source_path, "w") as file:
            file.write(source)
        compiled = subprocess.run(
            [driver, *flags, "-o", path, source_path], capture_output=True, text=True, check=False
        )
        if compiled.returncode != 0:
            raise ShloError(f"compiling {name} failed: {compiled.stderr.strip()}")
        _built[key] = path
        return path


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
        output = f"/proc/{os.getpid()}/fd/{fd}"
        flags = ["-shared", "-fPIC", "-O2", "-x", "c", "-", "-o", output]
        compiled = subprocess.run(
            [driver, *flags], input=source.encode(), capture_output=True, check=False
        )
        if compiled.returncode != 0:
            message = compiled.stderr.decode(errors="replace").strip()
            raise ShloError(f"compiling {name} failed: {message}")
        return ctypes.PyDLL(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)  # the loaded library keeps its mapping
