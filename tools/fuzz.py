"""shlo's fuzzer: malformed programs through shlo-opt, shlo-run and shlo.compile.

  python -m shlo.tools.fuzz --cases 500 --seed 0 --out fuzz-out [--timeout 30] [--all-targets]

Valid seed programs (test/fuzz_seeds, docs/examples, the chunks of test/passes,
plus MLIR bytecode and portable artifacts made from them) are mutated into
malformed ones: truncations, byte flips, deleted or duplicated lines, swapped
element types and dimensions, huge and negative dimensions, deep nesting,
invalid UTF-8, bit-flipped bytecode and bad versions. Each case runs through
one shlo-opt invocation and one of shlo-run (CPU or interpreter) and
shlo.compile (+ a call with zeros), in-process in one long-lived child "host"
that this process supervises, with a time limit per run.

Every run is classified as ``ok``, ``clean_error`` (exit 1 or 2, or for
shlo.compile ShloError / ValueError), ``slow_program`` (a compiled program
still running at the time limit: a mutated loop) or one of the bad classes: ``host_death`` (the host
died: signal, abort), ``traceback`` (a "Traceback" or "internal error" in the
output, exit status 3, or an unexpected exception), ``hang`` (past the time
limit) and ``unlocated`` (a text input got an error without ``file:line:col``).
A bad run listed in test/fuzz_expected_failures.txt (an upstream bug) is
``expected`` instead. The host runs with SHLO_COMPILE_TIMEOUT below the time
limit, so a worker request that reaches the tools' own limit is a clean error.
Bad runs are saved under ``--out`` with the input, the command and the output;
the exit status is 1 when there was any. See docs/fuzzing.md.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import io
import json
import math
import os
import random
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SEED_DIRS = (
    ROOT / "test" / "fuzz_seeds",
    ROOT / "docs" / "examples",
    ROOT / "test" / "passes",
)

CLASSES = (
    "ok",
    "clean_error",
    "slow_program",
    "expected",
    "host_death",
    "traceback",
    "hang",
    "unlocated",
)
BAD_CLASSES = ("host_death", "traceback", "hang", "unlocated")

# Known failures outside shlo (upstream MLIR bugs): see load_expected_failures.
EXPECTED_FAILURES = ROOT / "test" / "fuzz_expected_failures.txt"
# The tools' own time limit per worker request (SHLO_COMPILE_TIMEOUT) is this
# share of the fuzzer's limit per run: a run may make two or three requests,
# and a request that reaches it is a clean error ("timed out"), not a hang.
WORKER_TIMEOUT_SHARE = 1 / 3

# The host's address space is capped so that a program asking for a huge
# buffer fails (and is reported) instead of exhausting the shared machine.
HOST_MEMORY_LIMIT = 8 << 30
# shlo.compile is called with zeros only when every argument is this small.
MAX_CALL_ELEMENTS = 1 << 22
# shlo.compile's target creates this file in the host's directory once the
# program is compiled: a time-out after that is the program's own loop.
CALLING_MARKER = "calling"
# What a saved or reported output keeps: its start and its end.
OUTPUT_KEEP = 16_000

# The host always names the case input.mlir (text) or input.mlirbc; a located
# error points into that file.
_LOCATION = re.compile(r"input\.mlir:\d+:\d+")
# Errors about the command line rather than the program need no location.
_ABOUT_ARGUMENTS = re.compile(
    r"version|argument \d+ of @\S+: expected|takes \d+ argument|--input|--output"
    r"|no function @\S+ in the module"  # the entry named by --entry / entry=
)
_FAILURE_TEXT = re.compile(r"Traceback \(most recent call last\)|internal error")


# ---------------------------------------------------------------- seeds


@dataclass(frozen=True)
class Seed:
    name: str
    text: bytes
    entry: str
    # Concrete (shape, element type) per argument of the entry, dynamic sizes
    # set to 2; None when shlo-run cannot spell an input for one of them.
    arg_types: tuple[tuple[tuple[int, ...], str], ...] | None
    bytecode: bytes
    artifact: bytes | None


_RUNNABLE_ELEMENT = re.compile(
    r"^(i1|i8|i16|i32|i64|ui8|ui16|ui32|ui64|f16|bf16|f32|f64|complex<f32>|complex<f64>)$"
)
_OTHER_DIALECTS = re.compile(
    r"\b(linalg|arith|scf|memref|llvm|tensor|math|affine|bufferization|shlo|index|cf)\.\w"
)


def seed_chunks(directories: tuple[Path, ...]) -> list[tuple[str, str]]:
    """(name, text) of every chunk of every .mlir file, without comment lines."""
    chunks = []
    for directory in directories:
        for path in sorted(directory.glob("*.mlir")):
            for index, chunk in enumerate(path.read_text().split("// -----")):
                if "expected-error" in chunk or "func.func" not in chunk:
                    continue
                lines = [line for line in chunk.splitlines() if not line.strip().startswith("//")]
                chunks.append((f"{path.name}#{index}", "\n".join(lines).strip() + "\n"))
    return chunks


def load_seeds(directories: tuple[Path, ...]) -> list[Seed]:
    """The chunks that parse, with their entry, its argument types, bytecode and artifact."""
    from shlo._mlir_compat import current_version, ir, new_context
    from shlo.diagnostics import ShloError
    from shlo.io import module_to_bytecode, module_to_portable_artifact

    seeds = []
    for name, text in seed_chunks(directories):
        context = new_context()
        try:
            module = ir.Module.parse(text, context)
        except ir.MLIRError:
            continue
        functions = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                try:
                    symbol = ir.StringAttr(op.attributes["sym_name"]).value
                except RuntimeError:  # not valid UTF-8 (@"a\FF"): cannot be an --entry
                    continue
                functions[symbol] = ir.FunctionType(
                    ir.TypeAttr(op.attributes["function_type"]).value
                )
        if not functions:
            continue
        entry = "main" if "main" in functions else next(iter(functions))
        arg_types: list[tuple[tuple[int, ...], str]] | None = []
        for type_ in functions[entry].inputs:
            if not isinstance(type_, ir.RankedTensorType) or not _RUNNABLE_ELEMENT.match(
                str(type_.element_type)
            ):
                arg_types = None
                break
            tensor = type_
            element = str(tensor.element_type)
            shape = tuple(
                2 if tensor.is_dynamic_dim(d) else tensor.shape[d] for d in range(tensor.rank)
            )
            arg_types.append((shape, element))
        artifact = None
        if not _OTHER_DIALECTS.search(text):
            # Some seeds cannot be serialized; MLIR prints why on stderr.
            with captured_output(), contextlib.suppress(ShloError):
                artifact = module_to_portable_artifact(module, current_version())
        seeds.append(
            Seed(
                name,
                text.encode(),
                entry,
                tuple(arg_types) if arg_types is not None else None,
                module_to_bytecode(module),
                artifact,
            )
        )
    return seeds


# ---------------------------------------------------------------- mutations

Mutation = Callable[[Seed, random.Random], "Mutant | None"]


@dataclass(frozen=True)
class Mutant:
    data: bytes
    is_text: bool
    # Replaces the default --target-version of the portable-artifact target.
    target_version: str | None = None


_ELEMENT_TYPES = [
    b"f16",
    b"bf16",
    b"f32",
    b"f64",
    b"i1",
    b"i8",
    b"i32",
    b"i64",
    b"ui8",
    b"ui32",
    b"complex<f32>",
    b"index",
    b"f8E4M3FN",
    b"i4",
]
# An element type after "<", "x" (as in 4x3xf32), a space, "(" or ",".
_ELEMENT_TYPE = re.compile(
    rb"(?<=[<x\s(,])(?:bf16|f16|f32|f64|i1|i8|i16|i32|i64|ui8|ui32|ui64)(?!\w)"
)
# A dimension size inside a shaped type: "4" in tensor<4x3xf32> and "3".
_DIMENSION = re.compile(rb"(?<=[<x])(\d+)(?=x)")
_HUGE_DIMENSIONS = [
    b"99999999999",
    b"4294967296",
    b"4294967297",
    b"9223372036854775807",
    b"18446744073709551616",
    b"65536x65537",
]
# An integer literal that is not part of a type, an SSA name or a float.
_INTEGER = re.compile(rb"(?<![\w.%#])-?\d+(?![\w.])")
_DENSE_VALUE = re.compile(rb"(?<=dense<)[^>]*(?=>)")
_EXTREME_INTEGERS = [
    b"-1",
    b"2147483648",
    b"-2147483648",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"99999999999999999999",
    b"4294967296",
]
_BINARY_OPS = [
    b"add",
    b"subtract",
    b"multiply",
    b"divide",
    b"remainder",
    b"maximum",
    b"minimum",
    b"power",
    b"atan2",
    b"and",
    b"or",
    b"xor",
    b"shift_left",
    b"shift_right_arithmetic",
    b"shift_right_logical",
]
_UNARY_OPS = [
    b"negate",
    b"abs",
    b"exponential",
    b"log",
    b"sqrt",
    b"rsqrt",
    b"tanh",
    b"floor",
    b"ceil",
    b"sign",
    b"not",
    b"popcnt",
    b"count_leading_zeros",
    b"log_plus_one",
    b"exponential_minus_one",
    b"cbrt",
    b"round_nearest_even",
    b"is_finite",
]
_ELEMENTWISE_OP = re.compile(rb"stablehlo\.(" + b"|".join(_BINARY_OPS + _UNARY_OPS) + rb")(?=[ (])")
_INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe2\x82"]
_BAD_VERSIONS = [
    "99999999999999999999.0.0",
    "99.0.0",
    "1.2",
    "-1.0.0",
    "0.0.0",
    "1.0.0.0",
    "abc",
    "",
    "1.99999999999.0",
    "0.8.0",
    "1.0.-1",
]


def _replace_random(
    data: bytes, pattern: re.Pattern[bytes], rng: random.Random, new: bytes
) -> bytes | None:
    matches = list(pattern.finditer(data))
    if not matches:
        return None
    match = rng.choice(matches)
    return data[: match.start()] + new + data[match.end() :]


def _lines(seed: Seed) -> list[bytes]:
    return seed.text.splitlines(keepends=True)


def truncate(seed: Seed, rng: random.Random) -> Mutant:
    return Mutant(seed.text[: rng.randrange(len(seed.text))], True)


def flip_bits(data: bytes, rng: random.Random, start: int = 0) -> bytes:
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        flipped[rng.randrange(start, len(flipped))] ^= 1 << rng.randrange(8)
    return bytes(flipped)


def byte_flip(seed: Seed, rng: random.Random) -> Mutant:
    return Mutant(flip_bits(seed.text, rng), True)


def delete_line(seed: Seed, rng: random.Random) -> Mutant:
    lines = _lines(seed)
    del lines[rng.randrange(len(lines))]
    return Mutant(b"".join(lines), True)


def duplicate_line(seed: Seed, rng: random.Random) -> Mutant:
    lines = _lines(seed)
    index = rng.randrange(len(lines))
    lines.insert(index, lines[index])
    return Mutant(b"".join(lines), True)


def swap_element_type(seed: Seed, rng: random.Random) -> Mutant | None:
    matches = list(_ELEMENT_TYPE.finditer(seed.text))
    if not matches:
        return None
    match = rng.choice(matches)
    new = rng.choice([t for t in _ELEMENT_TYPES if t != match.group(0)])
    return Mutant(seed.text[: match.start()] + new + seed.text[match.end() :], True)


def change_dimension(seed: Seed, rng: random.Random) -> Mutant | None:
    matches = list(_DIMENSION.finditer(seed.text))
    if not matches:
        return None
    match = rng.choice(matches)
    size = int(match.group(1))
    new = rng.choice(sorted({size + 1, max(size - 1, 0), 0, 1, size * 2} - {size}))
    data = seed.text[: match.start()] + str(new).encode() + seed.text[match.end() :]
    return Mutant(data, True)


def huge_dimension(seed: Seed, rng: random.Random) -> Mutant | None:
    data = _replace_random(seed.text, _DIMENSION, rng, rng.choice(_HUGE_DIMENSIONS))
    return Mutant(data, True) if data is not None else None


def negative_dimension(seed: Seed, rng: random.Random) -> Mutant | None:
    data = _replace_random(
        seed.text, _DIMENSION, rng, rng.choice([b"-1", b"-2", b"-9223372036854775808"])
    )
    return Mutant(data, True) if data is not None else None


def extreme_integer(seed: Seed, rng: random.Random) -> Mutant | None:
    """An integer literal outside types (dim = 0, dims = [1], dense<10>, [0:2]) made extreme."""
    data = _replace_random(seed.text, _INTEGER, rng, rng.choice(_EXTREME_INTEGERS))
    return Mutant(data, True) if data is not None else None


def extreme_constant(seed: Seed, rng: random.Random) -> Mutant | None:
    """A dense constant becomes 0 (divisions), an extreme integer or a special float."""
    value = rng.choice(
        [b"0", b"-1", b"0x7FC00000", b"0xFFFFFFFF", b"1.0e+39", b"-0.0", *_EXTREME_INTEGERS]
    )
    data = _replace_random(seed.text, _DENSE_VALUE, rng, value)
    return Mutant(data, True) if data is not None else None


def swap_op(seed: Seed, rng: random.Random) -> Mutant | None:
    """An elementwise op becomes another of the same arity (divide, remainder, power, ...)."""
    matches = list(_ELEMENTWISE_OP.finditer(seed.text))
    if not matches:
        return None
    match = rng.choice(matches)
    family = _BINARY_OPS if match.group(1) in _BINARY_OPS else _UNARY_OPS
    new = rng.choice([op for op in family if op != match.group(1)])
    return Mutant(seed.text[: match.start(1)] + new + seed.text[match.end(1) :], True)


def havoc(seed: Seed, rng: random.Random) -> Mutant:
    """Two to four small text mutations in a row."""
    text = seed.text
    for _ in range(rng.randint(2, 4)):
        mutant = MUTATIONS[rng.choice(_HAVOC)](replace(seed, text=text), rng)
        if mutant is not None and mutant.data:
            text = mutant.data
    return Mutant(text, True)


def deep_modules(seed: Seed, rng: random.Random) -> Mutant:
    depth = 6000
    closing = b"}\n" * depth if rng.random() < 0.8 else b""
    return Mutant(b"module {\n" * depth + seed.text + closing, True)


def deep_nesting(seed: Seed, rng: random.Random) -> Mutant | None:
    """100,000 nested parens, brackets or tuple types in a type or attribute position."""
    depth = 100_000
    opening, closing = rng.choice([(b"(", b")"), (b"[", b"]"), (b"tuple<", b">"), (b"{a = ", b"}")])
    spots = rb"tensor<[^>]*>|dense<[^>]*>|dims = \[[^\]]*\]|\(%"
    matches = list(re.finditer(spots, seed.text))
    if not matches:
        return None
    match = rng.choice(matches)
    nested = opening * depth + match.group(0) + closing * depth
    return Mutant(seed.text[: match.start()] + nested + seed.text[match.end() :], True)


def invalid_utf8(seed: Seed, rng: random.Random) -> Mutant | None:
    """Invalid UTF-8 inside a symbol, an SSA name, a quoted string or a quoted symbol."""
    bad = rng.choice(_INVALID_UTF8)
    spots = [m.end() for m in re.finditer(rb'[@%]\w|"\w', seed.text)]
    if rng.random() < 0.3 and b"@main" in seed.text:
        return Mutant(seed.text.replace(b"@main", b'@"ma' + bad + b'in"', 1), True)
    if not spots:
        return None
    spot = rng.choice(spots) - 1
    return Mutant(seed.text[:spot] + bad + seed.text[spot:], True)


def bad_target_version(seed: Seed, rng: random.Random) -> Mutant:
    return Mutant(seed.text, True, target_version=rng.choice(_BAD_VERSIONS))


def bytecode_flip(seed: Seed, rng: random.Random) -> Mutant:
    # The magic stays, so the input is still read as bytecode.
    return Mutant(flip_bits(seed.bytecode, rng, start=4), False)


def bytecode_truncate(seed: Seed, rng: random.Random) -> Mutant:
    return Mutant(seed.bytecode[: rng.randrange(4, len(seed.bytecode))], False)


def artifact_flip(seed: Seed, rng: random.Random) -> Mutant | None:
    if seed.artifact is None:
        return None
    return Mutant(flip_bits(seed.artifact, rng, start=4), False)


def artifact_truncate(seed: Seed, rng: random.Random) -> Mutant | None:
    if seed.artifact is None:
        return None
    return Mutant(seed.artifact[: rng.randrange(4, len(seed.artifact))], False)


def artifact_producer_version(seed: Seed, rng: random.Random) -> Mutant | None:
    if seed.artifact is None:
        return None
    producer = rng.choice(
        [b"StableHLO_v99.0.0", b"StableHLO_v99999999999999999999.0.0", b"StableHLO_v"]
    )
    data = re.sub(rb"StableHLO_v[0-9.]+", producer, seed.artifact, count=1)
    return Mutant(data, False)


MUTATIONS: dict[str, Mutation] = {
    "truncate": truncate,
    "byte_flip": byte_flip,
    "delete_line": delete_line,
    "duplicate_line": duplicate_line,
    "swap_element_type": swap_element_type,
    "change_dimension": change_dimension,
    "huge_dimension": huge_dimension,
    "negative_dimension": negative_dimension,
    "extreme_integer": extreme_integer,
    "extreme_constant": extreme_constant,
    "swap_op": swap_op,
    "havoc": havoc,
    "deep_modules": deep_modules,
    "deep_nesting": deep_nesting,
    "invalid_utf8": invalid_utf8,
    "bad_target_version": bad_target_version,
    "bytecode_flip": bytecode_flip,
    "bytecode_truncate": bytecode_truncate,
    "artifact_flip": artifact_flip,
    "artifact_truncate": artifact_truncate,
    "artifact_producer_version": artifact_producer_version,
}

# The mutations havoc chains: small text edits.
_HAVOC = (
    "truncate",
    "byte_flip",
    "delete_line",
    "duplicate_line",
    "swap_element_type",
    "change_dimension",
    "huge_dimension",
    "negative_dimension",
    "extreme_integer",
    "extreme_constant",
    "invalid_utf8",
    "swap_op",
)

# ---------------------------------------------------------------- targets
#
# A target is a tool and its arguments; {input} and {output} become paths in
# the host. "compile" calls shlo.compile and then the executable with zeros.

OPT_TARGETS = ("opt-canonicalize", "opt-remove-dynamism", "opt-portable-artifact")
EXEC_TARGETS = ("run-cpu", "run-interpreter", "compile")


def input_flags(seed: Seed) -> list[str]:
    assert seed.arg_types is not None
    return [
        f"--input={''.join(f'{d}x' for d in shape)}{element}=0" for shape, element in seed.arg_types
    ]


def target_argv(target: str, seed: Seed, mutant: Mutant, version: str) -> list[str] | None:
    """The tool's arguments, or None when the target cannot run this seed."""
    if target == "opt-canonicalize":
        return ["{input}", "--pass-pipeline=builtin.module(canonicalize)", "-o", "{output}"]
    if target == "opt-remove-dynamism":
        types = ",".join(
            f"tensor<{''.join(f'{d}x' for d in shape)}{element}>"
            for shape, element in seed.arg_types or ()
        )
        option = f"--shlo-remove-dynamism=types={types}" if types else "--shlo-remove-dynamism"
        return ["{input}", option, "-o", "{output}"]
    if target == "opt-portable-artifact":
        chosen = mutant.target_version if mutant.target_version is not None else version
        return [
            "{input}",
            "--emit-portable-artifact",
            f"--target-version={chosen}",
            "-o",
            "{output}",
        ]
    if target in ("run-cpu", "run-interpreter"):
        # A mutated loop may never end, and shlo-run's time cannot be split
        # between compiling and running: loops run only through "compile".
        if seed.arg_types is None or b"stablehlo.while" in seed.text:
            return None
        backend = "cpu" if target == "run-cpu" else "interpreter"
        return ["{input}", f"--target={backend}", f"--entry={seed.entry}", *input_flags(seed)]
    if target == "compile":
        return [f"--entry={seed.entry}"]
    raise ValueError(f"unknown target {target}")


