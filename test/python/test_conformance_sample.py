"""A fixed sample of StableHLO's conformance tests, compiled and run on the CPU.

The sample runs in the default mode, with the inputs passed as run-time
arguments and the expected values decoded on the host. The full run is one
command (see docs/cpu.md):

  python -m shlo.conformance ../shared/conformance/stablehlo \\
      --expected-failures test/conformance/expected_failures.txt --report build/conformance
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from shlo import conformance
from shlo._mlir_compat import ir, new_context

REPO = Path(__file__).parents[2]
EXPECTED_FAILURES = REPO / "test" / "conformance" / "expected_failures.txt"
SAMPLE_FILES = 320
# The CUDA PTX sample is a different slice of the files (an odd count), since
# the full run takes about 7 minutes on two cores.
CUDA_PTX_FAILURES = REPO / "test" / "conformance" / "expected_failures_cuda_ptx.txt"
CUDA_PTX_SAMPLE_FILES = 251
RECORDED = REPO / "test" / "conformance" / "results"


def conformance_dir() -> Path | None:
    """SHLO_CONFORMANCE_DIR, else shared/conformance/stablehlo beside the checkout."""
    if "SHLO_CONFORMANCE_DIR" in os.environ:
        return Path(os.environ["SHLO_CONFORMANCE_DIR"])
    for parent in REPO.resolve().parents:
        candidate = parent / "shared" / "conformance" / "stablehlo"
        if candidate.is_dir():
            return candidate
    return None


@pytest.mark.parametrize("failures", [EXPECTED_FAILURES, CUDA_PTX_FAILURES])
def test_expected_failures_have_reasons(failures: Path) -> None:
    for line in failures.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            case, _, reason = line.partition(" ")
            assert reason.strip(), f"{case} is listed without a reason"


def run_sample(tmp_path: Path, target: str, files: int, failures: Path) -> dict[str, str]:
    """Statuses of a sample run's cases; the run must match its expected failures."""
    root = conformance_dir()
    if root is None:
        pytest.skip("StableHLO conformance data not found; set SHLO_CONFORMANCE_DIR")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "shlo.conformance",
            str(root),
            f"--target={target}",
            f"--sample={files}",
            f"--expected-failures={failures}",
            f"--report={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"files: {files}," in result.stdout
    return json.loads((tmp_path / "results.json").read_text())


def assert_as_recorded(statuses: dict[str, str], target: str) -> None:
    """The sample's outcomes are those of the full run that docs/coverage.md shows."""
    recorded = json.loads((RECORDED / f"{target}.json").read_text())
    changed = {
        case: f"{recorded.get(case, 'absent')} -> {status}"
        for case, status in statuses.items()
        if recorded.get(case) != status
    }
    assert not changed, (
        f"{target} outcomes differ from test/conformance/results/{target}.json; rerun the "
        f"full conformance and tools/gen_coverage.py: {dict(list(changed.items())[:10])}"
    )


def test_conformance_sample(tmp_path: Path) -> None:
    statuses = run_sample(tmp_path, "cpu", SAMPLE_FILES, EXPECTED_FAILURES)
    assert_as_recorded(statuses, "cpu")


