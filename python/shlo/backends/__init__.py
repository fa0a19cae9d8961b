"""Backends: one package per target, found through a registry keyed by ``target``.

A backend turns the static StableHLO that the shared frontend
(``shlo.frontend``) and decompositions (``shlo.to_linalg``) produce into code
for its target, and loads that code in the host. ``shlo.compile``,
``shlo-run`` and the disk cache go through this interface only, so adding a
target means writing a ``Backend`` and registering it (docs/architecture.md).

Backends are registered by import path, not by object, because lowering runs
in the worker process (``shlo.isolation``), which imports the backend itself.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# A loaded entry function: C-contiguous input arrays in, new result arrays out.
CompiledFunction = Callable[[list[np.ndarray]], list[np.ndarray]]


class Backend(ABC):
    """Code generation and runtime for one target."""

    name: str
    # What ``emit`` writes, first the default: e.g. "object", "ptx", "cubin".
    emit_kinds: tuple[str, ...] = ()

    @abstractmethod
    def options(
        self,
        pipeline: Any,
        threads: int | None,
        arch: str | None,
        flush_denormals: bool | None = None,
    ) -> Any:
        """The picklable options ``lower`` takes, from what the caller of shlo.compile gave."""

    @abstractmethod
    def cache_fields(self, options: Any) -> list[str]:
        """What, besides the program, decides the generated code (for the disk cache key)."""

    @abstractmethod
    def lower(
        self,
        source: bytes | str,
        entry: str,
        arg_types: Sequence[str] | None,
        options: Any,
        filename: str,
        max_bytes: int,
    ) -> Any:
        """Static code for ``entry`` specialized to ``arg_types`` (runs in the worker)."""

    @abstractmethod
    def load(self, lowered: Any) -> CompiledFunction:
        """The callable for what ``lower`` returned (runs in the host)."""

    def prepare_to_load(self) -> None:
        """Start, in the background, what ``load`` will need, as a compilation begins."""

    def device_argument(self, value: Any) -> Any | None:
        """``value`` as an argument in this backend's device memory, with ``shape``, ``dtype``
        and ``release()``; None when it is to be read as a numpy array (the default)."""
        return None

    def emit(self, kind: str, lowered: Any) -> bytes:
        """The artifact of ``kind`` (one of ``emit_kinds``) in what ``lower`` returned."""
        raise ValueError(f"target {self.name!r} emits nothing")

    def cacheable(self, lowered: Any) -> tuple[dict[str, Any], bytes] | None:
        """(JSON-able metadata, code) to keep in the disk cache; None keeps nothing."""
        return None

    def load_cached(
        self, metadata: Any, code: bytes, signature: Sequence[tuple[tuple[int, ...], str]] = ()
    ) -> CompiledFunction | None:
        """The callable for a disk cache entry that ``cacheable`` made.

        None when it is unusable or does not take ``signature`` ((shape, element type) per input).
        """
        return None


# target -> "module:attribute" of a Backend subclass or factory.
_REGISTRY: dict[str, str] = {
    "cpu": "shlo.backends.cpu:CpuBackend",
    "cuda": "shlo.backends.cuda:CudaBackend",
}


def register_backend(target: str, factory: str) -> None:
    """Make ``target`` compile with the backend at ``factory`` ("package.module:Class")."""
    if ":" not in factory:
        raise ValueError(f"factory must be 'module:attribute', got {factory!r}")
    _REGISTRY[target] = factory


def registered_targets() -> list[str]:
    return list(_REGISTRY)


def backend_path(target: str) -> str:
    """The registered import path of ``target``'s backend; ValueError listing the targets."""
    try:
        return _REGISTRY[target]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown target {target!r}; registered targets: {', '.join(_REGISTRY)}"
        ) from None


def load_backend(path: str) -> Backend:
    """The backend at ``path`` ("module:attribute"), imported on first use."""
    module_name, attribute = path.split(":", 1)
    factory: Callable[[], Backend] = getattr(importlib.import_module(module_name), attribute)
    return factory()


def get_backend(target: str) -> Backend:
    """The backend registered for ``target``."""
    return load_backend(backend_path(target))