def command_line(target: str, argv: list[str], input_path: str) -> str:
    """A shell command that reproduces the run."""
    args = [a.replace("{input}", input_path).replace("{output}", "/dev/null") for a in argv]
    python = _quote(sys.executable)
    if target.startswith("opt-"):
        return f"{python} -m shlo.tools.shlo_opt " + " ".join(_quote(a) for a in args)
    if target.startswith("run-"):
        return f"{python} -m shlo.tools.shlo_run " + " ".join(_quote(a) for a in args)
    entry = argv[0].removeprefix("--entry=")
    return (
        f"{python} -c 'import numpy as np, shlo; from shlo.dtypes import numpy_dtype; "
        f'e = shlo.compile("{input_path}", entry="{entry}"); '
        "e(*[np.zeros([2 if d is None else d for d in s], numpy_dtype(t)) for s, t in e.params])'"
    )


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w./=@,:+-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------- the host


def _run_cli(main: Callable[[], None], prog: str, argv: list[str]) -> int:
    """The command-line tool's exit status, under its own exit policy (run_and_exit)."""
    saved = sys.argv
    sys.argv = [prog, *argv]
    try:
        main()
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.argv = saved
    return 0


def _run_opt(argv: list[str]) -> int:
    from shlo.tools import shlo_opt

    return _run_cli(shlo_opt.main, "shlo-opt", argv)


