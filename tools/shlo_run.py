"""shlo-run: compile a StableHLO function for a target and run it, like iree-run-module.

  shlo-run program.mlir --input=2x3xf32=1,2,3,4,5,6 --input=@x.npy [--output=@out.npy]
  shlo-run --module=program.mlir --function=main --input=@args.npz

Inputs follow iree-run-module: ``SHAPExTYPE=values`` with values separated by
commas or spaces (one value fills the whole shape), ``TYPE=value`` for a
scalar, ``@file.npy``, or ``@file.npz`` for several inputs in the archive's
order. Results print as ``result[i]: 2x3xf32=[1 2 3][4 5 6]``, nested for
rank 3 and more, abbreviated with ``...`` beyond ``--print-max-elements``.
``--output=@file.npy`` (once per result) saves them instead. ``--benchmark=N``
runs N more calls and prints the time per call; ``--threads=N`` sets the
compiled code's thread count. ``--check`` runs the program on the target, the
reference interpreter and XLA and prints how they compare (``shlo.check``,
docs/check.md): exit 0 when they agree, 1 when they diverge, with a reproducer
in ``--reproducer-dir``. Errors exit 1 with a message, never a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import ml_dtypes
import numpy as np
from shlo import progress
from shlo.backends import registered_targets
from shlo.compiler import compile as compile_program
from shlo.diagnostics import ShloError
from shlo.dtypes import mlir_element_type, numpy_dtype
from shlo.isolation import shared_worker
from shlo.tools.cli_exit import robust_output, run_and_exit
from shlo.tools.version import version_line

_ELEMENT = (
    r"(?:i1|i2|i4|i8|i16|i32|i64|ui2|ui4|ui8|ui16|ui32|ui64"
    r"|f16|bf16|f32|f64|f8E\w+|f4E2M1FN|complex<f32>|complex<f64>)"
)
_INPUT = re.compile(rf"^(?P<shape>(?:\d+x)*)(?P<element>{_ELEMENT})=(?P<values>.*)$", re.DOTALL)


class UsageError(Exception):
    pass


# A text input is built in memory before it is checked against the program:
# refuse absurd shapes instead of failing with an empty MemoryError.
MAX_INPUT_BYTES = 1 << 31


def parse_value(text: str, dtype: np.dtype) -> object:
    text = text.strip()
    if dtype == np.bool_:
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise ValueError(text)
    if dtype.kind == "c":
        return complex(text.replace("i", "j"))
    if dtype.kind in "iu" or ("int" in dtype.name):
        return int(text, 0)
    return float(text)


def _integer_range(dtype: np.dtype) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype) if "int" in dtype.name and dtype.kind == "V" else np.iinfo(dtype)
    return int(info.min), int(info.max)


def _check_range(spec: str, element: str, texts: list[str], values: list, dtype: np.dtype) -> None:
    """UsageError for the first value that does not fit ``dtype`` (instead of wrapping)."""
    if dtype.kind in "bc":
        return
    if isinstance(values[0], int):
        low, high = _integer_range(dtype)
        for text, value in zip(texts, values):
            if not low <= value <= high:
                raise UsageError(
                    f"--input={spec!r}: value {text} is out of range for {element} [{low}, {high}]"
                )
        return
    with np.errstate(over="ignore", invalid="ignore"):
        converted = np.array(values, dtype=np.float64).astype(dtype).astype(np.float64)
    for text, value, result in zip(texts, values, converted):
        # Overflow gives inf, or nan in types without inf; 1e400 is inf already.
        overflowed = (np.isfinite(value) or "inf" not in text.lower()) and np.isinf(result)
        if overflowed or (not np.isnan(value) and np.isnan(result)):
            largest = float(ml_dtypes.finfo(dtype).max)
            raise UsageError(
                f"--input={spec!r}: value {text} is not representable in {element} "
                f"(largest finite value {largest:g})"
            )


def _read_npy(path: str) -> np.ndarray:
    def unreadable(reason: str) -> UsageError:
        return UsageError(f"cannot read input {path}: {reason}")

    try:
        with open(path, "rb") as file:
            if file.read(6) != b"\x93NUMPY":
                empty = file.tell() == 0
                raise unreadable("the file is empty" if empty else "not a .npy file")
            file.seek(0)
            version = np.lib.format.read_magic(file)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(file)
            # A corrupt header can claim any shape: never allocate more than the file holds.
            needed = math.prod(shape) * dtype.itemsize
            available = os.fstat(file.fileno()).st_size - file.tell()
            if needed > available:
                raise unreadable(
                    f"the header claims shape {shape} ({needed} bytes) but the file holds "
                    f"{available}; it is truncated or corrupt"
                )
            file.seek(0)
            return np.load(file, allow_pickle=False)
    except IsADirectoryError:
        raise unreadable("is a directory") from None
    except OSError as error:
        raise unreadable(str(error.strerror or error)) from None
    except (EOFError, ValueError, TypeError, MemoryError) as error:
        raise unreadable(f"not a valid .npy file ({error or type(error).__name__})") from None


def _read_npz(path: str) -> list[np.ndarray]:
    """The arrays of a .npz file, in the order they were saved."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not archive.files:
                raise UsageError(f"cannot read input {path}: the archive holds no arrays")
            return [archive[name] for name in archive.files]
    except IsADirectoryError:
        raise UsageError(f"cannot read input {path}: is a directory") from None
    except OSError as error:
        raise UsageError(f"cannot read input {path}: {error.strerror or error}") from None
    except (EOFError, ValueError, TypeError, MemoryError, zipfile.BadZipFile) as error:
        reason = error or type(error).__name__
        raise UsageError(f"cannot read input {path}: not a valid .npz file ({reason})") from None


