"""shlo-opt: an mlir-opt-style driver over upstream MLIR, StableHLO and shlo passes.

Flags copy mlir-opt's spelling. Passes come from ``--pass-pipeline`` or from
``--<pass-name>[=options]`` flags, in the order given; shlo's Python passes and
upstream C++ passes mix freely. Errors print as ``file:line:col: error: ...``
and exit 1, without a Python traceback.

Parsing, the passes and printing run in shlo's isolated worker process
(``shlo.opt_task``), so input that crashes MLIR (an abort, a segfault, a stack
overflow) is reported as an error instead of killing shlo-opt;
``--no-isolate`` or ``SHLO_NO_ISOLATE=1`` runs them in this process.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from shlo._mlir_compat import current_version
from shlo.diagnostics import Diagnostic, ShloError, parse_expectations, verify
from shlo.io import BYTECODE_MAGIC, check_target_version, decode_text
from shlo.isolation import shared_worker
from shlo.opt_task import Chunk, ChunkResult, OptConfig, opt
from shlo.pipeline import PipelineError, flag_element, pipeline_elements, registered_passes
from shlo.tools.cli_exit import InternalError, robust_output, run_and_exit
from shlo.tools.version import version_line

DEFAULT_SPLIT_MARKER = "// -----"
# Nesting this deep is reported as the likely cause when the worker crashes.
_DEEP_NESTING = 256


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shlo-opt",
        description="Run MLIR, StableHLO and shlo passes over a StableHLO module. "
        "Passes are given with --pass-pipeline='builtin.module(...)' or as "
        "--<pass-name>[=options] flags, in order.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version_line("shlo-opt"))
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
        "--no-isolate",
        action="store_true",
        default=bool(os.environ.get("SHLO_NO_ISOLATE")),
        help="parse and run passes in this process, not in the worker: faster to debug, "
        "but a crash in MLIR kills shlo-opt (env: SHLO_NO_ISOLATE=1)",
    )
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


class Runner:
    """Runs ``shlo.opt_task.opt`` in the worker and relays what MLIR printed there."""

    def __init__(self, isolate: bool) -> None:
        self.isolate = isolate
        # What the worker prints on stderr (IR dumps, timing) and on stdout
        # (passes that print for FileCheck), each read from an offset.
        self._logs = (
            [tempfile.NamedTemporaryFile(prefix="shlo-opt-", suffix=s) for s in (".log", ".out")]
            if isolate
            else []
        )
        self._offsets = [0, 0]

    def call(self, action: str, config: OptConfig, chunk: Chunk | None = None) -> object:
        if not self._logs:
            return opt(action, config, chunk)
        try:
            return shared_worker().call(
                "opt",
                action=action,
                config=config,
                chunk=chunk,
                log_path=self._logs[0].name,
                stdout_path=self._logs[1].name,
            )
        except ShloError as error:
            if error.summary.startswith("internal error"):
                raise InternalError(error.summary) from None
            if "crashed" in error.summary or "timed out" in error.summary:
                raise WorkerCrashed(error.summary) from None
            raise

    def _read(self, index: int) -> bytes:
        if not self._logs:
            return b""
        with open(self._logs[index].name, "rb") as log:
            log.seek(self._offsets[index])
            data = log.read()
        self._offsets[index] += len(data)
        return data

    def printed(self) -> str:
        """What MLIR printed on stderr in the worker since the last call to this method.

        What it printed on stdout meanwhile goes to this process's stdout now,
        ahead of the modules, as it would in-process.
        """
        stdout = self._read(1)
        if stdout:
            write_stdout(stdout)
        return self._read(0).decode(errors="replace")

    def close(self) -> None:
        for log in self._logs:
            log.close()


class WorkerCrashed(Exception):
    """The worker died (abort, segfault, stack overflow) or timed out on a request."""


def last_words(printed: str) -> str:
    """The line of a crashed worker's output that says why, or ""."""
    for line in printed.splitlines():
        if line.startswith(("LLVM ERROR:", "Fatal Python error:")) or "Assertion" in line:
            return line.strip()
    return ""


