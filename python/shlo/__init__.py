"""shlo: refine, legalize and compile StableHLO programs with MLIR from Python."""

from __future__ import annotations

from shlo._mlir_compat import ir, new_context
from shlo.broadcasting import BroadcastError, broadcast_shapes
from shlo.checker import CheckReport, check
from shlo.compiler import Executable, compile
from shlo.diagnostics import Diagnostic, ShloError
from shlo.io import load_module
from shlo.pipeline import PipelineError, run_pipeline
from shlo.refine import refine

__all__ = [
    "BroadcastError",
    "CheckReport",
    "Diagnostic",
    "Executable",
    "PipelineError",
    "ShloError",
    "broadcast_shapes",
    "check",
    "compile",
    "ir",
    "load_module",
    "new_context",
    "refine",
    "run_pipeline",
]