def parse_inputs(spec: str) -> list[np.ndarray]:
    """The arrays of one ``--input``: several for ``@file.npz``, else one."""
    if spec.startswith("@") and spec.endswith(".npz"):
        return _read_npz(spec[1:])
    return [parse_input(spec)]


def parse_input(spec: str) -> np.ndarray:
    """One ``--input`` value as a numpy array."""
    if spec.startswith("@"):
        return _read_npy(spec[1:])
    match = _INPUT.match(spec)
    if not match:
        raise UsageError(
            f"cannot parse --input={spec!r}; expected SHAPExTYPE=values "
            "(e.g. 2x3xf32=1,2,3,4,5,6), TYPE=value or @file.npy"
        )
    shape = tuple(int(d) for d in match["shape"].split("x") if d)
    element = match["element"]
    dtype = numpy_dtype(element)
    count = math.prod(shape)
    if count * dtype.itemsize > MAX_INPUT_BYTES:
        raise UsageError(
            f"--input={spec[:60]!r}: shape {match['shape'] + element} needs "
            f"{count * dtype.itemsize} bytes, more than the limit of {MAX_INPUT_BYTES}; "
            "pass large inputs as @file.npy"
        )
    # Commas, spaces and iree-run-module's row brackets all separate values.
    texts = [t for t in re.split(r"[,\s\[\]]+", match["values"]) if t]
    try:
        values = [parse_value(t, dtype) for t in texts]
    except ValueError:
        raise UsageError(f"--input={spec!r}: values must be {element} numbers") from None
    if len(values) != count and not (len(values) == 1 and count > 0):
        raise UsageError(
            f"--input={spec!r}: shape {match['shape'] + element} needs {count} "
            f"values, got {len(values)}"
        )
    if not values:  # an empty tensor, such as 0xf32=
        return np.zeros(shape, dtype=dtype)
    _check_range(spec, element, texts, values, dtype)
    if dtype.kind in "bc":
        array = np.array(values, dtype=dtype)
    elif isinstance(values[0], float):  # f8 and bf16 convert from float64
        array = np.array(values, dtype=np.float64).astype(dtype)
    else:
        array = np.array(values).astype(dtype)
    # One value fills the whole shape.
    return (
        np.broadcast_to(array.reshape(()), shape).copy()
        if len(values) == 1
        else array.reshape(shape)
    )


