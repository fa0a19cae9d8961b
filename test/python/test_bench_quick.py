"""`python -m bench --quick`: every issue-10 model runs on shlo and matches jax.

The quick mode uses small sizes and one timed call; speed is not checked here
(bench/README.md). The comparison it relies on is tested to reject wrong
results, so a wrong shlo answer fails this test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[2]
# bench/ is a package at the repository root, not installed with shlo.
sys.path.insert(0, str(ROOT))

from bench.models import BUILDERS  # noqa: E402
from bench.systems import compare  # noqa: E402


def test_compare_accepts_rounding_differences() -> None:
    want = np.linspace(-1, 1, 101, dtype=np.float32)
    got = want + np.float32(1e-6)
    message, worst = compare([got], [want], rtol=1e-4)
    assert message == ""
    assert 0 < worst < 1e-4


@pytest.mark.parametrize(
    ("got", "fragment"),
    [
        (np.linspace(-1, 1, 101, dtype=np.float32) * 1.01, "max |error|"),
        (np.zeros(100, np.float32), "shape"),
        (np.linspace(-1, 1, 101).astype(np.float64), "dtype"),
        (
            np.where(np.arange(101) == 7, np.nan, np.linspace(-1, 1, 101)).astype(np.float32),
            "non-finite",
        ),
    ],
)
def test_compare_rejects_wrong_results(got: np.ndarray, fragment: str) -> None:
    want = np.linspace(-1, 1, 101, dtype=np.float32)
    message, _ = compare([got], [want], rtol=1e-4)
    assert fragment in message


def test_compare_integers_exactly_and_counts_outputs() -> None:
    ints = np.arange(10, dtype=np.int32)
    assert compare([ints], [ints], rtol=1e-4)[0] == ""
    assert "1 elements differ" in compare([ints + (ints == 3)], [ints], rtol=1e-4)[0]
    assert "2 outputs, expected 1" in compare([ints, ints], [ints], rtol=1e-4)[0]


def test_wrong_shlo_result_fails_the_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.__main__ as suite
    import bench.systems

    right = bench.systems.prepare_shlo

    def off_by_one_percent(case, threads):
        prepared = right(case, threads)
        prepared.outputs = [output * np.float32(1.01) for output in prepared.outputs]
        return prepared

    monkeypatch.setattr(bench.systems, "prepare_shlo", off_by_one_percent)
    status = suite.main(
        ["--quick", "--only", "cumsum", "--systems", "shlo,numpy", "--out", str(tmp_path)]
    )
    assert status == 1
    report = json.loads((tmp_path / "bench.json").read_text())
    (model,) = report["models"]
    assert model["systems"]["shlo"]["status"] == "wrong"
    assert model["systems"]["numpy"]["correct"] is True
    assert report["shlo_failures"]


def test_quick_suite(tmp_path: Path) -> None:
    # The suite skips the models whose framework is missing; this test wants all.
    for package in ("flax", "optax", "transformers"):
        pytest.importorskip(package)
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["mode"] == "quick"
    models = {model["name"]: model for model in report["models"]}
    assert list(models) == list(BUILDERS)
    for name, model in models.items():
        # A constant reference (say, all zeros) would make the check vacuous.
        assert model["constant_outputs"] == [], name
        shlo = model["systems"]["shlo"]
        assert shlo["correct"] is True, f"{name}: {shlo['error']}"
        assert shlo["samples_ms"], name
        # XLA is the reference; a peer that runs must agree with it too.
        for system in ("iree", "numpy"):
            peer = model["systems"][system]
            assert peer["status"] in ("ok", "skipped"), f"{name} on {system}: {peer['error']}"
    assert report["peak"]["fma_gflops"] > 0 and report["peak"]["copy_gbps"] > 0
    assert (tmp_path / "ratios.png").read_bytes().startswith(b"\x89PNG")