def _run_run(argv: list[str]) -> int:
    from shlo.tools import shlo_run

    return _run_cli(shlo_run.main, "shlo-run", argv)


def _run_compile(argv: list[str]) -> int:
    import numpy as np
    import shlo
    from shlo.dtypes import numpy_dtype

    executable = shlo.compile(argv[1], entry=argv[0].removeprefix("--entry="))
    shapes = [tuple(2 if d is None else d for d in shape) for shape, _ in executable.params]
    if all(math.prod(shape) <= MAX_CALL_ELEMENTS for shape in shapes):
        Path(argv[1]).with_name(CALLING_MARKER).touch()
        executable(*[np.zeros(s, numpy_dtype(t)) for s, (_, t) in zip(shapes, executable.params)])
    return 0


def _expected_errors(target: str) -> tuple[type[BaseException], ...]:
    """The exceptions that are a clean error: the CLIs handle theirs in run_and_exit."""
    from shlo.diagnostics import ShloError

    return (ValueError, ShloError) if target == "compile" else ()


# Targets that check the harness itself (tests use them): each must be classified.
HARNESS_CHECKS: dict[str, Callable[[list[str]], int]] = {
    "check-abort": lambda argv: os.abort(),  # type: ignore[dict-item]
    "check-sleep": lambda argv: time.sleep(3600) or 0,  # type: ignore[dict-item]
    "check-slow-program": lambda argv: (
        Path(argv[0]).with_name(CALLING_MARKER).touch() or time.sleep(3600) or 0
    ),
    "check-raise": lambda argv: {}["missing"],
    "check-unlocated": lambda argv: print("error: something is wrong") or 1,  # type: ignore[dict-item]
    "check-located": lambda argv: print(f"{argv[0]}:1:2: error: something is wrong") or 1,  # type: ignore[dict-item]
}