# Results larger than this print abbreviated, as numpy's threshold does.
DEFAULT_PRINT_MAX_ELEMENTS = 1000
# Elements kept at each end of an abbreviated dimension.
EDGE_ITEMS = 3


def format_result(array: np.ndarray, max_elements: int = 0) -> str:
    """``2x3xf32=[1 2 3][4 5 6]``, as iree-run-module prints.

    Rank 3 and more nest brackets (``2x2x2xi32=[[1 2][3 4]][[5 6][7 8]]``).
    With ``max_elements`` > 0, an array of more elements keeps the first and
    last EDGE_ITEMS of every dimension and prints ``...`` between them.
    """
    element = mlir_element_type(array.dtype)
    prefix = "".join(f"{d}x" for d in array.shape) + element + "="
    abbreviate = 0 < max_elements < array.size

    def parts(values: np.ndarray, render) -> list[str]:
        count = len(values)
        if abbreviate and count > 2 * EDGE_ITEMS:
            head = [render(values[i]) for i in range(EDGE_ITEMS)]
            tail = [render(values[i]) for i in range(count - EDGE_ITEMS, count)]
            return [*head, "...", *tail]
        return [render(v) for v in values]

    def items(values: np.ndarray) -> str:
        if values.ndim == 0:
            return _scalar(values[()])
        if values.ndim == 1:
            return "[" + " ".join(parts(values, lambda v: _scalar(v))) + "]"
        if values.ndim == 2:
            return "".join(parts(values, items))
        return "".join(parts(values, lambda v: "[" + items(v) + "]"))

    return prefix + items(array)


def _scalar(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (complex, np.complexfloating)):
        return f"{_scalar(value.real)}+{_scalar(value.imag)}i"
    if isinstance(value, (np.integer, int)):
        return str(int(value))
    number = float(value)  # type: ignore[arg-type]
    return f"{number:g}" if np.isfinite(number) else str(number).upper()


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shlo-run",
        description="Compile a StableHLO function and run it (iree-run-module conventions).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version_line("shlo-run"))
    parser.add_argument(
        "input_file",
        metavar="FILE",
        nargs="?",
        help="StableHLO text, bytecode or portable artifact (or --module=FILE)",
    )
    parser.add_argument("--module", help="the program, as iree-run-module's --module")
    parser.add_argument(
        "--entry",
        "--function",
        dest="entry",
        default="main",
        help="function to run (default: main; --function as in iree-run-module)",
    )
    parser.add_argument(
        "--target",
        default="cpu",
        help=f"a compiler target ({', '.join(registered_targets())}; default cpu), or "
        "'interpreter' for StableHLO's reference interpreter",
    )
    parser.add_argument("--arch", help="the GPU for --target cuda, e.g. sm_90")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        help="SHAPExTYPE=values, @file.npy, or @file.npz for several inputs in its order",
    )
    parser.add_argument(
        "--print-max-elements",
        type=int,
        default=DEFAULT_PRINT_MAX_ELEMENTS,
        metavar="N",
        help="abbreviate results of more than N elements with ... (default "
        f"{DEFAULT_PRINT_MAX_ELEMENTS}; 0 prints every element)",
    )
    parser.add_argument("--output", action="append", default=[], help="@file.npy, once per result")
    parser.add_argument("--benchmark", type=int, default=0, metavar="N", help="time N more calls")
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="threads the compiled code runs on (default: SHLO_THREADS, else every core)",
    )
    parser.add_argument(
        "--flush-denormals",
        action="store_true",
        help="compute subnormal floats as zero (FTZ and DAZ), as XLA's CPU code does; "
        "default: IEEE arithmetic, as StableHLO specifies",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run the target, the reference interpreter and XLA (when jax is installed) side "
        "by side; print how they compare and exit 1 when they diverge",
    )
    parser.add_argument(
        "--reproducer-dir",
        metavar="DIR",
        help="where --check writes the reproducer of a divergence (default: a new "
        "temporary directory, printed in the report)",
    )
    return parser


