"""shlo-opt's exit codes and error output: never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SHLO_OPT = str(Path(sys.executable).parent / "shlo-opt")
EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "add_one_dynamic.mlir"


def shlo_opt(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([SHLO_OPT, *args], input=stdin, capture_output=True, timeout=120)


def test_refines_the_bundled_example():
    result = shlo_opt(str(EXAMPLE), "--shlo-remove-dynamism=types=tensor<16xf32>")
    assert result.returncode == 0, result.stderr
    assert b"stablehlo.constant dense<1.000000e+00> : tensor<16xf32>" in result.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "code", "expected"),
    [
        (
            ["-"],
            b"func.func @f() {\n  %0 = bogus\n}\n",
            1,
            b"<stdin>:2:8: error: custom op 'bogus'",
        ),
        (["--canonicalise"], b"", 2, b"did you mean canonicalize"),
        (["--pass-pipeline=builtin.module(cse"], b"", 2, b"shlo-opt: error:"),
        (["--shlo-remove-dynamism=typo=1"], b"", 2, b"has no option 'typo'"),
        (["/nonexistent/file.mlir"], b"", 1, b"cannot read /nonexistent/file.mlir"),
        (
            ["-", "--shlo-verify-static"],
            b"func.func @f(%a: tensor<?xf32>) {\n  return\n}\n",
            1,
            b"<stdin>:1:1: error: refinement left a dynamic value",
        ),
        (["-"], b"\xff\xfe not text", 1, b"neither UTF-8 text nor MLIR bytecode"),
        (
            ["--pass-pipeline=builtin.module(func.func(stablehlo-remove-dynamism))"],
            b"",
            2,
            b"unknown pass 'stablehlo-remove-dynamism'; did you mean shlo-remove-dynamism",
        ),
        (
            [str(EXAMPLE), "-o", "/nonexistent/out.mlir"],
            b"",
            1,
            b"cannot write /nonexistent/out.mlir",
        ),
        (
            ["-", "--split-input-file", "--emit-bytecode"],
            b"module {}\n// -----\nmodule {}\n",
            1,
            b"bytecode output holds one module",
        ),
    ],
)
def test_errors_exit_nonzero_without_traceback(args, stdin, code, expected):
    result = shlo_opt(*args, stdin=stdin)
    assert result.returncode == code
    assert expected in result.stderr
    assert b"Traceback" not in result.stderr
    assert len(result.stderr.decode().strip().splitlines()) <= 3


def test_output_file_and_repro_dir(tmp_path):
    output = tmp_path / "out.mlir"
    result = shlo_opt(str(EXAMPLE), "--shlo-remove-dynamism=types=tensor<2xf32>", "-o", str(output))
    assert result.returncode == 0
    assert "tensor<2xf32>" in output.read_text()

    result = shlo_opt(str(EXAMPLE), "--shlo-verify-static", "--repro-dir", str(tmp_path / "repro"))
    assert result.returncode == 1
    reproducer = result.stderr.decode().strip().splitlines()[-1]
    assert reproducer.startswith("reproduce with: shlo-opt ")
    assert "--pass-pipeline='builtin.module(shlo-verify-static)'" in reproducer
    saved = list((tmp_path / "repro").iterdir())
    assert len(saved) == 1 and saved[0].read_text() == EXAMPLE.read_text()


def test_print_ir_after_failure_shows_the_failing_pass():
    result = shlo_opt(str(EXAMPLE), "--shlo-verify-static", "--mlir-print-ir-after-failure")
    assert result.returncode == 1
    assert b"IR Dump After VerifyStaticPass Failed: shlo-verify-static" in result.stderr