def crash_cause(summary: str) -> str:
    """The cause from the worker's error: "crashed (SIGSEGV)" or "timed out after 600 s"."""
    match = re.search(r"crashed \(([^)]*)\)", summary)
    if match:
        return f"crashed ({match.group(1)})"
    match = re.search(r"timed out after [^ ]+ s", summary)
    return f"{match.group(0)} (the limit is SHLO_COMPILE_TIMEOUT)" if match else summary


def deepest_nesting(text: str) -> tuple[int, int, int]:
    """(depth, line, column) of the most deeply nested bracket, a hint for stack overflows."""
    depth = best = 0
    best_at = line = column = 1
    best_at_column = 1
    previous = ""
    for char in text:
        if char in "([{<":
            depth += 1
            if depth > best:
                best, best_at, best_at_column = depth, line, column
        elif char in ")]}" or (char == ">" and previous != "-"):
            depth = max(depth - 1, 0)
        if char == "\n":
            line, column = line + 1, 1
        else:
            column += 1
        previous = char
    return best, best_at, best_at_column


def crash_result(chunk: Chunk, summary: str, printed: str) -> ChunkResult:
    """The worker died on ``chunk``: one located error instead of a dead shlo-opt."""
    message = (
        f"shlo-opt's worker {crash_cause(summary)} while parsing, transforming or printing "
        "this input; the input may be malformed, or this is a bug in MLIR or shlo"
    )
    words = last_words(printed)
    if words:
        message += f": {words}"
    line, column = (chunk.first_line, 1) if chunk.first_line > 1 else (0, 0)
    if isinstance(chunk.data, str):
        depth, deep_line, deep_column = deepest_nesting(chunk.data)
        if depth >= _DEEP_NESTING:
            message += f"; brackets nest {depth} deep here, which may overflow the stack"
            line, column = deep_line, deep_column
    return ChunkResult(diagnostics=(Diagnostic("error", message, chunk.filename, line, column),))


def relay(printed: str, skip: str = "") -> None:
    """Print what MLIR printed in the worker (IR dumps, timing), but not ``skip`` lines."""
    if skip:
        printed = "".join(line for line in printed.splitlines(True) if line.strip() != skip)
    if printed:
        sys.stderr.write(printed)
        sys.stderr.flush()


