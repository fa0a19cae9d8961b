"""The ``--version`` line every shlo tool prints."""

from __future__ import annotations

import importlib.metadata


def version_line(prog: str) -> str:
    """``shlo-run 0.1.0 (torch-mlir 20261001, StableHLO 1.19.0)``."""
    from shlo._mlir_compat import current_version

    def installed(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    return (
        f"{prog} {installed('shlo')} (torch-mlir {installed('torch-mlir')}, "
        f"StableHLO {current_version()})"
    )
