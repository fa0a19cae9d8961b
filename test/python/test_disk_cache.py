"""The on-disk compile cache (SHLO_CACHE_DIR) and the thread count of shlo.compile and shlo-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo import disk_cache
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, CpuPipeline, default_threads
from shlo.interpreter import interpret

PROGRAM = """
func.func @main(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<?x4xf32>
  %1 = stablehlo.tanh %0 : tensor<?x4xf32>
  %2 = stablehlo.add %1, %x : tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}
func.func @other(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.subtract %x, %y : tensor<?x4xf32>
  %1 = stablehlo.exponential %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
"""

SHLO_RUN = str(Path(sys.executable).parent / "shlo-run")


def inputs(rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    y = rng.standard_normal((rows, 4)).astype(np.float32)
    return x, y


def check(result: np.ndarray, entry: str, rows: int) -> None:
    """``result`` agrees with the reference interpreter."""
    (want,) = interpret(PROGRAM, entry, list(inputs(rows)))
    np.testing.assert_allclose(result, want, rtol=1e-5, atol=1e-6)


def entries(directory: Path, kind: str | None = None) -> list[Path]:
    """The entries in ``directory``: all, or those of the "code" or "inspection" kind."""
    paths = sorted(directory.glob("*.shlo"))
    if kind is None:
        return paths
    # Code entries' metadata is a dict of types, inspections' a list of parameters.
    return [p for p in paths if isinstance(decode(p)[0], dict) == (kind == "code")]


def decode(path: Path) -> tuple:
    decoded = disk_cache._decode(bytes.fromhex(path.stem), path.read_bytes())
    assert decoded is not None, path
    return decoded


def delta(before: dict[str, int], kind: str = "") -> dict[str, int]:
    """How the counters of ``kind`` (all when empty) changed since ``before``, without the kind."""
    return {
        k.removeprefix(kind).strip(): v - before.get(k, 0)
        for k, v in disk_cache.stats.items()
        if v != before.get(k, 0) and k.startswith(kind)
    }


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("SHLO_CACHE_DIR", str(directory))
    monkeypatch.delenv("SHLO_CACHE_MAX_BYTES", raising=False)
    monkeypatch.delenv("SHLO_THREADS", raising=False)
    return directory


def run_compiled(entry: str = "main", rows: int = 3, **options) -> np.ndarray:
    return shlo.compile(PROGRAM, entry=entry, isolate=False, **options)(*inputs(rows))


# Compiles in a fresh process and prints the cache counters and the results.
# With "no-worker" this process can neither inspect nor lower anything, in the
# worker or in-process: only cache hits can run.
CHILD = """
import json, sys
import numpy as np
import shlo, shlo.compiler
from shlo import disk_cache

program, mode = sys.argv[1], sys.argv[2]
if mode == "no-worker":
    def forbidden(*args, **kwargs):
        raise AssertionError("the worker is needed although the cache holds everything")
    shlo.compiler.shared_worker = shlo.compiler.inspect_entry = forbidden
    shlo.compiler.lower_to_object = forbidden
results = []
error = None
try:
    for rows in (3, 5):
        rng = np.random.default_rng(rows)
        x = rng.standard_normal((rows, 4)).astype(np.float32)
        y = rng.standard_normal((rows, 4)).astype(np.float32)
        exe = shlo.compile(program, isolate=mode != "in-process")
        results.append(exe(x, y).tolist())
except AssertionError as forbidden:
    error = str(forbidden)
print(json.dumps({
    "stats": dict(disk_cache.stats),
    "results": results,
    "error": error,
    "toolchain": disk_cache.toolchain_fingerprint(),
}))
"""


def run_child(cache: Path, mode: str) -> dict:
    env = {**os.environ, "SHLO_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, PROGRAM, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_child(report: dict) -> None:
    assert report["error"] is None
    assert len(report["results"]) == 2
    for rows, result in zip((3, 5), report["results"]):
        check(np.array(result, np.float32), "main", rows)


def test_a_new_process_needs_no_worker(cache: Path) -> None:
    # An edit to shlo's sources between the processes changes the key (as it
    # should): then start over, in a shared checkout that others are editing.
    for attempt in range(3):
        directory = cache / str(attempt)
        first = run_child(directory, "isolated")
        second = run_child(directory, "no-worker")
        if first["toolchain"] == second["toolchain"]:
            break
    else:
        pytest.fail("shlo's sources changed during every attempt")
    # Two compilations of one program: one inspection, two specializations.
    assert first["stats"] == {
        "inspection miss": 1,
        "inspection store": 1,
        "inspection hit": 1,
        "code miss": 2,
        "code store": 2,
    }
    assert second["stats"] == {"inspection hit": 2, "code hit": 2}
    check_child(first)
    check_child(second)
    assert len(entries(directory)) == 3
    assert not list(directory.glob(".tmp-*"))


def test_no_cache_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHLO_CACHE_DIR", raising=False)
    before = dict(disk_cache.stats)
    check(run_compiled(), "main", 3)
    assert delta(before) == {}


def test_every_part_of_the_key_misses(cache: Path) -> None:
    check(run_compiled(threads=2), "main", 3)
    assert len(entries(cache, "code")) == 1
    assert len(entries(cache, "inspection")) == 1
    before = dict(disk_cache.stats)
    check(run_compiled(threads=2), "main", 3)
    assert delta(before) == {"inspection hit": 1, "code hit": 1}
    other_strategy = replace(SCALAR_LOOPS, tensor_passes=SCALAR_LOOPS.tensor_passes[:-1])
    variants = [
        {"threads": 3},
        {"threads": 2, "entry": "other"},
        {"threads": 2, "rows": 4},
        {"threads": 2, "pipeline": CpuPipeline(strategy=other_strategy)},
        # Only the strategy's name differs: the pipeline's fields are in the key too.
        {"threads": 2, "pipeline": CpuPipeline(strategy=replace(SCALAR_LOOPS, name="renamed"))},
        {"threads": 2, "max_bytes": 1 << 20},
    ]
    for count, options in enumerate(variants, start=2):
        before = dict(disk_cache.stats)
        entry, rows = options.pop("entry", "main"), options.pop("rows", 3)
        check(run_compiled(entry, rows, **options), entry, rows)
        assert delta(before, "code") == {"miss": 1, "store": 1}, options
        assert len(entries(cache, "code")) == count


@pytest.mark.parametrize("generator", ["torch-mlir", "llvmlite"])
def test_another_code_generator_version_misses(
    generator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both generate the object code: MLIR's LLVM, and llvmlite's for glue-only modules.
    before = disk_cache.toolchain_fingerprint.__wrapped__()
    real = disk_cache._distribution_version
    monkeypatch.setattr(
        disk_cache,
        "_distribution_version",
        lambda name: "0.0.0-other" if name == generator else real(name),
    )
    assert disk_cache.toolchain_fingerprint.__wrapped__() != before


def test_an_edited_file_is_compiled_again(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "program.mlir"
    path.write_text(PROGRAM)
    x, y = inputs(3)
    check(shlo.compile(path, isolate=False)(x, y), "main", 3)
    # Same signature, another body: the file's contents are in the key.
    path.write_text(PROGRAM.replace("stablehlo.tanh", "stablehlo.sine"))
    before = dict(disk_cache.stats)
    edited = shlo.compile(path, isolate=False)(x, y)
    assert delta(before) == {
        "inspection miss": 1,
        "inspection store": 1,
        "code miss": 1,
        "code store": 1,
    }
    (want,) = interpret(path.read_text(), "main", [x, y])
    np.testing.assert_allclose(edited, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(edited, np.tanh(x * y) + x)
    # The same text under another name: its locations differ, so does the key.
    copy = tmp_path / "copy.mlir"
    copy.write_text(path.read_text())
    before = dict(disk_cache.stats)
    np.testing.assert_array_equal(shlo.compile(copy, isolate=False)(x, y), edited)
    assert delta(before, "inspection") == {"miss": 1, "store": 1}


def corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flipped byte":
        flipped = bytearray(data)
        flipped[-10] ^= 0x40
        path.write_bytes(bytes(flipped))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how == "other format":
        header = disk_cache._HEADER
        fields = list(header.unpack_from(data))
        fields[1] += 1
        path.write_bytes(header.pack(*fields) + data[header.size :])
    elif how == "other key":
        other = next(p for p in entries(path.parent) if p != path)
        path.write_bytes(other.read_bytes())
    elif how == "wrong types":
        # Whole and checksummed, but its types do not fit the signature.
        types, code = decode(path)
        types["inputs"] = ["tensor<7x4xf32>", "tensor<7x4xf32>"]
        path.write_bytes(disk_cache._encode(bytes.fromhex(path.stem), types, code))


BAD = ["truncated", "flipped byte", "empty", "garbage", "other format", "other key"]


@pytest.mark.parametrize(
    ("kind", "how"),
    [("code", how) for how in [*BAD, "wrong types"]] + [("inspection", how) for how in BAD],
)
def test_a_bad_entry_is_recompiled_and_replaced(cache: Path, kind: str, how: str) -> None:
    run_compiled(entry="other")
    others = entries(cache, kind)
    check(run_compiled(), "main", 3)
    (path,) = set(entries(cache, kind)) - set(others)
    good = path.read_bytes()
    corrupt(path, how)
    before = dict(disk_cache.stats)
    check(run_compiled(), "main", 3)
    assert delta(before, kind) == {"miss": 1, "corrupt": 1, "store": 1}
    assert path.read_bytes() == good
    before = dict(disk_cache.stats)
    check(run_compiled(), "main", 3)
    assert delta(before) == {"inspection hit": 1, "code hit": 1}


def test_concurrent_processes_share_the_directory(cache: Path) -> None:
    env = {**os.environ, "SHLO_CACHE_DIR": str(cache)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, PROGRAM, "in-process"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    reports = []
    for child in children:
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr
        reports.append(json.loads(stdout))
    for report in reports:
        check_child(report)
        assert sum(report["stats"].values()) >= 2
    # An inspection and two specializations per toolchain (shlo's sources may
    # change meanwhile).
    toolchains = {report["toolchain"] for report in reports}
    assert len(entries(cache, "code")) == 2 * len(toolchains)
    assert len(entries(cache, "inspection")) == len(toolchains)
    assert not list(cache.glob(".tmp-*"))
    before = dict(disk_cache.stats)
    for path in entries(cache):
        assert disk_cache.load("test", bytes.fromhex(path.stem), lambda *entry: entry)
    assert delta(before) == {"test hit": len(entries(cache))}


def test_concurrent_writers_never_expose_half_an_entry(cache: Path) -> None:
    key = bytes(range(32))
    # Entries of very different sizes, so a torn write would show.
    written = [({"n": n}, bytes([n]) * (n * 50_000)) for n in range(1, 5)]
    seen = []
    failures = []

    def write(entry: tuple[dict, bytes]) -> None:
        for _ in range(20):
            disk_cache.store("test", key, *entry)

    def read() -> None:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            # Looked at first: a writer may put the entry in place right after a miss.
            existed = (cache / (key.hex() + ".shlo")).exists()
            entry = disk_cache.load("test", key, lambda *entry: entry)
            if entry is not None:
                seen.append(entry)
            elif existed:
                failures.append("an existing entry did not load")

    before = dict(disk_cache.stats)
    threads = [threading.Thread(target=write, args=(e,)) for e in written]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert "corrupt" not in delta(before)
    assert seen and all(entry in written for entry in seen)
    assert disk_cache.load("test", key, lambda *entry: entry) in written
    assert not list(cache.glob(".tmp-*"))


@pytest.mark.filterwarnings("error")
def test_an_unusable_directory_warns_once_and_compiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    monkeypatch.setenv("SHLO_CACHE_DIR", str(not_a_directory / "cache"))
    with pytest.warns(
        RuntimeWarning,
        match=r"cannot write the compile cache SHLO_CACHE_DIR=.*compiling without it",
    ):
        check(run_compiled(), "main", 3)
    # Once per directory: the second store fails silently.
    check(run_compiled(rows=4), "main", 4)


@pytest.mark.parametrize("value", ["0", "1GB"])
def test_a_bad_size_limit_is_one_clear_error(
    cache: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("SHLO_CACHE_MAX_BYTES", value)
    with pytest.raises(
        shlo.ShloError, match=rf"^SHLO_CACHE_MAX_BYTES='{value}': expected a (positive )?number"
    ):
        run_compiled()
    assert not cache.exists()


def test_least_recently_used_entries_are_evicted(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_compiled(rows=1)
    (inspection,) = entries(cache, "inspection")
    (first,) = entries(cache, "code")
    run_compiled(rows=2)
    (second,) = set(entries(cache, "code")) - {first}
    now = time.time()
    os.utime(first, (now - 100, now - 100))
    os.utime(second, (now - 50, now - 50))
    # The inspection and two code entries fit, three code entries do not.
    largest = max(first.stat().st_size, second.stat().st_size)
    limit = inspection.stat().st_size + 2 * largest + 100
    monkeypatch.setenv("SHLO_CACHE_MAX_BYTES", str(limit))
    before = dict(disk_cache.stats)
    check(run_compiled(rows=1), "main", 1)  # a hit makes the first the most recent
    assert delta(before) == {"inspection hit": 1, "code hit": 1}
    check(run_compiled(rows=3), "main", 3)
    remaining = entries(cache)
    assert len(remaining) == 3
    assert first in remaining and inspection in remaining and second not in remaining
    assert sum(p.stat().st_size for p in remaining) <= limit


def test_threads_default_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHLO_CACHE_DIR", raising=False)
    monkeypatch.delenv("SHLO_THREADS", raising=False)

    def threads_of(**options) -> int | None:
        return shlo.compile(PROGRAM, isolate=False, **options).options.threads

    assert default_threads() == len(os.sched_getaffinity(0))
    assert threads_of() == default_threads()
    assert threads_of(threads=3) == 3
    assert threads_of(pipeline=CpuPipeline(threads=5)) == 5
    assert threads_of(pipeline=CpuPipeline(threads=5), threads=2) == 2
    monkeypatch.setenv("SHLO_THREADS", "7")
    assert threads_of() == 7
    assert threads_of(threads=1) == 1
    assert threads_of(pipeline=CpuPipeline(threads=5)) == 5
    # The count changes nothing in the results (for now, at least).
    check(shlo.compile(PROGRAM, isolate=False, threads=1)(*inputs(3)), "main", 3)


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, "4"])
def test_threads_must_be_a_positive_integer(threads: object) -> None:
    with pytest.raises(ValueError, match=rf"^threads must be a positive integer, got {threads!r}$"):
        shlo.compile(PROGRAM, isolate=False, threads=threads)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^pipeline\.threads must be a positive integer"):
        shlo.compile(PROGRAM, isolate=False, pipeline=CpuPipeline(threads=threads))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0", "many", "2.5"])
def test_a_bad_shlo_threads_is_one_clear_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHLO_THREADS", value)
    with pytest.raises(
        shlo.ShloError, match=rf"^SHLO_THREADS='{value}': expected a (positive )?number of threads$"
    ):
        shlo.compile(PROGRAM, isolate=False)


def shlo_run(program: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    x, y = inputs(2)
    values = [",".join(map(repr, a.ravel().tolist())) for a in (x, y)]
    return subprocess.run(
        [
            SHLO_RUN,
            str(program),
            f"--input=2x4xf32={values[0]}",
            f"--input=2x4xf32={values[1]}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )


def test_shlo_run_threads_and_cache(tmp_path: Path) -> None:
    program = tmp_path / "program.mlir"
    program.write_text(PROGRAM)
    # As in test_a_new_process_needs_no_worker: start over when shlo's sources
    # change between the processes.
    for attempt in range(3):
        toolchain = disk_cache.toolchain_fingerprint.__wrapped__()
        cache = tmp_path / f"cache{attempt}"
        first = shlo_run(program, "--threads=2", SHLO_CACHE_DIR=str(cache))
        assert first.returncode == 0, first.stderr
        (code,) = entries(cache, "code")
        # Another thread count is another entry.
        assert shlo_run(program, "--threads=1", SHLO_CACHE_DIR=str(cache)).returncode == 0
        threads_1 = entries(cache, "code")
        # The same count is a hit: it touches the file; a store would replace it (a new inode).
        os.utime(code, (1, 1))
        inode = code.stat().st_ino
        again = shlo_run(program, "--threads=2", SHLO_CACHE_DIR=str(cache))
        if disk_cache.toolchain_fingerprint.__wrapped__() == toolchain:
            break
    else:
        pytest.fail("shlo's sources changed during every attempt")
    printed = first.stdout.strip().removeprefix("result[0]: 2x4xf32=")
    rows = [row.split() for row in printed.strip("[]").split("][")]
    check(np.array(rows, np.float32), "main", 2)
    assert len(threads_1) == 2
    assert again.stdout == first.stdout
    assert code.stat().st_ino == inode and code.stat().st_mtime > 1


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--threads=0"], {}, "shlo-run: error: threads must be a positive integer, got 0"),
        (["--threads=-1"], {}, "shlo-run: error: threads must be a positive integer, got -1"),
        (
            [],
            {"SHLO_THREADS": "x"},
            "shlo-run: error: SHLO_THREADS='x': expected a number of threads",
        ),
    ],
)
def test_shlo_run_bad_threads(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    program = tmp_path / "program.mlir"
    program.write_text(PROGRAM)
    result = shlo_run(program, *args, **env)
    assert result.returncode == 1
    assert result.stderr.strip() == message
