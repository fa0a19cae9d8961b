"""shlo-compile: compile a StableHLO function ahead of time and write the code.

  shlo-compile program.mlir --target cuda --arch sm_90 --emit ptx -o program.ptx
  shlo-compile program.mlir --emit object -o program.o
  shlo-compile poly.mlir --input-types 'tensor<4x8xf32>,tensor<8xf32>' --emit llvm-mlir -o -

The program must be static, or made static by ``--input-types`` (one tensor
type per argument of the entry). What ``--emit`` writes depends on the target
(``--emit help`` lists it); it needs no GPU, only the target's compiler
toolchain. Errors exit 1 with a message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from shlo import progress
from shlo.backends import registered_targets
from shlo.compiler import emit
from shlo.diagnostics import ShloError
from shlo.pass_framework import split_top_level
from shlo.tools.cli_exit import run_and_exit
from shlo.tools.version import version_line


class UsageError(Exception):
    """A command line that cannot be carried out (exit 1)."""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shlo-compile",
        description="Compile a StableHLO function ahead of time and write the code.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version_line("shlo-compile"))
    parser.add_argument("input_file", metavar="FILE", help="StableHLO text, bytecode or artifact")
    parser.add_argument("--entry", default="main", help="function to compile (default: main)")
    parser.add_argument(
        "--target", default="cpu", help=f"one of {', '.join(registered_targets())} (default cpu)"
    )
    parser.add_argument("--arch", help="the GPU for --target cuda (default sm_90)")
    parser.add_argument(
        "--input-types",
        metavar="TYPES",
        help="comma-separated tensor types of the entry's arguments, for dynamic programs",
    )
    parser.add_argument(
        "--flush-denormals",
        action="store_true",
        help="compute subnormal floats as zero (FTZ and DAZ), as XLA's CPU code does; "
        "default: IEEE arithmetic, as StableHLO specifies",
    )
    parser.add_argument("--emit", help="what to write; the target's first kind by default")
    parser.add_argument("-o", "--output", required=True, help="output file, or - for stdout")
    return parser


def execute(argv: Sequence[str]) -> int:
    try:
        args = make_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or argparse's own usage errors
        return exit_.code if isinstance(exit_.code, int) else 2
    source = Path(args.input_file)
    if not source.is_file():
        raise UsageError(f"cannot read {args.input_file}: no such file")
    arg_types = None
    if args.input_types is not None:
        arg_types = [t.strip() for t in split_top_level(args.input_types) if t.strip()]
    with progress.show_on_terminal("shlo-compile"):
        code = emit(
            source,
            args.target,
            args.emit,
            args.entry,
            arch=args.arch,
            arg_types=arg_types,
            flush_denormals=args.flush_denormals or None,
        )
    if args.output == "-":
        sys.stdout.buffer.write(code)
        sys.stdout.flush()
    else:
        try:
            Path(args.output).write_bytes(code)
        except OSError as error:
            raise UsageError(f"cannot write {args.output}: {error.strerror}") from None
    return 0


def _describe(error: Exception) -> str:
    if isinstance(error, ShloError) and error.diagnostics:
        return str(error)
    return f"shlo-compile: error: {error}"


def main() -> None:
    run_and_exit("shlo-compile", execute, (UsageError, ValueError, ShloError), _describe)


if __name__ == "__main__":
    main()
