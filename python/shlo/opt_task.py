"""shlo-opt's risky work: parse a chunk, run the pipeline on it, print the result.

It runs in the isolated worker (``shlo._worker.TASKS["opt"]``), where an
abort, a segfault or a stack overflow on malformed input kills the worker and
not shlo-opt. The worker keeps the context and pass manager of the current
run between requests, so ``--mlir-timing`` adds up over the chunks and is
reported when the run ends. Everything MLIR prints (IR dumps, the timing
report, LLVM's last words) goes to a log file that shlo-opt relays.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from shlo._mlir_compat import ir, new_context, passmanager
from shlo.diagnostics import (
    Diagnostic,
    ShloError,
    collect_diagnostics,
    is_undecodable_diagnostic,
    undecodable_diagnostic_error,
)
from shlo.io import (
    inline_resources,
    module_to_bytecode,
    module_to_portable_artifact,
    parse_module,
    refuse_what_the_parser_crashes_on,
)
from shlo.pipeline import PipelineError, build_pass_manager, explain_silent_failure
from shlo.shardy import mentions_sdy


@dataclass(frozen=True)
class OptConfig:
    """What the worker needs from shlo-opt's flags; equal configs share a pass manager."""

    elements: tuple[str, ...] = ()
    print_ir_before_all: bool = False
    print_ir_after_all: bool = False
    print_ir_after_failure: bool = False
    print_debuginfo: bool = False
    timing: bool = False
    output_format: str = "text"  # "text", "bytecode" or "portable-artifact"
    target_version: str = ""


@dataclass(frozen=True)
class Chunk:
    filename: str
    data: bytes | str
    path: str | None = None  # set when the chunk is a whole text file
    first_line: int = 1


@dataclass(frozen=True)
class ChunkResult:
    """The printed module, or the failure: diagnostics and a summary for when there are none."""

    output: bytes | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    summary: str = ""
    # Warnings and remarks of a successful run, or any diagnostic when verifying.
    emitted: tuple[Diagnostic, ...] = ()


@dataclass
class _Session:
    config: OptConfig
    context: ir.Context
    pm: passmanager.PassManager | None


_session: _Session | None = None


def _session_for(config: OptConfig) -> _Session:
    """The context and pass manager for ``config``, built once per run (PipelineError)."""
    global _session
    if _session is None or _session.config != config:
        _session = None
        context = new_context()
        pm = build_pass_manager(list(config.elements), context) if config.elements else None
        if pm is not None:
            _configure(pm, config)
        _session = _Session(config, context, pm)
    return _session


def _configure(pm: passmanager.PassManager, config: OptConfig) -> None:
    """Map the IR printing and timing flags onto pass manager calls."""
    if config.print_ir_before_all or config.print_ir_after_all or config.print_ir_after_failure:
        pm.enable_ir_printing(
            print_before_all=config.print_ir_before_all,
            print_after_all=config.print_ir_after_all or config.print_ir_after_failure,
            print_after_failure=config.print_ir_after_failure,
            enable_debug_info=config.print_debuginfo,
        )
    if config.timing:
        pm.enable_timing()


def _parse(chunk: Chunk, context: ir.Context) -> ir.Module:
    if mentions_sdy(chunk.data):
        # Shardy annotations: shlo.io drops them from single-device programs.
        return parse_module(chunk.data, context, chunk.filename)
    # MLIR's own parser below: shlo.io's guard against its crashes first.
    text = chunk.data.encode() if isinstance(chunk.data, str) else chunk.data
    refuse_what_the_parser_crashes_on(text, chunk.filename)
    if not isinstance(chunk.data, str) and chunk.path is None:
        return parse_module(chunk.data, context, chunk.filename)
    if chunk.path is not None:
        # parseFile keeps the real file name in every location.
        module = ir.Module.parseFile(chunk.path, context)
    else:
        module = ir.Module.parse(chunk.data, context)
    # What parse_module does after parsing, which MLIR's parser does not.
    inline_resources(module, chunk.data)
    return module


def _render(module: ir.Module, config: OptConfig) -> bytes:
    if config.output_format == "portable-artifact":
        return module_to_portable_artifact(module, config.target_version)
    if config.output_format == "bytecode":
        return module_to_bytecode(module)
    return module.operation.get_asm(binary=True, enable_debug_info=config.print_debuginfo)


def process_chunk(chunk: Chunk, config: OptConfig) -> ChunkResult:
    """Parse ``chunk``, run the pipeline and render; every failure becomes a ChunkResult."""
    session = _session_for(config)
    with collect_diagnostics(session.context, chunk.filename) as collector:
        module = None
        try:
            module = _parse(chunk, session.context)
            if session.pm is not None:
                session.pm.run(module.operation)
            output = _render(module, config)
        except ir.MLIRError as error:
            collector.add_error(error)
            if module is not None:
                explain_silent_failure(module, collector, config.elements)
            return ChunkResult(diagnostics=tuple(collector.diagnostics), summary=str(error))
        except ShloError as error:
            found = collector.diagnostics + error.diagnostics
            return ChunkResult(diagnostics=tuple(found), summary=error.summary)
        except RuntimeError as error:
            if not is_undecodable_diagnostic(error):
                raise
            failure = undecodable_diagnostic_error(chunk.data, chunk.filename)
            return ChunkResult(diagnostics=tuple(failure.diagnostics), summary=failure.summary)
        except RecursionError:
            return ChunkResult(summary="the input is nested too deeply")
    return ChunkResult(output=output, emitted=tuple(collector.diagnostics))


def finish() -> None:
    """End the run: dropping the pass manager prints its timing report."""
    global _session
    _session = None


@contextlib.contextmanager
def _output_to(log_path: str | None, stdout_path: str | None = None) -> Iterator[None]:
    """Send what C++ and Python print to ``log_path`` meanwhile, and stdout to ``stdout_path``.

    Passes that print for FileCheck write to stdout; IR dumps and timing go to stderr.
    """
    if log_path is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    for fd, path in ((1, stdout_path or log_path), (2, log_path)):
        target = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(target, fd)
        os.close(target)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original in zip((1, 2), saved):
            os.dup2(original, fd)
            os.close(original)


def opt(
    action: str,
    config: OptConfig,
    chunk: Chunk | None = None,
    log_path: str | None = None,
    stdout_path: str | None = None,
) -> ChunkResult | str | None:
    """The worker task behind shlo-opt.

    ``action`` is "start" (build the pipeline; returns a PipelineError's
    message or None), "chunk" (returns ``process_chunk``'s result) or
    "finish" (drop the pass manager, which prints the timing report).
    """
    if action == "start" and _session is not None:
        # The last run did not finish; its timing report must not reach this one.
        with _output_to(os.devnull):
            finish()
    with _output_to(log_path, stdout_path):
        if action == "start":
            try:
                _session_for(config)
            except PipelineError as error:
                return str(error)
            return None
        if action == "chunk":
            assert chunk is not None
            try:
                return process_chunk(chunk, config)
            except PipelineError as error:  # a worker restarted after a crash rebuilds it
                return ChunkResult(summary=str(error))
        finish()
        return None
