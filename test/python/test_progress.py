"""Compile progress by stage: from the worker to a terminal line."""

from __future__ import annotations

import io

import numpy as np
import pytest
import shlo
from shlo import progress
from shlo.backends.cpu.pipeline import CpuPipeline, default_threads

PROGRAM = """
func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.exponential %a : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


def test_the_worker_reports_each_stage() -> None:
    seen: list[str] = []
    with progress.listening(seen.append):
        executable = shlo.compile(PROGRAM)  # isolated: the stages come from the worker
        executable(np.ones(5, np.float32))
        assert seen == [
            "frontend",
            "shape refinement",
            "linalg, tiling and vectorization",
            "loops to LLVM",
            "LLVM code generation",
        ]
        seen.clear()
        executable(np.ones(5, np.float32))  # compiled already: no stages
        assert seen == []
    assert progress.listener() is None


@pytest.mark.skipif(default_threads() < 2, reason="shards need 2 threads")
def test_a_module_compiled_in_shards_says_so() -> None:
    pytest.importorskip("jax")
    from bench import models
    from bench.systems import Case

    # Attention with its matmuls generated: enough LLVM work to split over 2 cores
    # (parallel_codegen).
    case = Case.export(models.attention(False))
    seen: list[str] = []
    with progress.listening(seen.append):
        shlo.compile(
            case.exported.mlir_module_serialized, pipeline=CpuPipeline(precompiled_kernels=False)
        )
    assert seen[-1] == "LLVM code generation in 2 shards"


def test_listening_restores_the_previous_listener() -> None:
    outer: list[str] = []
    with progress.listening(outer.append):
        with progress.listening(print):
            assert progress.listener() is print
        assert progress.listener() == outer.append
    assert progress.listener() is None


def test_no_listener_no_output(capsys: pytest.CaptureFixture[str]) -> None:
    shlo.compile(PROGRAM)(np.ones(7, np.float32))
    assert capsys.readouterr().err == ""


def test_terminal_line_waits_a_second_then_overwrites(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    line = progress.TerminalProgress("shlo-run", stream)
    line("frontend")
    assert stream.getvalue() == ""  # quick compilations show nothing
    line.started -= 2.0
    line("loops to LLVM")
    assert stream.getvalue().startswith("\r\x1b[Kshlo-run: compiling: loops to LLVM (2.")
    line.clear()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_show_on_terminal_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    with progress.show_on_terminal("shlo-run"):
        assert progress.listener() is None  # pytest's stderr is not a terminal
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    with progress.show_on_terminal("shlo-run"):
        assert isinstance(progress.listener(), progress.TerminalProgress)
    assert progress.listener() is None
