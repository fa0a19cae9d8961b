"""`python -m bench --quick`: every issue-10 model runs on shlo and matches jax.

The quick mode uses small sizes and one timed call; speed is not checked here
(bench/README.md). The comparison it relies on is tested to reject wrong
results, so a wrong shlo answer fails this test.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[2]
# bench/ is a package at the repository root, not installed with shlo.
sys.path.insert(0, str(ROOT))

from bench.models import BUILDERS, BYTE_MODELS  # noqa: E402
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


def test_each_timed_call_follows_a_warm_up_of_untimed_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # After an idle pause one untimed call left the cores slow; each timed
    # call now comes after warm_s seconds of untimed ones.
    import bench.__main__ as suite
    from bench.timing import untimed_calls

    events: list[str] = []
    monkeypatch.setattr(
        suite, "untimed_calls", lambda fn, seconds: events.append(f"warm {seconds}")
    )
    calls = {name: (lambda name=name: events.append(name)) for name in ("a", "b")}
    results = {name: suite.SystemResult("ok") for name in calls}
    suite.time_interleaved(calls, 2, 10.0, results, settle_s=0.001, warm_s=0.02)
    assert events == ["warm 0.02", "a", "warm 0.02", "b"] * 2

    count = [0]

    def call() -> None:
        count[0] += 1

    start = time.perf_counter()
    untimed_calls(call, 0.02)
    assert time.perf_counter() - start >= 0.02 and count[0] > 1
    count[0] = 0
    untimed_calls(call, 0.0)
    assert count[0] == 1


def test_wrong_shlo_result_fails_the_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.__main__ as suite
    import bench.systems

    right = bench.systems.prepare_shlo

    def off_by_one_percent(case, threads, compiles):
        prepared = right(case, threads, compiles)
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
    assert [name for name, model in models.items() if model["unit"] == "byte"] == list(BYTE_MODELS)
    for name, model in models.items():
        # A constant reference (say, all zeros) would make the check vacuous.
        assert model["constant_outputs"] == [], name
        shlo = model["systems"]["shlo"]
        assert shlo["correct"] is True, f"{name}: {shlo['error']}"
        assert shlo["samples_ms"], name
        # Byte models are timed against a copy of their bytes; flop models not.
        if model["unit"] == "byte":
            assert model["copy"]["samples_ms"], name
            expected = 100 * model["copy"]["median_ms"] / shlo["median_ms"]
            assert shlo["percent_of_copy"] == pytest.approx(expected), name
        else:
            assert model["copy"] is None, name
        # XLA is the reference; a peer that runs must agree with it too.
        for system in ("iree", "numpy"):
            peer = model["systems"][system]
            assert peer["status"] in ("ok", "skipped"), f"{name} on {system}: {peer['error']}"
    assert report["peak"]["fma_gflops"] > 0 and report["peak"]["copy_gbps"] > 0
    assert (tmp_path / "ratios.png").read_bytes().startswith(b"\x89PNG")


def test_target_cuda_parsing() -> None:
    import bench.__main__ as suite
    from bench.systems import CPU_PEER_NOTE, Unavailable, prepare

    args = suite.parse_args(["--quick", "--target", "cuda"])
    assert (args.target, args.system_list) == ("cuda", ["shlo", "xla"])
    assert suite.parse_args(["--quick"]).system_list == ["shlo", "xla", "iree", "numpy"]
    asked = suite.parse_args(["--target=cuda", "--systems", "numpy,shlo"])
    assert asked.system_list == ["shlo", "numpy"]
    for bad in (["--target", "tpu"], ["--target", "cuda", "--threads", "2"]):
        with pytest.raises(SystemExit):
            suite.parse_args(bad)
    # Read from sys.argv before jax starts, so that only CPU mode pins jax to the CPU.
    assert suite._target_in_argv(["--quick", "--target", "cuda"]) == "cuda"
    assert suite._target_in_argv(["--target=cuda"]) == "cuda"
    assert suite._target_in_argv(["--targ", "cuda"]) == "cuda"
    assert suite._target_in_argv(["--quick", "--threads", "2"]) == "cpu"
    # The CPU peers are skipped on the GPU, before the case is looked at.
    with pytest.raises(Unavailable, match=CPU_PEER_NOTE):
        prepare("numpy", None, None, "cuda")  # type: ignore[arg-type]


def test_target_cuda_without_gpu_fails_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import jax

    import bench.__main__ as suite

    # In this process jax is pinned to the CPU (conftest, or the suite when imported).
    assert jax.default_backend() == "cpu" and os.environ.get("JAX_PLATFORMS") == "cpu"
    status = suite.main(["--quick", "--target", "cuda", "--only", "matmul", "--out", str(tmp_path)])
    assert status == 2
    error = capsys.readouterr().err
    assert "--target cuda needs a CUDA GPU" in error and "JAX_PLATFORMS is 'cpu'" in error
    assert not (tmp_path / "bench.json").exists()
    assert jax.config.jax_default_matmul_precision is None


def test_target_cuda_leaves_jax_its_platforms(tmp_path: Path) -> None:
    # Run as python -m bench, cuda mode must not pin jax to the CPU: on a
    # machine without a GPU, jax then has no GPU of its own accord.
    plugins = [p for p in ("jax-cuda12-plugin", "jax-cuda13-plugin") if _installed(p)]
    if plugins:
        pytest.skip(f"{plugins[0]} is installed: jax may have a GPU here")
    env = {key: value for key, value in os.environ.items() if key != "JAX_PLATFORMS"}
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--target", "cuda", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "--target cuda needs a CUDA GPU" in result.stderr
    assert "JAX_PLATFORMS" not in result.stderr  # the suite did not set it
    assert "gpu" in result.stderr  # jax's own reason: no gpu platform
    assert not (tmp_path / "bench.json").exists()


def test_gpu_peak_runs_on_any_jax_device() -> None:
    # The GPU peak's code, on the CPU with small arrays: the numbers mean nothing here.
    import jax

    from bench.peak import measure_gpu

    peak = measure_gpu(jax.devices()[0], floats=1 << 12, fma_floats=1 << 12)
    assert peak.fma_gflops > 0 and peak.copy_gbps > 0
    assert peak.method == f"jax on {jax.devices()[0].device_kind}"


def _installed(package: str) -> bool:
    from importlib import metadata

    try:
        metadata.version(package)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_compute_floor_times_an_in_cache_slice_of_each_byte_model() -> None:
    from bench import compute_floor

    x, scale = np.zeros((512, 4096), np.float32), np.ones(4096, np.float32)
    small_x, small_scale = compute_floor.sliced((x, scale), 1 << 16)
    assert small_x.shape == (16, 4096) and small_scale is scale
    command = [sys.executable, "-m", "bench.compute_floor", "--quick", "--repeats", "1"]
    result = subprocess.run(
        [*command, "--settle", "0"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [row[1].strip() for row in rows[1:]] == list(BYTE_MODELS)
    for row in rows[1:]:
        # One quick round is too noisy for the floor's sign; the times must be there.
        shlo_ms, copy_ms, floor_ms = float(row[2]), float(row[3]), float(row[6])
        assert shlo_ms > 0 and copy_ms > 0 and math.isfinite(floor_ms), row


def test_zoo_runs_each_kind_of_model() -> None:
    # One model per builder: an encoder, a language model's logits (in f32
    # and bf16) and its generation loop, ViT, the nnx block and the LSTM (a
    # scan); each is checked against jax.
    only = "bert,llama,gpt2_generate,vit,nnx_block,gpt2_bf16,lstm"
    command = [sys.executable, "-m", "bench.zoo", "--quick", "--only", only]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [row[1].strip() for row in rows[1:]] == only.split(",")
    for row in rows[1:]:
        tolerance = 3e-2 if row[1].strip().endswith("_bf16") else 1e-4
        assert float(row[2]) > 0 and float(row[3]) > 0 and float(row[6]) < tolerance, row


def test_decode_runs_each_program() -> None:
    command = [sys.executable, "-m", "bench.decode", "--quick"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [row[1].strip() for row in rows[1:]] == ["mlp m=2", "tied_output"]
    for row in rows[1:]:
        assert all(float(row[i]) > 0 for i in range(2, 8)), row


def test_linalg_runs_each_program() -> None:
    command = [sys.executable, "-m", "bench.linalg", "--quick"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| ")]
    names = [row[1].strip() for row in rows[1:]]
    assert names == [
        "lu_factor 40",
        "solve 40",
        "inv 40",
        "cholesky 40",
        "solve_triangular 40",
        "solve batch=8 40",
        "eigvalsh 40",
        "svdvals 40",
    ]
    for row in rows[1:]:
        # Times are positive; one untimed quick call may make the ratio print as 0.00.
        assert all(float(row[i]) > 0 for i in range(2, 5)) and float(row[5]) >= 0, row


def test_ops_runs_each_op() -> None:
    from bench import ops

    command = [sys.executable, "-m", "bench.ops", "--quick"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [row[1].strip() for row in rows[1:]] == list(ops.ops(small=True))
    for row in rows[1:]:
        assert all(float(row[i]) > 0 for i in range(2, 4)) and float(row[4]) >= 0, row


def test_bench_compares_complex_values_by_both_parts() -> None:
    want = np.array([1 + 1j, 2 + 2j], np.complex64)
    assert compare([want], [want], 1e-4)[0] == ""
    assert "max |error|" in compare([want + 0.5j], [want], 1e-4)[0]


def test_subnormals_runs_each_program_on_both_kinds_of_data() -> None:
    # The script checks the flushing code against jax.jit before it times it.
    command = [sys.executable, "-m", "bench.subnormals", "--size", "65536", "--repeats", "1"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [(row[1].strip(), row[2].strip()) for row in rows[1:]] == [
        (name, data)
        for name in ("scale_add", "sqrt_div", "softmax")
        for data in ("normal", "subnormal")
    ]
    for row in rows[1:]:
        assert all(float(row[i]) > 0 for i in range(3, 8)), row


def test_compile_time_is_the_fastest_of_several_fresh_compiles() -> None:
    """Each compile is a whole one (jax's caches would make XLA's second one 0.3 ms) and
    the fastest is the compile time; the first is kept too."""
    import bench.systems
    from bench import models

    case = bench.systems.Case.export(models.matmul(True))
    for system in ("shlo", "xla"):
        once = bench.systems.prepare(system, case, None, compiles=1)
        thrice = bench.systems.prepare(system, case, None, compiles=3)
        assert once.compile_s == once.first_compile_s
        assert thrice.compile_s is not None and thrice.first_compile_s is not None
        assert thrice.compile_s <= thrice.first_compile_s
        # A cache hit would take a small fraction of a real compile.
        assert thrice.compile_s > 0.2 * once.compile_s
