"""The tools as iree-run-module and stablehlo-opt users expect them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shlo.tools import shlo_run
from shlo.tools.shlo_run import format_result

BIN = Path(sys.executable).parent
PROGRAM = """
func.func @scale(%a: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = shlo_run.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("tool", ["shlo-opt", "shlo-run", "shlo-compile"])
def test_every_tool_has_version(tool: str) -> None:
    result = subprocess.run([BIN / tool, "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    line = result.stdout.strip()
    assert (
        line.startswith(f"{tool} 0.") and "torch-mlir 20261001" in line and "StableHLO 1." in line
    )


def test_npz_gives_several_inputs_and_module_function_aliases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)
    np.savez(tmp_path / "args.npz", np.arange(4, dtype=np.float32), np.float32(2.5))
    code, out, err = run(
        capsys, f"--module={source}", "--function=scale", f"--input=@{tmp_path}/args.npz"
    )
    assert (code, err) == (0, "")
    assert out == "result[0]: 4xf32=[0 2.5 5 7.5]\n"
    # The positional file and --entry still work, and mix with single inputs.
    np.savez(tmp_path / "first.npz", a=np.ones(4, np.float32))
    code, out, _ = run(
        capsys, str(source), "--entry=scale", f"--input=@{tmp_path}/first.npz", "--input=f32=3"
    )
    assert out == "result[0]: 4xf32=[3 3 3 3]\n"


def test_program_given_twice_or_never(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)
    for argv in ([str(source), f"--module={source}"], ["--input=f32=1"]):
        code, _, err = run(capsys, *argv)
        assert code == 2  # a usage error, as argparse gives
        assert err.endswith("shlo-run: error: give the program once: as FILE or as --module=FILE\n")


def test_bad_npz_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    code, _, err = run(capsys, str(source), "--function=scale", f"--input=@{bad}")
    assert code == 1
    assert err.startswith(f"shlo-run: error: cannot read input {bad}: not a valid .npz file")
    assert len(err.strip().splitlines()) == 1


def test_rank_three_and_more_nest_brackets() -> None:
    assert format_result(np.arange(4, dtype=np.int32).reshape(2, 2)) == "2x2xi32=[0 1][2 3]"
    assert (
        format_result(np.arange(8, dtype=np.int32).reshape(2, 2, 2))
        == "2x2x2xi32=[[0 1][2 3]][[4 5][6 7]]"
    )
    assert format_result(np.zeros((1, 1, 1, 2), np.int8)) == "1x1x1x2xi8=[[[0 0]]]"


def test_large_results_are_abbreviated() -> None:
    values = np.arange(20, dtype=np.float32)
    assert format_result(values, max_elements=10) == "20xf32=[0 1 2 ... 17 18 19]"
    assert (
        format_result(values, max_elements=20) == "20xf32=[" + " ".join(map(str, range(20))) + "]"
    )
    assert format_result(values, max_elements=0).count(" ") == 19
    grid = np.arange(64, dtype=np.int32).reshape(8, 8)
    text = format_result(grid, max_elements=10)
    assert (
        text
        == "8x8xi32=[0 1 2 ... 5 6 7][8 9 10 ... 13 14 15][16 17 18 ... 21 22 23]...[40 41 42 ... 45 46 47][48 49 50 ... 53 54 55][56 57 58 ... 61 62 63]"
    )