def write_reproducer(repro_dir: str, data: bytes | str, elements: list[str], index: int) -> str:
    directory = Path(repro_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"shlo-repro-{os.getpid()}-{index}.mlir"
    path.write_bytes(data if isinstance(data, bytes) else data.encode(errors="replace"))
    pipeline = "builtin.module(" + ",".join(elements) + ")"
    return f"reproduce with: shlo-opt {path} --pass-pipeline='{pipeline}'"


def write_stdout(payload: bytes) -> None:
    # A caller such as a fuzzer may have replaced sys.stdout by a text-only stream.
    sys.stdout.flush()
    if hasattr(sys.stdout, "buffer"):
        sys.stdout.buffer.write(payload)
    else:
        sys.stdout.write(payload.decode(errors="backslashreplace"))
    sys.stdout.flush()


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
    text = decode_text(raw, filename)
    if args.split_input_file is None and args.input != "-" and filename.isprintable():
        return [Chunk(filename, text, path=args.input)]
    # Leading newlines keep each chunk's diagnostics on the file's own line numbers.
    return [
        Chunk(filename, "\n" * (first - 1) + chunk, first_line=first)
        for first, chunk in split_chunks(text, args.split_input_file)
    ]


def report_failure(
    result: ChunkResult, chunk: Chunk, args: argparse.Namespace, elements: list[str], index: int
) -> None:
    for diagnostic in result.diagnostics:
        print(diagnostic, file=sys.stderr)
    if not result.diagnostics:
        print(f"{chunk.filename}: error: {result.summary}", file=sys.stderr)
    if args.repro_dir:
        try:
            print(write_reproducer(args.repro_dir, chunk.data, elements, index), file=sys.stderr)
        except OSError as error:
            print(
                f"shlo-opt: error: cannot save a reproducer in {args.repro_dir}: {error.strerror}",
                file=sys.stderr,
            )


def check_expectations(chunk: Chunk, diagnostics: list[Diagnostic]) -> bool:
    """Print --verify-diagnostics problems; True when there were none."""
    text = chunk.data if isinstance(chunk.data, str) else ""
    problems = verify(diagnostics, parse_expectations(text), chunk.filename)
    for problem in problems:
        print(problem, file=sys.stderr)
    return not problems


def make_config(args: argparse.Namespace, elements: list[str]) -> OptConfig:
    output_format = "text"
    if args.emit_portable_artifact:
        output_format = "portable-artifact"
    elif args.emit_bytecode:
        output_format = "bytecode"
    return OptConfig(
        elements=tuple(elements),
        print_ir_before_all=args.mlir_print_ir_before_all,
        print_ir_after_all=args.mlir_print_ir_after_all,
        print_ir_after_failure=args.mlir_print_ir_after_failure,
        print_debuginfo=args.mlir_print_debuginfo,
        timing=args.mlir_timing,
        output_format=output_format,
        target_version=args.target_version or current_version(),
    )


def prints_ir(config: OptConfig) -> bool:
    return config.print_ir_before_all or config.print_ir_after_all or config.print_ir_after_failure


def run(argv: list[str]) -> int:
    robust_output()
    try:
        args, unknown = make_parser().parse_known_args(argv)
    except SystemExit as exit_:  # --help, or argparse's own usage errors
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.list_passes:
        print(list_passes())
        return 0
    try:
        elements = pipeline_elements(args.pass_pipeline) if args.pass_pipeline else []
        elements += pass_flags(unknown)
    except PipelineError as error:
        print(f"shlo-opt: error: {error}", file=sys.stderr)
        return 2
    if args.emit_portable_artifact and args.target_version is not None:
        try:
            check_target_version(args.target_version)
        except ShloError as error:
            print(f"shlo-opt: error: --target-version: {error}", file=sys.stderr)
            return 1
    config = make_config(args, elements)
    runner = Runner(isolate=not args.no_isolate)
    try:
        return run_chunks(args, config, elements, runner)
    finally:
        runner.close()


def run_chunks(
    args: argparse.Namespace, config: OptConfig, elements: list[str], runner: Runner
) -> int:
    # The pipeline is built before the input is read, so a bad one is reported first.
    try:
        pipeline_error = runner.call("start", config)
    except WorkerCrashed as crash:
        printed = runner.printed()
        words = last_words(printed) or "no message"
        print(
            f"shlo-opt: error: the pass pipeline {crash_cause(str(crash))} while being built: "
            f"{words}",
            file=sys.stderr,
        )
        return 2
    printed = runner.printed()
    if pipeline_error is not None:
        # Some option errors are printed by LLVM, with an empty exception message.
        detail = str(pipeline_error).strip()
        if detail:
            relay(printed)
        else:
            detail = "; ".join(printed.split("\n")).strip("; :") or "invalid pass pipeline"
        print(f"shlo-opt: error: {detail}", file=sys.stderr)
        return 2
    relay(printed)
    try:
        chunks = read_chunks(args)
    except ShloError as error:
        message = str(error) if error.diagnostics else f"shlo-opt: error: {error}"
        print(message, file=sys.stderr)
        return 1

    outputs: list[bytes] = []
    ok = True
    for index, chunk in enumerate(chunks):
        try:
            result = runner.call("chunk", config, chunk)
            relay(runner.printed())
        except WorkerCrashed as crash:
            printed = runner.printed()
            result = crash_result(chunk, str(crash), printed)
            if prints_ir(config):
                relay(printed, skip=last_words(printed))
        assert isinstance(result, ChunkResult)
        failed = result.output is None or (args.verify_diagnostics and bool(result.emitted))
        diagnostics = list(result.diagnostics) if result.output is None else list(result.emitted)
        if args.verify_diagnostics:
            ok &= check_expectations(chunk, diagnostics)
        elif failed:
            report_failure(result, chunk, args, elements, index)
            ok = False
        else:
            # Warnings and remarks of a successful run still reach the user.
            for diagnostic in diagnostics:
                print(diagnostic, file=sys.stderr)
        if not failed:
            assert result.output is not None
            outputs.append(result.output)
    # The timing report is printed when the pass manager goes away.
    try:
        runner.call("finish", config)
        relay(runner.printed())
    except WorkerCrashed:
        pass  # the modules are done; only the timing report is lost

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
        write_stdout(payload)
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