def run(argv: Sequence[str]) -> int:
    """shlo-run's exit code for ``argv``; errors in the user's input print one line and give 1."""
    robust_output()
    try:
        return execute(argv)
    except (UsageError, ValueError, ShloError) as error:
        print(_describe(error), file=sys.stderr)
        return 1


def execute(argv: Sequence[str]) -> int:
    """Run ``argv``; UsageError, ValueError or ShloError for errors in the user's input."""
    try:
        args = make_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or argparse's own usage errors
        return exit_.code if isinstance(exit_.code, int) else 2
    if (args.input_file is None) == (args.module is None):
        try:  # a usage error, as argparse's own: exit 2
            make_parser().error("give the program once: as FILE or as --module=FILE")
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else 2
    path = Path(args.input_file or args.module)
    if path.is_dir():
        raise UsageError(f"cannot read {args.input_file}: is a directory")
    if not path.is_file():
        raise UsageError(f"cannot read {args.input_file}: no such file")
    inputs = [array for spec in args.input for array in parse_inputs(spec)]
    if args.check or args.reproducer_dir is not None:
        return _run_check(args, path, inputs)
    if args.target != "interpreter":
        # A dynamic program compiles on its first call.
        with progress.show_on_terminal("shlo-run"):
            executable = compile_program(
                path,
                args.target,
                entry=args.entry,
                threads=args.threads,
                arch=args.arch,
                flush_denormals=args.flush_denormals or None,
            )
            results = executable(*inputs)
        call = lambda: executable(*inputs)  # noqa: E731
    else:
        # The worker parses the file itself, with file:line:col diagnostics.
        request = {"source": str(path), "entry": args.entry, "args": inputs, "filename": str(path)}
        results = shared_worker().call("interpret", **request)
        call = lambda: shared_worker().call("interpret", **request)  # noqa: E731
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    if args.output and len(args.output) != len(results):
        raise UsageError(
            f"@{args.entry} has {len(results)} result(s) but {len(args.output)} --output given"
        )
    for index, result in enumerate(results):
        if args.output:
            target = args.output[index]
            if not target.startswith("@"):
                raise UsageError(f"--output={target!r}: expected @file.npy")
            try:
                np.save(target[1:], result, allow_pickle=False)
            except OSError as error:
                raise UsageError(f"cannot write {target[1:]}: {error.strerror}") from None
        else:
            text = format_result(np.asarray(result), args.print_max_elements)
            print(f"result[{index}]: {text}")
    if args.benchmark > 0:
        times = []
        for _ in range(args.benchmark):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        print(
            f"benchmark: {args.benchmark} calls, mean {np.mean(times) * 1e6:.1f} us, "
            f"min {np.min(times) * 1e6:.1f} us, target {args.target}"
        )
    return 0


def _run_check(args: argparse.Namespace, path: Path, inputs: list[np.ndarray]) -> int:
    """shlo-run --check: the report of shlo.check; 0 when every system agrees, else 1."""
    if not args.check:
        raise UsageError("--reproducer-dir needs --check")
    if args.target == "interpreter":
        raise UsageError(
            "--check compares a compiler target with the interpreter; give --target cpu or cuda"
        )
    if args.output or args.benchmark:
        raise UsageError("--check prints a report; it takes no --output or --benchmark")
    from shlo.checker import check

    with progress.show_on_terminal("shlo-run"):
        report = check(
            path,
            *inputs,
            target=args.target,
            entry=args.entry,
            reproducer_dir=args.reproducer_dir,
            threads=args.threads,
            arch=args.arch,
            flush_denormals=args.flush_denormals or None,
        )
    print(report)
    return 0 if report.ok else 1


def _describe(error: Exception) -> str:
    if isinstance(error, ShloError) and error.diagnostics:
        return str(error)
    return f"shlo-run: error: {error}"


def main() -> None:
    run_and_exit("shlo-run", run)


if __name__ == "__main__":
    main()
