"""A fixed sample of StableHLO's conformance tests, compiled and run on the CPU.

The full run is one command (see docs/cpu.md):

  python -m shlo.conformance ../shared/conformance/stablehlo \\
      --expected-failures test/conformance/expected_failures.txt --report build/conformance
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
EXPECTED_FAILURES = REPO / "test" / "conformance" / "expected_failures.txt"
SAMPLE_FILES = 320


def conformance_dir() -> Path | None:
    """SHLO_CONFORMANCE_DIR, else shared/conformance/stablehlo beside the checkout."""
    if "SHLO_CONFORMANCE_DIR" in os.environ:
        return Path(os.environ["SHLO_CONFORMANCE_DIR"])
    for parent in REPO.resolve().parents:
        candidate = parent / "shared" / "conformance" / "stablehlo"
        if candidate.is_dir():
            return candidate
    return None


def test_expected_failures_have_reasons() -> None:
    for line in EXPECTED_FAILURES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            case, _, reason = line.partition(" ")
            assert reason.strip(), f"{case} is listed without a reason"


def test_conformance_sample(tmp_path: Path) -> None:
    root = conformance_dir()
    if root is None:
        pytest.skip("StableHLO conformance data not found; set SHLO_CONFORMANCE_DIR")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "shlo.conformance",
            str(root),
            f"--sample={SAMPLE_FILES}",
            f"--expected-failures={EXPECTED_FAILURES}",
            f"--report={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"files: {SAMPLE_FILES}," in result.stdout