def tool_function(target: str) -> Callable[[list[str]], int]:
    if target in HARNESS_CHECKS:
        return HARNESS_CHECKS[target]
    if target.startswith("opt-"):
        return _run_opt
    if target.startswith("run-"):
        return _run_run
    return _run_compile


@contextlib.contextmanager
def captured_output() -> Iterator[Callable[[], str]]:
    """Send Python's and C++'s stdout and stderr to one file; yields its reader."""
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(1), os.dup(2)
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        # A text stream with a .buffer, as the tools write bytes to sys.stdout.buffer.
        stream = io.TextIOWrapper(
            open(sink.fileno(), "wb", closefd=False), errors="backslashreplace", write_through=True
        )
        try:
            with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
                yield lambda: _read_sink(sink, stream)
        finally:
            with contextlib.suppress(Exception):
                stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _read_sink(sink: Any, stream: io.TextIOWrapper) -> str:
    stream.flush()
    sink.seek(0)
    return shorten(sink.read().decode("utf-8", errors="backslashreplace"))


def shorten(text: str) -> str:
    if len(text) <= OUTPUT_KEEP:
        return text
    half = OUTPUT_KEEP // 2
    return f"{text[:half]}\n... ({len(text) - OUTPUT_KEEP} characters cut) ...\n{text[-half:]}"


