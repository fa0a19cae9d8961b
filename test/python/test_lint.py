"""ruff over the package, the passes and the tools (STYLE.md, convention 10)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
RUFF = str(Path(sys.executable).parent / "ruff")


def test_ruff_is_clean():
    result = subprocess.run(
        [RUFF, "check", "python", "passes", "tools", "test/python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
