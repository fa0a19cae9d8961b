"""shlo-run: compile a StableHLO function for the CPU and run it, like iree-run-module.

  shlo-run program.mlir --input=2x3xf32=1,2,3,4,5,6 --input=@x.npy [--output=@out.npy]

Inputs follow iree-run-module: ``SHAPExTYPE=values`` with values separated by
commas or spaces (one value fills the whole shape), ``TYPE=value`` for a
scalar, or ``@file.npy``. Results print as ``result[i]: 2x3xf32=[1 2 3][4 5 6]``.
``--output=@file.npy`` (once per result) saves them instead. ``--benchmark=N``
runs N more calls and prints the time per call. Errors exit 1 with a message,
never a traceback.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from shlo.compiler import compile as compile_program
from shlo.diagnostics import ShloError
from shlo.dtypes import mlir_element_type, numpy_dtype
from shlo.isolation import shared_worker
from shlo.tools.cli_exit import run_and_exit

_ELEMENT = (
    r"(?:i1|i2|i4|i8|i16|i32|i64|ui2|ui4|ui8|ui16|ui32|ui64"
    r"|f16|bf16|f32|f64|f8E\w+|f4E2M1FN|complex<f32>|complex<f64>)"
)
_INPUT = re.compile(rf"^(?P<shape>(?:\d+x)*)(?P<element>{_ELEMENT})=(?P<values>.*)$", re.DOTALL)


class UsageError(Exception):
    pass


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


def parse_input(spec: str) -> np.ndarray:
    """One ``--input`` value as a numpy array."""
    if spec.startswith("@"):
        try:
            return np.load(spec[1:], allow_pickle=False)
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot read input {spec[1:]}: {error}") from None
    match = _INPUT.match(spec)
    if not match:
        raise UsageError(
            f"cannot parse --input={spec!r}; expected SHAPExTYPE=values "
            "(e.g. 2x3xf32=1,2,3,4,5,6), TYPE=value or @file.npy"
        )
    shape = tuple(int(d) for d in match["shape"].split("x") if d)
    dtype = numpy_dtype(match["element"])
    # Commas, spaces and iree-run-module's row brackets all separate values.
    texts = [t for t in re.split(r"[,\s\[\]]+", match["values"]) if t]
    try:
        values = [parse_value(t, dtype) for t in texts]
    except ValueError:
        raise UsageError(f"--input={spec!r}: values must be {match['element']} numbers") from None
    count = int(np.prod(shape))
    if len(values) == 1:
        values = values * count
    if len(values) != count:
        raise UsageError(
            f"--input={spec!r}: shape {match['shape'] + match['element']} needs {count} "
            f"values, got {len(values)}"
        )
    if dtype.kind in "bc":
        return np.array(values, dtype=dtype).reshape(shape)
    if isinstance(values[0], float):  # f8 and bf16 convert from float64
        return np.array(values, dtype=np.float64).astype(dtype).reshape(shape)
    return np.array(values).astype(dtype).reshape(shape)


def format_result(array: np.ndarray) -> str:
    """``2x3xf32=[1 2 3][4 5 6]``, as iree-run-module prints."""
    element = mlir_element_type(array.dtype)
    prefix = "".join(f"{d}x" for d in array.shape) + element + "="

    def items(values: np.ndarray) -> str:
        if values.ndim == 0:
            return _scalar(values[()])
        if values.ndim == 1:
            return "[" + " ".join(_scalar(v) for v in values) + "]"
        return "".join(items(v) for v in values)

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
    parser.add_argument(
        "input_file", metavar="FILE", help="StableHLO text, bytecode or portable artifact"
    )
    parser.add_argument("--entry", default="main", help="function to run (default: main)")
    parser.add_argument(
        "--target",
        choices=("cpu", "interpreter"),
        default="cpu",
        help="compile for the CPU (default), or run StableHLO's reference interpreter",
    )
    parser.add_argument(
        "--input", action="append", default=[], help="SHAPExTYPE=values or @file.npy"
    )
    parser.add_argument("--output", action="append", default=[], help="@file.npy, once per result")
    parser.add_argument("--benchmark", type=int, default=0, metavar="N", help="time N more calls")
    return parser


def run(argv: Sequence[str]) -> int:
    args = make_parser().parse_args(argv)
    path = Path(args.input_file)
    if not path.is_file():
        raise UsageError(f"cannot read {args.input_file}: no such file")
    inputs = [parse_input(spec) for spec in args.input]
    if args.target == "cpu":
        executable = compile_program(path, entry=args.entry)
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
            np.save(target[1:], result, allow_pickle=False)
        else:
            print(f"result[{index}]: {format_result(np.asarray(result))}")
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


def _describe(error: Exception) -> str:
    if isinstance(error, ShloError) and error.diagnostics:
        return str(error)
    return f"shlo-run: error: {error}"


def main() -> None:
    run_and_exit("shlo-run", run, (UsageError, ValueError, ShloError), _describe)


if __name__ == "__main__":
    main()