def run_request(request: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Run one target on one input in this process; the reply's "class" says how it went."""
    target = request["target"]
    path = workdir / ("input.mlir" if request["is_text"] else "input.mlirbc")
    path.write_bytes(request["data"])
    (workdir / CALLING_MARKER).unlink(missing_ok=True)
    argv = [
        a.replace("{input}", str(path)).replace("{output}", str(workdir / "output"))
        for a in request["argv"]
    ]
    if target == "compile":
        argv.append(str(path))
    expected = _expected_errors(target)
    code: int | None = None
    message = ""
    start = time.perf_counter()
    with captured_output() as read_output:
        try:
            code = tool_function(target)(argv)
        except expected as error:
            code, message = 1, f"{type(error).__name__}: {error}"
        except Exception:
            message = traceback.format_exc()
        output = read_output()
    seconds = time.perf_counter() - start
    text = output + ("\n" if output and message else "") + message
    return {
        "class": classify(code, text, request["is_text"], target),
        "code": code,
        "output": text,
        "seconds": seconds,
    }


def classify(code: int | None, output: str, is_text: bool, target: str) -> str:
    """The class of a run that returned ``code`` (None: an unexpected exception)."""
    if code is None or code not in (0, 1, 2) or _FAILURE_TEXT.search(output):
        return "traceback"
    if code == 0:
        return "ok"
    if is_text and not _LOCATION.search(output) and not _ABOUT_ARGUMENTS.search(output):
        return "unlocated"
    return "clean_error"


def host_main(directory: Path) -> None:
    """The host: runs requests from stdin until it closes, one reply each, in ``directory``."""
    # The CLIs then let an internal error raise, and the fuzzer saves its traceback.
    os.environ["SHLO_DEBUG"] = "1"
    # Replies go to the original stdout; stray output of C++ or Python between
    # requests goes to stderr and cannot corrupt the reply stream.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # Import the tools before saying "ready", so imports do not count against a case.
    import shlo.tools.shlo_opt
    import shlo.tools.shlo_run  # noqa: F401
    from shlo.isolation import read_message, write_message

    write_message(replies, "ready")
    while True:
        try:
            request = read_message(sys.stdin.buffer)
        except EOFError:
            return
        write_message(replies, run_request(request, directory))


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (HOST_MEMORY_LIMIT, HOST_MEMORY_LIMIT))


