"""shlo-opt: an mlir-opt-style driver over upstream MLIR, StableHLO and shlo passes.

Flags copy mlir-opt's spelling. Passes come from ``--pass-pipeline`` or from
``--<pass-name>[=options]`` flags, in the order given; shlo's Python passes and
upstream C++ passes mix freely. Errors print as ``file:line:col: error: ...``
and exit 1, without a Python traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from shlo._mlir_compat import current_version, ir, new_context, passmanager
from shlo.diagnostics import (
    Diagnostic,
    ShloError,
    collect_diagnostics,
    parse_expectations,
    verify,
)
from shlo.io import (
    BYTECODE_MAGIC,
    module_to_bytecode,
    module_to_portable_artifact,
    parse_module,
)
from shlo.pipeline import (
    PipelineError,
    build_pass_manager,
    flag_element,
    pipeline_elements,
    registered_passes,
)
from shlo.tools.cli_exit import run_and_exit

DEFAULT_SPLIT_MARKER = "// -----"


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shlo-opt",
        description="Run MLIR, StableHLO and shlo passes over a StableHLO module. "
        "Passes are given with --pass-pipeline='builtin.module(...)' or as "
        "--<pass-name>[=options] flags, in order.",
        allow_abbrev=False,
    )
    parser.add_argument("input", nargs="?", default="-", help="input file; '-' for stdin")
    parser.add_argument("-o", dest="output", default="-", help="output file; '-' for stdout")
    parser.add_argument("--pass-pipeline", help="textual pipeline: 'builtin.module(a,b{opt=1})'")
    parser.add_argument("--emit-bytecode", action="store_true", help="write MLIR bytecode")
    parser.add_argument(
        "--emit-portable-artifact",
        action="store_true",
        help="write a StableHLO portable artifact (VHLO bytecode)",
    )
    parser.add_argument(
        "--target-version",
        default=None,
        help="StableHLO version of the portable artifact, X.Y.Z (default: current)",
    )
    parser.add_argument(
        "--split-input-file",
        nargs="?",
        const=DEFAULT_SPLIT_MARKER,
        default=None,
        metavar="MARKER",
        help=f"process each chunk between '{DEFAULT_SPLIT_MARKER}' lines separately",
    )
    parser.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check emitted diagnostics against expected-error@+N {{...}} comments",
    )
    parser.add_argument("--mlir-print-ir-before-all", action="store_true")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true")
    parser.add_argument("--mlir-print-ir-after-failure", action="store_true")
    parser.add_argument("--mlir-print-debuginfo", action="store_true")
    parser.add_argument("--mlir-timing", action="store_true", help="report the time of each pass")
    parser.add_argument(
        "--mlir-disable-threading",
        action="store_true",
        help="accepted for compatibility; shlo always runs single-threaded",
    )
    parser.add_argument("--list-passes", action="store_true", help="list every pass and exit")
    parser.add_argument(
        "--repro-dir",
        default=os.environ.get("SHLO_REPRO_DIR"),
        help="on failure, save the input here and print a reproducer (env: SHLO_REPRO_DIR)",
    )
    return parser


def pass_flags(unknown: list[str]) -> list[str]:
    """Pipeline elements for the ``--<pass>[=options]`` flags argparse did not know."""
    elements = []
    for flag in unknown:
        if not flag.startswith("--"):
            raise PipelineError(f"unexpected argument '{flag}'")
        name, has_options, options = flag[2:].partition("=")
        elements.append(flag_element(name, options if has_options else None))
    return elements


def list_passes() -> str:
    titles = {"shlo": "shlo passes", "stablehlo": "StableHLO passes", "mlir": "MLIR passes"}
    lines = []
    passes = registered_passes()
    for group, title in titles.items():
        lines.append(f"{title}:")
        for info in sorted((p for p in passes.values() if p.group == group), key=lambda p: p.name):
            lines.append(f"  --{info.name:<48} {info.summary}")
        lines.append("")
    return "\n".join(lines)


def split_chunks(text: str, marker: str | None) -> list[tuple[int, str]]:
    """(first line number, chunk text) pairs; chunks keep their line numbers in the file."""
    if marker is None:
        return [(1, text)]
    chunks: list[tuple[int, str]] = []
    start = 1
    current: list[str] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.strip() == marker:
            chunks.append((start, "".join(current)))
            start, current = number + 1, []
        else:
            current.append(line)
    chunks.append((start, "".join(current)))
    return chunks


class ChunkFailed(Exception):
    def __init__(self, diagnostics: list[Diagnostic], summary: str = "") -> None:
        super().__init__(summary)
        self.diagnostics = diagnostics


def configure(pm: passmanager.PassManager, args: argparse.Namespace) -> None:
    """Map the IR printing and timing flags onto pass manager calls."""
    if (
        args.mlir_print_ir_before_all
        or args.mlir_print_ir_after_all
        or args.mlir_print_ir_after_failure
    ):
        pm.enable_ir_printing(
            print_before_all=args.mlir_print_ir_before_all,
            print_after_all=args.mlir_print_ir_after_all or args.mlir_print_ir_after_failure,
            print_after_failure=args.mlir_print_ir_after_failure,
            enable_debug_info=args.mlir_print_debuginfo,
        )
    if args.mlir_timing:
        pm.enable_timing()


def parse_chunk(chunk: Chunk, context: ir.Context) -> ir.Module:
    if chunk.path is not None:
        # parseFile keeps the real file name in every location.
        return ir.Module.parseFile(chunk.path, context)
    if isinstance(chunk.data, str):
        return ir.Module.parse(chunk.data, context)
    return parse_module(chunk.data, context, chunk.filename)


def process_chunk(
    chunk: Chunk, pm: passmanager.PassManager | None, context: ir.Context, verifying: bool
) -> ir.Module:
    """Parse one chunk and run the pipeline on it; ChunkFailed carries every diagnostic."""
    with collect_diagnostics(context, chunk.filename) as collector:
        try:
            module = parse_chunk(chunk, context)
            if pm is not None:
                pm.run(module.operation)
        except ir.MLIRError as error:
            collector.add_error(error)
            raise ChunkFailed(collector.diagnostics) from None
        except ShloError as error:
            raise ChunkFailed(collector.diagnostics + error.diagnostics, error.summary) from None
    if verifying and collector.diagnostics:
        raise ChunkFailed(collector.diagnostics)
    # Warnings and remarks of a successful run still reach the user.
    for diagnostic in collector.diagnostics:
        print(diagnostic, file=sys.stderr)
    return module


def write_reproducer(repro_dir: str, data: bytes | str, elements: list[str], index: int) -> str:
    directory = Path(repro_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"shlo-repro-{os.getpid()}-{index}.mlir"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    pipeline = "builtin.module(" + ",".join(elements) + ")"
    return f"reproduce with: shlo-opt {path} --pass-pipeline='{pipeline}'"


def render(module: ir.Module, args: argparse.Namespace) -> bytes:
    if args.emit_portable_artifact:
        return module_to_portable_artifact(module, args.target_version or current_version())
    if args.emit_bytecode:
        return module_to_bytecode(module)
    return module.operation.get_asm(enable_debug_info=args.mlir_print_debuginfo).encode()


@dataclass(frozen=True)
class Chunk:
    filename: str
    data: bytes | str
    path: str | None = None  # set when the chunk is a whole text file


def read_chunks(args: argparse.Namespace) -> list[Chunk]:
    """The input, split at --split-input-file markers; ShloError when unreadable."""
    if args.input == "-":
        raw, filename = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            raw, filename = Path(args.input).read_bytes(), args.input
        except OSError as error:
            raise ShloError(f"cannot read {args.input}: {error.strerror}") from None
    if raw.startswith(BYTECODE_MAGIC):
        if args.split_input_file or args.verify_diagnostics:
            raise ShloError("--split-input-file and --verify-diagnostics need text input")
        return [Chunk(filename, raw)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ShloError(f"{filename} is neither UTF-8 text nor MLIR bytecode") from None
    if args.split_input_file is None and args.input != "-":
        return [Chunk(filename, text, path=args.input)]
    # Leading newlines keep each chunk's diagnostics on the file's own line numbers.
    return [
        Chunk(filename, "\n" * (first - 1) + chunk)
        for first, chunk in split_chunks(text, args.split_input_file)
    ]


def report_failure(
    failure: ChunkFailed, chunk: Chunk, args: argparse.Namespace, elements: list[str], index: int
) -> None:
    for diagnostic in failure.diagnostics:
        print(diagnostic, file=sys.stderr)
    if not failure.diagnostics:
        print(f"{chunk.filename}: error: {failure}", file=sys.stderr)
    if args.repro_dir:
        print(write_reproducer(args.repro_dir, chunk.data, elements, index), file=sys.stderr)


def check_expectations(chunk: Chunk, diagnostics: list[Diagnostic]) -> bool:
    """Print --verify-diagnostics problems; True when there were none."""
    text = chunk.data if isinstance(chunk.data, str) else ""
    problems = verify(diagnostics, parse_expectations(text), chunk.filename)
    for problem in problems:
        print(problem, file=sys.stderr)
    return not problems


def run(argv: list[str]) -> int:
    args, unknown = make_parser().parse_known_args(argv)
    if args.list_passes:
        print(list_passes())
        return 0
    context = new_context()
    try:
        elements = pipeline_elements(args.pass_pipeline) if args.pass_pipeline else []
        elements += pass_flags(unknown)
        # Built before reading the input, so a bad pipeline is reported first.
        pm = build_pass_manager(elements, context) if elements else None
    except PipelineError as error:
        print(f"shlo-opt: error: {error}", file=sys.stderr)
        return 2
    if pm is not None:
        configure(pm, args)
    try:
        chunks = read_chunks(args)
    except ShloError as error:
        print(f"shlo-opt: error: {error}", file=sys.stderr)
        return 1

    outputs: list[bytes] = []
    ok = True
    for index, chunk in enumerate(chunks):
        try:
            module = process_chunk(chunk, pm, context, args.verify_diagnostics)
            if args.verify_diagnostics:
                ok &= check_expectations(chunk, [])
            outputs.append(render(module, args))
        except ChunkFailed as failure:
            if args.verify_diagnostics:
                ok &= check_expectations(chunk, failure.diagnostics)
            else:
                report_failure(failure, chunk, args, elements, index)
                ok = False
        except ShloError as error:
            print(f"shlo-opt: error: {error}", file=sys.stderr)
            return 1
    # The timing report is printed when the pass manager goes away.
    del pm

    if args.emit_bytecode or args.emit_portable_artifact:
        if len(outputs) > 1:
            # Bytecode has no chunk separator: concatenated modules would not read back.
            print(
                "shlo-opt: error: bytecode output holds one module; drop --split-input-file",
                file=sys.stderr,
            )
            return 1
        payload = b"".join(outputs)
    else:
        separator = ("\n" + (args.split_input_file or DEFAULT_SPLIT_MARKER) + "\n").encode()
        payload = separator.join(output.rstrip(b"\n") + b"\n" for output in outputs)
    if args.output == "-":
        sys.stdout.buffer.write(payload)
        sys.stdout.flush()
        return 0 if ok else 1
    try:
        Path(args.output).write_bytes(payload)
    except OSError as error:
        print(f"shlo-opt: error: cannot write {args.output}: {error.strerror}", file=sys.stderr)
        return 1
    return 0 if ok else 1


def main() -> None:
    run_and_exit("shlo-opt", run)


if __name__ == "__main__":
    main()
