"""shlo-run: iree-run-module-style inputs and outputs, both targets, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SHLO_RUN = str(Path(sys.executable).parent / "shlo-run")
EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"
ADD_ONE = EXAMPLES / "add_one_dynamic.mlir"
TWO_RESULTS = """
func.func @main(%x: tensor<2x3xf32>, %s: tensor<i32>) -> (tensor<3x2xf32>, tensor<i32>) {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = stablehlo.multiply %s, %s : tensor<i32>
  return %0, %1 : tensor<3x2xf32>, tensor<i32>
}
"""


def shlo_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHLO_RUN, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("target", ["cpu", "interpreter"])
def test_runs_the_bundled_example(target: str) -> None:
    result = shlo_run(str(ADD_ONE), "--input=4xf32=1,2,3,4.5", f"--target={target}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "result[0]: 4xf32=[2 3 4 5.5]\n"


def test_inputs_from_npy_and_text_and_outputs_to_npy(tmp_path: Path) -> None:
    program = tmp_path / "two.mlir"
    program.write_text(TWO_RESULTS)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    printed = shlo_run(str(program), f"--input=@{tmp_path / 'x.npy'}", "--input=i32=7")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.splitlines() == [
        "result[0]: 3x2xf32=[0 3][1 4][2 5]",
        "result[1]: i32=49",
    ]
    out0, out1 = tmp_path / "t.npy", tmp_path / "s.npy"
    saved = shlo_run(
        str(program),
        f"--input=@{tmp_path / 'x.npy'}",
        "--input=i32=7",
        f"--output=@{out0}",
        f"--output=@{out1}",
    )
    assert saved.returncode == 0, saved.stderr
    np.testing.assert_array_equal(np.load(out0), x.T)
    assert np.load(out1) == 49


def test_splat_input_and_benchmark() -> None:
    result = shlo_run(str(ADD_ONE), "--input=3xf32=2", "--benchmark=20")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "result[0]: 3xf32=[3 3 3]"
    assert lines[1].startswith("benchmark: 20 calls, mean ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input=4xf32=1,2,3"], "shape 4xf32 needs 4 values, got 3"),
        (["--input=4xi32=1"], "argument 0 of @main: expected dtype float32 (f32), got int32"),
        (["--input=2x2xf32=1"], "argument 0 of @main: expected shape ?, got 2x2"),
        (["--input=4xq32=1"], "cannot parse --input='4xq32=1'"),
        ([], "@main takes 1 argument(s), got 0"),
        (["--input=2xf32=1", "--entry=nope"], "no function @nope in the module; it has @main"),
    ],
)
def test_errors_are_one_line_without_traceback(args: list[str], message: str) -> None:
    result = shlo_run(str(ADD_ONE), *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_parse_error_has_file_line_col(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main( {\n")
    result = shlo_run(str(bad))
    assert result.returncode == 1
    assert f"{bad}:1:17: error:" in result.stderr
    assert "Traceback" not in result.stderr