class Host:
    """The supervised host process: restarted after a death or a hang."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr: Any = None
        self.starts = 0
        # Made here, not by the host, so that a killed host leaves nothing behind.
        self.directory = tempfile.mkdtemp(prefix="shlo-fuzz-host-")

    def start(self) -> None:
        from shlo.isolation import read_message

        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, sys.path))
        env["SHLO_COMPILE_TIMEOUT"] = f"{self.timeout * WORKER_TIMEOUT_SHARE:g}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "shlo.tools.fuzz", "--host", self.directory],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            # Its own process group, so a hang is ended with the host's shlo worker.
            start_new_session=True,
            preexec_fn=_limit_memory,
        )
        self.starts += 1
        assert self.process.stdout is not None
        try:
            ready = self._wait_readable(120) and read_message(self.process.stdout) == "ready"
        except EOFError:
            ready = False
        if not ready:
            self.stop()
            raise SystemExit(f"fuzz: error: the host did not start: {self.last_words()}")

    def _wait_readable(self, timeout: float) -> bool:
        assert self.process is not None and self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            return bool(selector.select(timeout))

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        from shlo.isolation import read_message, write_message

        if self.process is None or self.process.poll() is not None:
            self.start()
        assert self.process is not None and self.process.stdin is not None
        assert self.process.stdout is not None
        start = time.perf_counter()
        try:
            write_message(self.process.stdin, request)
            if not self._wait_readable(self.timeout):
                self.stop()
                running = (Path(self.directory) / CALLING_MARKER).exists()
                return {
                    "class": "slow_program" if running else "hang",
                    "code": None,
                    "output": f"no reply after {self.timeout} s"
                    + (", while running the compiled program" if running else ""),
                    "seconds": self.timeout,
                }
            return read_message(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError):
            returncode = self.process.wait()
            self.process = None
            how = (
                f"signal {signal.Signals(-returncode).name}"
                if returncode < 0
                else f"exit status {returncode}"
            )
            return {
                "class": "host_death",
                "code": returncode,
                "output": f"the host died ({how}): {self.last_words()}",
                "seconds": time.perf_counter() - start,
            }

    def last_words(self) -> str:
        self.stderr.seek(0)
        return shorten(self.stderr.read().decode(errors="backslashreplace").strip()[-4000:])

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None


# ---------------------------------------------------------------- expected failures


@dataclass(frozen=True)
class ExpectedFailure:
    """A known failure outside shlo: its signature (a glob) and a regex its input matches."""

    signature: str
    input_pattern: re.Pattern[str]
    reason: str

    def matches(self, failure_signature: str, data: bytes) -> bool:
        return fnmatch.fnmatchcase(failure_signature, self.signature) and bool(
            self.input_pattern.search(data.decode("utf-8", errors="replace"))
        )


def load_expected_failures(path: Path) -> list[ExpectedFailure]:
    """``signature glob | input regex | reason`` per line; ``#`` starts a comment line."""
    if not path.is_file():
        return []
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [part.strip() for part in line.split(" | ")]
        if len(fields) != 3 or not all(fields):
            raise SystemExit(
                f"{path}:{number}:1: error: expected 'signature glob | input regex | reason'"
            )
        try:
            pattern = re.compile(fields[1])
        except re.error as error:
            raise SystemExit(f"{path}:{number}:1: error: bad input regex: {error}") from None
        entries.append(ExpectedFailure(fields[0], pattern, fields[2]))
    return entries