def test_conformance_sample_compiles_to_ptx(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    from shlo.backends.cuda.ptx import find_ptxas

    if find_ptxas() is None:
        pytest.skip("ptxas (the cuda extra) is missing")
    statuses = run_sample(tmp_path, "cuda-ptx", CUDA_PTX_SAMPLE_FILES, CUDA_PTX_FAILURES)
    assert_as_recorded(statuses, "cuda-ptx")


def test_recorded_results_match_the_expected_failures() -> None:
    """Every recorded failure is listed with a reason, and every listed case fails."""
    cuda_failures = REPO / "test" / "conformance" / "expected_failures_cuda.txt"
    targets = (("cpu", EXPECTED_FAILURES), ("cuda-ptx", CUDA_PTX_FAILURES), ("cuda", cuda_failures))
    for target, failures in targets:
        recorded = json.loads((RECORDED / f"{target}.json").read_text())
        expected = conformance.load_expected_failures(failures)
        failing = {c for c, s in recorded.items() if s not in ("pass", "unsupported")}
        assert failing == set(expected), (target, failing ^ set(expected))


def test_coverage_md_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_coverage.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


# --- the run-time inputs mode -------------------------------------------------------------

ADD_TEST = """
func.func @add_test() {
  %0 = stablehlo.constant dense<[1, 0, -1, -2]> : tensor<4xi8>
  %1 = stablehlo.constant dense<[-1, 1, 1, 1]> : tensor<4xi8>
  %2 = stablehlo.add %0, %1 : tensor<4xi8>
  check.expect_eq_const %2, dense<EXPECTED> : tensor<4xi8>
  func.return
}
"""

JAX_TEST = """
func.func public @main() -> tensor<3xf32> {
  %0:2 = call @inputs() : () -> (tensor<3xf32>, tensor<f32>)
  %1 = call @expected() : () -> tensor<3xf32>
  %2 = stablehlo.broadcast_in_dim %0#1, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %3 = stablehlo.multiply %0#0, %2 : tensor<3xf32>
  stablehlo.custom_call @check.expect_close(%3, %1) {has_side_effect = true}
      : (tensor<3xf32>, tensor<3xf32>) -> ()
  return %3 : tensor<3xf32>
}
func.func private @inputs() -> (tensor<3xf32>, tensor<f32>) {
  %0 = stablehlo.constant dense<[1.0, -2.0, 0x7FC00000]> : tensor<3xf32>
  %1 = stablehlo.constant dense<3.0> : tensor<f32>
  return %0, %1 : tensor<3xf32>, tensor<f32>
}
func.func private @expected() -> tensor<3xf32> {
  %0 = stablehlo.constant dense<[3.0, -6.0, 0x7FC00000]> : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def _prepared(text: str, name: str):
    """The module (which owns the function), the function, its checks and its inputs."""
    module = ir.Module.parse(conformance.checks_as_custom_calls(text), new_context())
    function = conformance._function(module, name)
    checks = conformance.extract_checks(function, on_host=True)
    return module, function, checks, conformance.inputs_as_arguments(function)


@pytest.mark.parametrize(
    ("literal", "type_", "want"),
    [
        ("dense<[1.5, 0x7FC0, -0.0]>", "tensor<3xbf16>", np.array([1.5, np.nan, -0.0])),
        ("dense<[0x7C00, 0xFC00]>", "tensor<2xf16>", np.array([np.inf, -np.inf])),
        ("dense<[[1.0, 2.5], [-3.0, 4.0]]>", "tensor<2x2xf8E4M3FN>", [[1, 2.5], [-3, 4]]),
        ("dense<[(1.5,-2.0), (0x7F800000,0.0)]>", "tensor<2xcomplex<f32>>", [1.5 - 2j, np.inf]),
        ('dense<"0x0000803F000000C0">', "tensor<2xf32>", np.array([1.0, -2.0])),
        ('dense<"0x0000803F">', "tensor<2x2xf32>", np.ones((2, 2))),
        ("dense<[true, false, true]>", "tensor<3xi1>", np.array([True, False, True])),
        ('dense<"0x000105">', "tensor<3xi1>", np.array([False, True, True])),
        ('dense<"0x01">', "tensor<2xi1>", np.array([True, True])),
        ("dense<[-8, 7, -1]>", "tensor<3xi4>", np.array([-8, 7, -1])),
        ("dense<18446744073709551615>", "tensor<2xui64>", np.array([2**64 - 1] * 2, np.uint64)),
        ("dense<-3>", "tensor<i32>", np.array(-3)),
    ],
)
def test_decode_literal(literal: str, type_: str, want) -> None:
    got = conformance.decode_literal(literal, type_)
    want = np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.astype(want.dtype), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int16", "int64"])
def test_decode_literal_round_trips_printed_attributes(dtype: str) -> None:
    # Small arrays print as decimals, large ones as raw hex: both must decode.
    rng = np.random.default_rng(0)
    for size in (7, 500):
        array = (rng.standard_normal(size) * 100).astype(dtype)
        with new_context():
            printed = str(ir.DenseElementsAttr.get(array))
        literal, _, type_ = printed.rpartition(" : ")
        np.testing.assert_array_equal(conformance.decode_literal(literal, type_), array)


def test_inputs_become_arguments_and_expected_values_stay_on_the_host() -> None:
    module, function, checks, arguments = _prepared(JAX_TEST, "main")
    assert [a.shape for a in arguments] == [(3,), ()]
    text = str(function)
    assert "stablehlo.multiply %arg0" in text and "stablehlo.broadcast_in_dim %arg1" in text
    assert "call @" not in text and "stablehlo.constant" not in text, str(module)
    (check,) = checks
    assert check.operands[0] == 1  # the second result; the first is what main returns
    np.testing.assert_array_equal(check.operands[1], np.array([3.0, -6.0, np.nan], np.float32))


def test_shape_operands_stay_constants() -> None:
    source = """
    func.func @broadcast_test() {
      %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
      %1 = stablehlo.constant dense<[3, 2]> : tensor<2xi64>
      %2 = stablehlo.dynamic_broadcast_in_dim %0, %1, dims = [1]
          : (tensor<2xi32>, tensor<2xi64>) -> tensor<3x2xi32>
      check.expect_eq_const %2, dense<[[1, 2], [1, 2], [1, 2]]> : tensor<3x2xi32>
      func.return
    }
    """
    module, function, _, arguments = _prepared(source, "broadcast_test")
    assert [a.tolist() for a in arguments] == [[1, 2]]
    assert "stablehlo.dynamic_broadcast_in_dim %arg0, %c" in str(function)
    assert "dense<[3, 2]>" in str(module)


@pytest.mark.parametrize("inputs", ["arguments", "constants"])
def test_run_function_compares_with_the_expected_values(inputs: str) -> None:
    good = ADD_TEST.replace("EXPECTED", "[0, 1, 0, -1]")
    bad = ADD_TEST.replace("EXPECTED", "[0, 1, 0, 5]")
    for text, status in ((good, "pass"), (bad, "fail")):
        text = conformance.checks_as_custom_calls(text)
        assert conformance.run_function(text, "add_test", "<test>", inputs)[0] == status
    text = conformance.checks_as_custom_calls(JAX_TEST)
    assert conformance.run_function(text, "main", "<test>", inputs) == ("pass", "")


def test_a_checked_constant_is_computed_not_decoded() -> None:
    source = """
    func.func @constant_test() {
      %0 = stablehlo.constant dense<[(1.5,2.0), (-3.0,0.5)]> : tensor<2xcomplex<f32>>
      check.expect_eq_const %0, dense<[(1.5,2.0), (-3.0,0.5)]> : tensor<2xcomplex<f32>>
      func.return
    }
    """
    module, _function, checks, arguments = _prepared(source, "constant_test")
    assert arguments == []
    assert isinstance(checks[0].operands[0], int), str(module)
    assert isinstance(checks[0].operands[1], np.ndarray)
    wrong = conformance.checks_as_custom_calls(source.replace("0.5)]> :", "0.25)]> :", 1))
    assert conformance.run_function(wrong, "constant_test", "<test>")[0] == "fail"


def test_the_runner_replaces_a_child_that_crashes_or_hangs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Children are forked, so they run this stand-in for run_file.
    def fake_run_file(path: Path, root: Path, inputs: str, target: str) -> list:
        if path.name == "abort.mlir":
            os.abort()
        if path.name == "hang.mlir":
            time.sleep(60)
        return [conformance.CaseResult(path.name, "pass", "", 0.0)]

    monkeypatch.setattr(conformance, "run_file", fake_run_file)
    names = ["a", "abort", "b", "hang", "c", "d", "e"]
    paths = [tmp_path / f"{name}.mlir" for name in names]
    results = [
        r
        for batch in conformance.run_isolated(
            paths, tmp_path, jobs=2, timeout=2.0, files_per_process=3
        )
        for r in batch
    ]
    statuses = {r.case: r.status for r in results}
    assert statuses == {
        "a.mlir": "pass",
        "abort.mlir": "crash",
        "b.mlir": "pass",
        "hang.mlir": "timeout",
        "c.mlir": "pass",
        "d.mlir": "pass",
        "e.mlir": "pass",
    }
    assert "SIGABRT" in next(r.message for r in results if r.status == "crash")
