"""The registry of custom-call targets shlo compiles, and the hook to add your own.

A handler is a function ``handler(op)`` that receives the
``stablehlo.custom_call`` operation, builds ops computing the same results
before it, replaces the op's results with them and erases the op (the
``shlo-lower-custom-calls`` pass calls it; ``lower_with`` in
``shlo.passes.decompose.lower_custom_calls`` does the replacing).
Handlers are registered by import path, ``"package.module:function"``,
because passes run in the worker process, which imports the handler itself:

    # mypkg/calls.py
    def lower_my_relu(op):
        ...

    shlo.custom_calls.register_custom_call("my_relu", "mypkg.calls:lower_my_relu")

A custom call with no handler is refused before code generation, with its
source location and the target (``shlo-check-lowered``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

Handler = Callable[[Any], None]

_LAPACK = "shlo.passes.decompose.lapack_handlers"

# jax 0.10.2's CPU LAPACK calls, for every element type LAPACK has:
# s (f32), d (f64), c (complex<f32>), z (complex<f64>).
BUILTIN: dict[str, str] = {
    **{f"lapack_{t}potrf_ffi": f"{_LAPACK}:lower_potrf" for t in "sdcz"},
    **{f"lapack_{t}trsm_ffi": f"{_LAPACK}:lower_trsm" for t in "sdcz"},
    **{f"lapack_{t}getrf_ffi": f"{_LAPACK}:lower_getrf" for t in "sdcz"},
    **{f"lapack_{t}geqrf_ffi": f"{_LAPACK}:lower_geqrf" for t in "sdcz"},
    # orgqr for real types, ungqr for complex ones.
    **{f"lapack_{t}orgqr_ffi": f"{_LAPACK}:lower_orgqr" for t in "sd"},
    **{f"lapack_{t}ungqr_ffi": f"{_LAPACK}:lower_orgqr" for t in "cz"},
    # syevd for real types, heevd for complex ones.
    **{f"lapack_{t}syevd_ffi": f"{_LAPACK}:lower_syevd" for t in "sd"},
    **{f"lapack_{t}heevd_ffi": f"{_LAPACK}:lower_syevd" for t in "cz"},
    **{f"lapack_{t}gesdd_ffi": f"{_LAPACK}:lower_gesdd" for t in "sdcz"},
}

# Registered by users of this process; sent to the worker with each request.
_user: dict[str, str] = {}


def register_custom_call(target: str, handler: str) -> None:
    """Make ``stablehlo.custom_call @target`` compile with ``handler`` ("module:function")."""
    if ":" not in handler:
        raise ValueError(f"handler must be 'module:function', got {handler!r}")
    _user[target] = handler


def user_registrations() -> dict[str, str]:
    return dict(_user)


def install(registrations: Mapping[str, str]) -> None:
    """Use ``registrations`` (from the host) as this process's user handlers."""
    _user.clear()
    _user.update(registrations)


def handler_for(target: str) -> Handler | None:
    """The handler of ``target``: a user's first, then a built-in; None when there is none."""
    path = _user.get(target) or BUILTIN.get(target)
    if path is None:
        return None
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def registered_targets() -> list[str]:
    return sorted({*BUILTIN, *_user})