# ---------------------------------------------------------------- the campaign


@dataclass
class Report:
    runs: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    by_mutation: dict[str, Counter[str]] = field(default_factory=dict)
    by_target: dict[str, Counter[str]] = field(default_factory=dict)
    # Each distinct failure, with the saved case of its smallest input.
    signatures: dict[str, str] = field(default_factory=dict)
    _input_sizes: dict[str, int] = field(default_factory=dict)
    target_seconds: dict[str, float] = field(default_factory=dict)
    slowest: list[tuple[float, str, str]] = field(default_factory=list)
    # Runs per expected failure (by its signature glob), zero when never seen.
    expected: dict[str, int] = field(default_factory=dict)
    host_starts: int = 0
    seconds: float = 0.0

    def add(self, mutation: str, target: str, kind: str, seconds: float) -> None:
        self.runs += 1
        self.target_seconds[target] = self.target_seconds.get(target, 0.0) + seconds
        self.slowest = sorted([*self.slowest, (round(seconds, 2), target, mutation)])[-5:]
        self.classes[kind] += 1
        self.by_mutation.setdefault(mutation, Counter())[kind] += 1
        self.by_target.setdefault(target, Counter())[kind] += 1

    def add_failure(self, signature: str, directory: str, input_size: int) -> None:
        if input_size < self._input_sizes.get(signature, input_size + 1):
            self.signatures[signature] = directory
            self._input_sizes[signature] = input_size

    @property
    def bad(self) -> int:
        return sum(self.classes[c] for c in BAD_CLASSES)

    def table(self, title: str, rows: dict[str, Counter[str]]) -> str:
        width = max([len(title), *map(len, rows)])
        lines = [f"{title:<{width}} " + " ".join(f"{c:>11}" for c in CLASSES)]
        for name in sorted(rows):
            lines.append(f"{name:<{width}} " + " ".join(f"{rows[name][c]:>11}" for c in CLASSES))
        return "\n".join(lines)

    def summary(self) -> str:
        return "\n\n".join(
            [
                f"{self.runs} runs in {self.seconds:.0f} s, "
                f"host started {self.host_starts} time(s)",
                self.table("class", {"total": self.classes}),
                self.table("mutation", self.by_mutation),
                self.table("target", self.by_target),
                "seconds per target: "
                + ", ".join(f"{t} {s:.0f}" for t, s in sorted(self.target_seconds.items()))
                + "\nslowest runs: "
                + ", ".join(f"{t} {m} {s} s" for s, t, m in reversed(self.slowest)),
                "expected failures (test/fuzz_expected_failures.txt), runs each:\n"
                + "\n".join(f"  {count:>4}  {glob}" for glob, count in self.expected.items())
                if self.expected
                else "expected failures: none listed",
                "distinct failures:\n"
                + "\n".join(f"  {s}\n    -> {d}" for s, d in self.signatures.items())
                if self.signatures
                else "distinct failures: none",
            ]
        )


