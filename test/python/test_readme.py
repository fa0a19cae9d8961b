"""The README's test command is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_ci_runs_the_readme_test_command():
    setup_and_example, tests = readme_commands()
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()
    assert "shlo-opt docs/examples/add_one_dynamic.mlir" in setup_and_example
    assert (ROOT / "docs" / "examples" / "add_one_dynamic.mlir").is_file()
