"""The fuzzer (tools/fuzz.py): its mutations, its classifier, its host, and 500 cases in CI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from shlo.tools import fuzz

ROOT = Path(__file__).resolve().parents[2]

TEXT = b"""func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %cst = stablehlo.constant dense<2.0> : tensor<4x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.add %arg0, %cst : tensor<4x3xf32>
  %1 = stablehlo.slice %0 [0:4, 1:3] : (tensor<4x3xf32>) -> tensor<4x2xf32>
  %2 = stablehlo.pad %1, %zero, low = [0, 1], high = [0, 0], interior = [0, 0] : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %2 : tensor<4x3xf32>
}
"""
# Stand-ins with the headers the mutations look at; their bodies are not read.
BYTECODE = b"ML\xefR\x06MLIR_test\x00" + bytes(range(64))
ARTIFACT = b"ML\xefR\x06StableHLO_v1.19.0\x00" + bytes(range(64))
SEED = fuzz.Seed("test", TEXT, "main", (((4, 3), "f32"),), BYTECODE, ARTIFACT)


@pytest.mark.parametrize("name", sorted(fuzz.MUTATIONS))
def test_mutation_changes_the_program_reproducibly(name: str) -> None:
    mutation = fuzz.MUTATIONS[name]
    first = mutation(SEED, random.Random(7))
    assert first is not None
    assert first == mutation(SEED, random.Random(7)), "the same seed must give the same case"
    original = TEXT if first.is_text else (BYTECODE if name.startswith("bytecode") else ARTIFACT)
    assert first.data != original or first.target_version is not None


def test_seed_programs_parse_and_run() -> None:
    """Every program in test/fuzz_seeds is a seed for all targets."""
    directory = ROOT / "test" / "fuzz_seeds"
    seeds = fuzz.load_seeds((directory,))
    assert sorted(s.name for s in seeds) == sorted(f"{p.name}#0" for p in directory.glob("*.mlir"))
    for seed in seeds:
        assert seed.entry == "main" and seed.arg_types is not None and seed.artifact is not None
        assert seed.bytecode.startswith(b"ML\xefR")


def test_seeds_skip_function_names_that_are_not_utf8(tmp_path: Path) -> None:
    """Such a function cannot be an --entry; the rest of its file still makes seeds."""
    body = "(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n"
    (tmp_path / "names.mlir").write_text(
        f'func.func private @"a\\FFdd"{body}func.func @main{body}'
        f'// -----\nfunc.func @"only\\FF"{body}'
    )
    (seed,) = fuzz.load_seeds((tmp_path,))
    assert seed.name == "names.mlir#0" and seed.entry == "main"


def test_structural_mutations() -> None:
    rng = random.Random(0)
    assert fuzz.deep_modules(SEED, rng).data.count(b"module {") == 6000
    nested = fuzz.deep_nesting(SEED, rng)
    assert nested is not None and len(nested.data) > 200_000
    huge = fuzz.huge_dimension(SEED, rng)
    assert huge is not None and any(h in huge.data for h in fuzz._HUGE_DIMENSIONS)
    producer = fuzz.artifact_producer_version(SEED, random.Random(0))
    assert producer is not None and b"StableHLO_v1.19.0" not in producer.data


def test_signature_blurs_names_numbers_and_paths() -> None:
    first = fuzz.signature(
        "unlocated", "compile", "ShloError: no function @dot_4 in /tmp/a/input.mlir"
    )
    second = fuzz.signature(
        "unlocated", "compile", "ShloError: no function @main in /tmp/b/input.mlir"
    )
    assert first == second == "unlocated compile: ShloError: no function @F in <file>"


@pytest.mark.parametrize(
    ("code", "output", "is_text", "expected"),
    [
        (0, "", True, "ok"),
        (1, "/tmp/x/input.mlir:3:7: error: expected ','", True, "clean_error"),
        (1, "error: \"-\":3:7: expected ','", True, "unlocated"),
        (1, "error: could not parse", False, "clean_error"),
        (1, "error: could not parse", True, "unlocated"),
        (1, "shlo-opt: error: bad --target-version=9.9.9", True, "clean_error"),
        (1, "shlo-run: error: no function @main in the module; it has @f", True, "clean_error"),
        (2, "shlo-opt: error: unknown pass", False, "clean_error"),
        (3, "shlo-opt: internal error: KeyError", False, "traceback"),
        (None, "KeyError: 'x'", False, "traceback"),
        (1, "Traceback (most recent call last):\n ...", False, "traceback"),
        (1, "input.mlir:1:1: error: internal error in shlo-simplify: boom", True, "traceback"),
    ],
)
def test_classify(code: int | None, output: str, is_text: bool, expected: str) -> None:
    assert fuzz.classify(code, output, is_text, "opt-canonicalize") == expected


def test_host_survives_death_hang_and_traceback() -> None:
    host = fuzz.Host(timeout=5)
    request = {"argv": ["{input}"], "data": TEXT, "is_text": True}
    try:
        assert host.run({**request, "target": "check-located"})["class"] == "clean_error"
        assert host.run({**request, "target": "check-unlocated"})["class"] == "unlocated"
        died = host.run({**request, "target": "check-abort"})
        assert died["class"] == "host_death" and "SIGABRT" in died["output"]
        raised = host.run({**request, "target": "check-raise"})
        assert raised["class"] == "traceback" and "KeyError" in raised["output"]
        assert host.run({**request, "target": "check-sleep"})["class"] == "hang"
        assert host.run({**request, "target": "check-slow-program"})["class"] == "slow_program"
        assert host.run({**request, "target": "check-located"})["class"] == "clean_error"
        assert host.starts == 4
    finally:
        host.close()
    assert not Path(host.directory).exists()


# Bit-flipped bytecode on which MLIR's bytecode reader loops forever (found by the fuzzer).
LOOPING_BYTECODE = Path(__file__).parent / "fuzz_regressions" / "looping_reader.mlirbc"


@pytest.mark.parametrize(
    ("target", "argv"),
    [
        ("opt-portable-artifact", ["{input}", "--emit-portable-artifact", "-o", "{output}"]),
        ("run-interpreter", ["{input}", "--target=interpreter", "--input=4xi1=0"]),
        ("compile", ["--entry=main"]),
    ],
)
def test_worker_time_limit_is_a_clean_error(target: str, argv: list[str]) -> None:
    """The host's tools stop a looping worker at SHLO_COMPILE_TIMEOUT, within the run's limit."""
    host = fuzz.Host(timeout=9)  # the worker's limit is 3 s
    request = {"target": target, "argv": argv, "data": LOOPING_BYTECODE.read_bytes()}
    try:
        reply = host.run({**request, "is_text": False})
    finally:
        host.close()
    assert reply["class"] == "clean_error", reply["output"]
    assert reply["code"] == 1 and "timed out after 3 s" in reply["output"]
    assert len(reply["output"].strip().splitlines()) == 1, reply["output"]


def test_expected_failures_need_signature_and_input(tmp_path: Path) -> None:
    listed = tmp_path / "expected.txt"
    listed.write_text(
        "# a comment\n\nunlocated *: *crashed (SIGSEGV)* | array<i64: -\\d | an upstream bug\n"
    )
    (entry,) = fuzz.load_expected_failures(listed)
    assert entry.reason == "an upstream bug"
    crash = fuzz.signature("unlocated", "run-cpu", "shlo-run: error: it crashed (SIGSEGV) on x")
    assert entry.matches(crash, b"dims = array<i64: -1>")
    assert not entry.matches(crash, b"dims = array<i64: 1>"), "another input that crashes"
    other = fuzz.signature("unlocated", "run-cpu", "shlo-run: error: it crashed (SIGABRT) on x")
    assert not entry.matches(other, b"dims = array<i64: -1>")
    listed.write_text("unlocated *: no reason given\n")
    with pytest.raises(SystemExit, match=r"expected.txt:1:1: error: expected 'signature glob"):
        fuzz.load_expected_failures(listed)
    # The repository's list parses, and each entry says why it is there.
    assert all(e.reason for e in fuzz.load_expected_failures(fuzz.EXPECTED_FAILURES))


def test_500_cases_seed_0(tmp_path: Path) -> None:
    """The CI campaign: no host death, traceback, hang or unlocated error."""
    options = ["--cases", "500", "--seed", "0", "--out", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, "-m", "shlo.tools.fuzz", *options],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"] >= 500
    # Mutations that did nothing would pass trivially.
    assert summary["classes"].get("clean_error", 0) > 100, result.stdout
    bad = {kind: summary["classes"].get(kind, 0) for kind in fuzz.BAD_CLASSES}
    assert bad == dict.fromkeys(fuzz.BAD_CLASSES, 0), result.stdout[-20_000:]
    assert result.returncode == 0, result.stderr[-5000:]
    # An expected failure that no longer occurs is fixed: remove it from the list.
    fixed = [glob for glob, runs in summary["expected"].items() if runs == 0]
    assert not fixed, f"no longer occur; remove from {fuzz.EXPECTED_FAILURES}: {fixed}"