def signature(kind: str, target: str, output: str) -> str:
    """A failure's identity: class, target and its first telling line, numbers and paths blurred."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    telling = [line for line in lines if re.search(r"error|Error|died|no reply|Traceback", line)]
    line = (telling[-1] if kind == "traceback" and telling else (telling or lines or [""])[0])[:160]
    line = re.sub(r"/\S*/(input|output)\S*", "<file>", line)
    line = re.sub(r"@[\w.$-]+", "@F", line)
    line = re.sub(r"\d+", "N", line)
    return f"{kind} {target}: {line}"


def save_case(
    out: Path, index: int, reply: dict[str, Any], request: dict[str, Any], mutation: str, seed: Seed
) -> Path:
    directory = out / reply["class"] / f"{index:05d}-{request['target']}-{mutation}"
    directory.mkdir(parents=True, exist_ok=True)
    input_path = directory / ("input.mlir" if request["is_text"] else "input.mlirbc")
    input_path.write_bytes(request["data"])
    (directory / "command.sh").write_text(
        command_line(request["target"], request["argv"], str(input_path)) + "\n"
    )
    (directory / "output.txt").write_text(
        f"seed: {seed.name}\nmutation: {mutation}\ntarget: {request['target']}\n"
        f"exit code: {reply['code']}\nseconds: {reply['seconds']:.2f}\n\n{reply['output']}\n"
    )
    return directory


def fuzz(
    cases: int,
    seed: int,
    out: Path,
    timeout: float,
    all_targets: bool,
    seed_dirs: tuple[Path, ...],
    expected: list[ExpectedFailure] | None = None,
) -> Report:
    from shlo._mlir_compat import current_version

    seeds = load_seeds(seed_dirs)
    if not seeds:
        raise SystemExit("fuzz: error: no seed program parsed")
    version = current_version()
    rng = random.Random(seed)
    report = Report(expected={entry.signature: 0 for entry in expected or ()})
    host = Host(timeout)
    start = time.perf_counter()
    try:
        for index in range(cases):
            mutation = rng.choice(sorted(MUTATIONS))
            chosen = rng.choice(seeds)
            mutant = MUTATIONS[mutation](chosen, rng)
            while mutant is None:  # the mutation needs something this seed lacks
                chosen = rng.choice(seeds)
                mutant = MUTATIONS[mutation](chosen, rng)
            runnable = {
                t: target_argv(t, chosen, mutant, version) for t in OPT_TARGETS + EXEC_TARGETS
            }
            if mutant.target_version is not None:
                targets = ["opt-portable-artifact"]
            elif all_targets:
                targets = [t for t, argv in runnable.items() if argv is not None]
            else:
                executing = [t for t in EXEC_TARGETS if runnable[t] is not None]
                targets = [rng.choice(OPT_TARGETS), rng.choice(executing)]
            for target in targets:
                argv = runnable[target]
                assert argv is not None
                request = {
                    "target": target,
                    "argv": argv,
                    "data": mutant.data,
                    "is_text": mutant.is_text,
                }
                reply = host.run(request)
                if reply["class"] in BAD_CLASSES:
                    failure = signature(reply["class"], target, reply["output"])
                    known = next(
                        (e for e in expected or () if e.matches(failure, mutant.data)), None
                    )
                    if known is not None:
                        report.expected[known.signature] += 1
                        reply = {**reply, "class": "expected"}
                report.add(mutation, target, reply["class"], reply["seconds"])
                if reply["class"] in ("slow_program", "expected"):  # for review, not failures
                    save_case(out, index, reply, request, mutation, chosen)
                if reply["class"] in BAD_CLASSES:
                    directory = save_case(out, index, reply, request, mutation, chosen)
                    report.add_failure(
                        signature(reply["class"], target, reply["output"]),
                        str(directory),
                        len(mutant.data),
                    )
    finally:
        host.close()
        report.host_starts = host.starts
        report.seconds = time.perf_counter() - start
    return report


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m shlo.tools.fuzz",
        description="Feed malformed StableHLO programs to shlo-opt, shlo-run and shlo.compile.",
    )
    parser.add_argument("--cases", type=int, default=500, help="number of cases (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--out", default="fuzz-out", help="directory for bad cases and summary.json"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per run (default 30)")
    parser.add_argument(
        "--all-targets",
        action="store_true",
        help="run every target on each case, not one shlo-opt run and one other",
    )
    parser.add_argument(
        "--seeds",
        action="append",
        type=Path,
        help="directory of seed .mlir files (repeatable; default: the repository's)",
    )
    parser.add_argument(
        "--expected-failures",
        type=Path,
        default=EXPECTED_FAILURES,
        help="known upstream failures, reported as 'expected' (default: %(default)s)",
    )
    parser.add_argument("--host", metavar="DIR", type=Path, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.host:
        host_main(args.host)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seed_dirs = (
        tuple(args.seeds) if args.seeds else tuple(d for d in DEFAULT_SEED_DIRS if d.is_dir())
    )
    expected = load_expected_failures(args.expected_failures)
    report = fuzz(args.cases, args.seed, out, args.timeout, args.all_targets, seed_dirs, expected)
    summary = {
        "runs": report.runs,
        "bad": report.bad,
        "seconds": round(report.seconds, 1),
        "host_starts": report.host_starts,
        "classes": dict(report.classes),
        "by_mutation": {name: dict(counts) for name, counts in report.by_mutation.items()},
        "by_target": {name: dict(counts) for name, counts in report.by_target.items()},
        "slowest": report.slowest,
        "target_seconds": {name: round(t, 1) for name, t in report.target_seconds.items()},
        "signatures": report.signatures,
        "expected": report.expected,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(report.summary())
    return 1 if report.bad else 0


if __name__ == "__main__":
    sys.exit(main())
