"""An on-disk cache of compiled code, shared by processes; opt-in with SHLO_CACHE_DIR.

``shlo.compile`` looks two things up here before asking the worker for them,
and stores what the worker produced: the inspection of a source (the module
as bytecode and the entry's parameters, ``inspection_key``) and the code of
one specialization (``code_key``), so a hit needs no worker at all. An entry
is one file named by its key, a sha256 over everything that decides its
contents, shlo's own sources included. Each file holds a format version, its
key and a checksum of its payload (JSON metadata, then a blob); a file that is
truncated, corrupt, of another format or unreadable is a miss, and the next
store replaces it. Files are written to a temporary name in the same
directory and renamed into place, so a reader never sees half a file. The
directory is kept under SHLO_CACHE_MAX_BYTES (default 1 GiB) by removing the
least recently used entries (by mtime; a hit touches its file). A directory
that cannot be created or written gives one warning, never an error:
compilation then goes on without the cache.

Loading an entry runs its code, so the directory must be as trusted as the
Python code that uses it (as for jax's persistent cache).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import struct
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from shlo.isolation import positive_setting

T = TypeVar("T")

DEFAULT_MAX_BYTES = 1 << 30

# Bump when the file layout or the meaning of a key changes.
FORMAT_VERSION = 1
_MAGIC = b"SHLOCACHE\0"
# magic, format version, key (32 bytes), sha256 of the payload, payload length.
_HEADER = struct.Struct(f"<{len(_MAGIC)}sI32s32sQ")
_SUFFIX = ".shlo"
_TEMP_PREFIX = ".tmp-"
# A temporary file this old was left by a writer that died.
_STALE_TEMP_SECONDS = 3600

# Counts of "<kind> hit", "miss", "store" and "corrupt" in this process, kind "code" or
# "inspection", for tests and curiosity.
stats: Counter[str] = Counter()
_warned: set[str] = set()
_warn_lock = threading.Lock()


def cache_dir() -> Path | None:
    """SHLO_CACHE_DIR, or None when the cache is off."""
    value = os.environ.get("SHLO_CACHE_DIR")
    return Path(value).expanduser() if value else None


def max_cache_bytes() -> int:
    """SHLO_CACHE_MAX_BYTES when set, else DEFAULT_MAX_BYTES."""
    value = positive_setting("SHLO_CACHE_MAX_BYTES", int, "bytes")
    return DEFAULT_MAX_BYTES if value is None else int(value)


@functools.cache
def host_cpu() -> str:
    """The host CPU's architecture, model and features: LLVM generates code for this host.

    /proc/cpuinfo where there is one (model name and feature flags of the
    first processor), else what ``platform`` knows.
    """
    description = [sys.platform, platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return " ".join([*description, platform.processor()])
    first = text.split("\n\n", 1)[0]
    for line in first.splitlines():
        name, _, value = line.partition(":")
        # x86 names them "model name" and "flags", arm64 "CPU part" and "Features".
        if name.strip() in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
            description.append(f"{name.strip()}={value.strip()}")
    return "\n".join(description)


@functools.cache
def host_has_avx512() -> bool:
    """Whether the host, for which LLVM and the C compiler generate code, has AVX-512F."""
    return "avx512f" in host_cpu().split()


@functools.cache
def host_has_avx2_fma() -> bool:
    """Whether the host has AVX2 and FMA: 16 ymm registers of 8 floats, fused multiply-adds."""
    return {"avx2", "fma"} <= set(host_cpu().split())


def _distribution_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def toolchain_fingerprint() -> str:
    """The versions of shlo and of the code generators (torch-mlir's LLVM, and
    llvmlite's for glue-only modules), plus a digest of shlo's own sources.

    The digest makes an edited checkout (an editable install keeps its version)
    miss instead of returning code that its current passes would not generate.
    """
    import shlo
    import shlo.passes

    digest = hashlib.sha256()
    roots = [Path(shlo.__file__).parent, *map(Path, shlo.passes.__path__)]
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".tsv")):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes())
    return "\n".join(
        [
            f"shlo {_distribution_version('shlo')}",
            f"torch-mlir {_distribution_version('torch-mlir')}",
            f"llvmlite {_distribution_version('llvmlite')}",
            f"sources {digest.hexdigest()}",
        ]
    )


def _digest(kind: str, fields: Iterable[bytes]) -> bytes:
    digest = hashlib.sha256()
    for field in [f"{kind} format {FORMAT_VERSION}".encode(), *fields]:
        # Length-prefixed, so no two different lists of fields hash alike.
        digest.update(struct.pack("<Q", len(field)) + field)
    digest.update(toolchain_fingerprint().encode())
    return digest.digest()


def code_key(
    module_bytecode: bytes,
    entry: str,
    arg_types: Sequence[str],
    backend: Sequence[str],
    max_bytes: int,
) -> bytes:
    """The key of the code for one specialization of one module.

    ``backend``: the target's name and every string its backend says decides
    the code (``Backend.cache_fields``: for the CPU, the pipeline's elements,
    its repr with the thread count, and whether the host loads object code or
    LLVM bytecode); ``max_bytes``: the array limit checked
    while lowering, so a hit never skips a check that a smaller limit would
    fail.
    """
    return _digest(
        "code",
        [
            module_bytecode,
            entry.encode(),
            "\n".join(arg_types).encode(),
            "\n".join(backend).encode(),
            f"max_bytes {max_bytes}".encode(),
            host_cpu().encode(),
        ],
    )


def inspection_key(source: bytes, entry: str, filename: str) -> bytes:
    """The key of what inspecting ``entry`` of ``source`` gives (the module and its parameters).

    ``filename`` is in the module's locations, so it is part of the key.
    """
    return _digest("inspection", [source, entry.encode(), filename.encode()])


def _entry_path(directory: Path, key: bytes) -> Path:
    return directory / (key.hex() + _SUFFIX)


def _encode(key: bytes, meta: dict[str, Any], blob: bytes) -> bytes:
    text = json.dumps(meta).encode()
    payload = struct.pack("<Q", len(text)) + text + blob
    header = _HEADER.pack(
        _MAGIC, FORMAT_VERSION, key, hashlib.sha256(payload).digest(), len(payload)
    )
    return header + payload


def _decode(key: bytes, data: bytes) -> tuple[Any, bytes] | None:
    """Metadata and blob in ``data``; None unless it is whole, of this format and for ``key``."""
    if len(data) < _HEADER.size:
        return None
    magic, version, stored_key, checksum, length = _HEADER.unpack_from(data)
    payload = data[_HEADER.size :]
    if (
        magic != _MAGIC
        or version != FORMAT_VERSION
        or stored_key != key
        or length != len(payload)
        or hashlib.sha256(payload).digest() != checksum
        or length < 8
    ):
        return None
    (text_length,) = struct.unpack_from("<Q", payload)
    if text_length > length - 8:
        return None
    try:
        meta = json.loads(payload[8 : 8 + text_length])
    except ValueError:
        return None
    return meta, payload[8 + text_length :]


def load(kind: str, key: bytes, open_entry: Callable[[Any, bytes], T | None]) -> T | None:
    """``open_entry(metadata, blob)`` of the entry for ``key``, or None on a miss.

    A miss: the cache is off, there is no entry, it is not whole, or
    ``open_entry`` returns None for it (its metadata is not as expected, its
    code does not load); an entry that is there but unusable is removed.
    ``kind`` names the counters in ``stats``.
    """
    directory = cache_dir()
    if directory is None:
        return None
    path = _entry_path(directory, key)
    try:
        data = path.read_bytes()
    except OSError:  # absent, unreadable, a directory, ...
        stats[f"{kind} miss"] += 1
        return None
    decoded = _decode(key, data)
    try:
        opened = None if decoded is None else open_entry(*decoded)
    except Exception:  # an entry whose checksum holds but whose contents do not load
        opened = None
    if opened is None:
        stats[f"{kind} corrupt"] += 1
        stats[f"{kind} miss"] += 1
        _unlink(str(path))
        return None
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    stats[f"{kind} hit"] += 1
    return opened


def store(kind: str, key: bytes, meta: dict[str, Any], blob: bytes) -> None:
    """Write the entry for ``key`` atomically, then evict; a warning at most when it fails."""
    directory = cache_dir()
    if directory is None:
        return
    limit = max_cache_bytes()
    temp = None
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=directory)
        with os.fdopen(descriptor, "wb") as file:
            file.write(_encode(key, meta, blob))
        os.replace(temp, _entry_path(directory, key))
        temp = None
    except OSError as error:
        _warn_once(directory, error)
        return
    finally:
        if temp is not None:
            _unlink(temp)
    stats[f"{kind} store"] += 1
    evict(directory, limit)


def evict(directory: Path, limit: int) -> None:
    """Remove the least recently used entries until the rest take at most ``limit`` bytes.

    Also removes temporary files that writers which died left behind.
    Another process may remove the same files meanwhile: missing files are fine.
    """
    entries = []
    now = time.time()
    try:
        with os.scandir(directory) as scan:
            for item in scan:
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if item.name.startswith(_TEMP_PREFIX):
                    if now - info.st_mtime > _STALE_TEMP_SECONDS:
                        _unlink(item.path)
                elif item.name.endswith(_SUFFIX) and item.is_file(follow_symlinks=False):
                    entries.append((info.st_mtime, info.st_size, item.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        _unlink(path)
        total -= size


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _warn_once(directory: Path, error: OSError) -> None:
    with _warn_lock:
        if str(directory) in _warned:
            return
        _warned.add(str(directory))
    reason = error.strerror or str(error)
    warnings.warn(
        f"shlo: cannot write the compile cache SHLO_CACHE_DIR={directory} ({reason}); "
        "compiling without it",
        RuntimeWarning,
        stacklevel=4,
    )
