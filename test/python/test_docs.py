"""docs/passes.md is generated from the pass docstrings and must be current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from shlo.pass_framework import Pass
from shlo.passes import PASSES

ROOT = Path(__file__).resolve().parents[2]


def load_generator() -> ModuleType:
    # From the checkout, not the installed package, so the docs and the script match.
    spec = importlib.util.spec_from_file_location(
        "gen_pass_docs", ROOT / "tools" / "gen_pass_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_passes_md_is_current() -> None:
    expected = load_generator().render()
    actual = (ROOT / "docs" / "passes.md").read_text(encoding="utf-8")
    assert actual == expected, "docs/passes.md is stale; run `python tools/gen_pass_docs.py`"


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_docstring(name: str) -> None:
    pass_cls: type[Pass] = PASSES[name]
    doc = (sys.modules[pass_cls.__module__].__doc__ or "").strip()
    summary, _, body = doc.partition("\n")
    assert summary.startswith(f"{name}: "), (
        f"{pass_cls.__module__}: first line is '{name}: summary'"
    )
    assert summary[len(name) + 2 :].strip(), f"{pass_cls.__module__}: empty summary"
    assert "==>" in body, f"{pass_cls.__module__}: docstring needs a before/after example with ==>"


def test_check_flag_reports_stale_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generator = load_generator()
    generator.OUTPUT = tmp_path / "docs" / "passes.md"
    generator.ROOT = tmp_path
    generator.OUTPUT.parent.mkdir()
    generator.OUTPUT.write_text("stale\n", encoding="utf-8")
    assert generator.main(["--check"]) == 1
    assert "docs/passes.md is out of date" in capsys.readouterr().err
    assert generator.main([]) == 0
    assert generator.main(["--check"]) == 0
