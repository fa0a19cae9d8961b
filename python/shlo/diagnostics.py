"""Diagnostics: capture them from MLIR, print them as ``file:line:col``, match expected ones."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from shlo._mlir_compat import ir

_MAX_PRINTED_MESSAGE = 2000
_FILE_LINE_COL = re.compile(r'"([^"]*)":(\d+):(\d+)')


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error", "warning", "remark" or "note"
    message: str
    file: str = ""
    line: int = 0
    column: int = 0
    notes: tuple[Diagnostic, ...] = ()

    @property
    def where(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column}"
        return self.file or "<unknown>"

    def __str__(self) -> str:
        message = self.message
        if len(message) > _MAX_PRINTED_MESSAGE:
            # MLIR quotes whole attributes: 100,000 nested brackets make one huge line.
            omitted = len(message) - _MAX_PRINTED_MESSAGE
            message = f"{message[:_MAX_PRINTED_MESSAGE]}... ({omitted} more characters)"
        lines = [f"{self.where}: {self.severity}: {message}"]
        lines += [str(note) for note in self.notes]
        return "\n".join(lines)


class ShloError(Exception):
    """An error in the user's program or request, carrying MLIR's diagnostics."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None) -> None:
        self.diagnostics = diagnostics or []
        detail = "\n".join(str(d) for d in self.diagnostics)
        super().__init__(detail or message)
        self.summary = message


_SEVERITIES = {"ERROR": "error", "WARNING": "warning", "REMARK": "remark", "NOTE": "note"}


def _severity_name(severity: object) -> str:
    return _SEVERITIES.get(str(severity).rsplit(".", 1)[-1], "error")


# What nanobind raises when MLIR hands it a string that is not valid UTF-8,
# e.g. a diagnostic naming the symbol @"\FF".
_UNDECODABLE = "conversion error"
_UNDECODABLE_MESSAGE = "(MLIR's message is not valid UTF-8 and cannot be shown)"


def _text(get: object, attribute: str) -> str:
    try:
        return str(getattr(get, attribute))
    except RuntimeError:
        return _UNDECODABLE_MESSAGE


def is_undecodable_diagnostic(error: RuntimeError) -> bool:
    """True for the bindings' failure to convert a non-UTF-8 diagnostic to a Python string."""
    return _UNDECODABLE in str(error)


_STRING_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{2}|.)")
_SIMPLE_ESCAPES = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\"}


def _unescape(literal: str) -> bytes:
    """The bytes of an MLIR string literal's body: ``\\XX`` is one byte, in hex."""
    data = bytearray()
    position = 0
    for match in _ESCAPE.finditer(literal):
        data += literal[position : match.start()].encode(errors="replace")
        code = match.group(1)
        data += bytes([int(code, 16)]) if len(code) == 2 else _SIMPLE_ESCAPES.get(code, b"")
        position = match.end()
    return bytes(data + literal[position:].encode(errors="replace"))


def undecodable_diagnostic_error(source: str | bytes, filename: str) -> ShloError:
    """The error for a diagnostic MLIR emitted but the bindings could not decode.

    Points at the first string literal of ``source`` whose escapes make
    invalid UTF-8 (such as ``@"\\FF"``), the likely subject of the message.
    """
    message = (
        "MLIR reported an error whose message is not valid UTF-8, so it cannot be shown; "
        "it is probably about a name or string holding invalid UTF-8"
    )
    if isinstance(source, bytes):
        try:
            source.decode("utf-8")
        except UnicodeDecodeError as error:
            # A raw byte that is not UTF-8: the likeliest subject of the message.
            line = source.count(b"\n", 0, error.start) + 1
            column = error.start - (source.rfind(b"\n", 0, error.start) + 1) + 1
            located = (
                f"byte {error.start} is not valid UTF-8, and MLIR reported an error that "
                "names it (the message cannot be shown)"
            )
            return ShloError(located, [Diagnostic("error", located, filename, line, column)])
    text = source if isinstance(source, str) else source.decode("utf-8", errors="replace")
    for match in _STRING_LITERAL.finditer(text):
        try:
            _unescape(match.group(1)).decode("utf-8")
        except UnicodeDecodeError:
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            located = (
                f"string literal {match.group(0)[:40]} is not valid UTF-8 once unescaped, "
                "and MLIR reported an error that names it (the message cannot be shown)"
            )
            return ShloError(located, [Diagnostic("error", located, filename, line, column)])
    return ShloError(message, [Diagnostic("error", message, filename)])


def convert(diagnostic: ir.Diagnostic | ir.DiagnosticInfo, filename: str = "") -> Diagnostic:
    """Our Diagnostic from the bindings' one; ``filename`` replaces the "-" of parsed strings."""
    location = _text(diagnostic, "location")
    match = _FILE_LINE_COL.search(location)
    if match:
        file = match.group(1)
        if file == "-" and filename:
            file = filename
        line, column = int(match.group(2)), int(match.group(3))
        if line == 0:
            # file:0:0 is the implicit top-level module of a file, which starts at 1:1.
            line, column = 1, 1
        file_fields = {"file": file, "line": line, "column": column}
    else:
        name = re.search(r'loc\("([^"]*)"', location)
        # Never the raw loc(...) text: the file name, or <unknown> when there is none.
        file_fields = {"file": filename or (name.group(1) if name else "")}
    return Diagnostic(
        severity=_severity_name(diagnostic.severity),
        message=_text(diagnostic, "message"),
        # The pass manager's "see current operation" note dumps whole functions.
        notes=tuple(
            convert(note, filename)
            for note in diagnostic.notes
            if not _text(note, "message").startswith("see current operation")
        ),
        **file_fields,  # type: ignore[arg-type]
    )


@dataclass
class DiagnosticCollector:
    """Collects every diagnostic a context emits while active, including errors."""

    filename: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def handle(self, diagnostic: ir.Diagnostic) -> bool:
        self.diagnostics.append(convert(diagnostic, self.filename))
        return True  # handled: MLIR prints nothing itself

    def add_error(self, error: ir.MLIRError) -> None:
        """Add the errors attached to an MLIRError that were not seen by the handler."""
        for info in error.error_diagnostics:
            converted = convert(info, self.filename)
            if converted not in self.diagnostics:
                self.diagnostics.append(converted)


@contextlib.contextmanager
def collect_diagnostics(context: ir.Context, filename: str = "") -> Iterator[DiagnosticCollector]:
    collector = DiagnosticCollector(filename)
    handler = context.attach_diagnostic_handler(collector.handle)
    try:
        yield collector
    finally:
        handler.detach()


# --- --verify-diagnostics -------------------------------------------------------------

_EXPECTED = re.compile(
    r"expected-(error|warning|remark|note)(?:@([+-]\d+|above|below))?\s*\{\{(.*)\}\}"
)


@dataclass
class Expectation:
    severity: str
    line: int
    pattern: re.Pattern[str]
    text: str
    comment_line: int
    matched: bool = False


def _expected_pattern(text: str) -> re.Pattern[str]:
    """MLIR's syntax: the text matches as a substring, except ``{{regex}}`` parts."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    regex = "".join(
        re.escape(part) if index % 2 == 0 else f"(?:{part})" for index, part in enumerate(parts)
    )
    return re.compile(regex)


def parse_expectations(source: str, first_line: int = 1) -> list[Expectation]:
    expectations = []
    for offset, line_text in enumerate(source.splitlines()):
        line = first_line + offset
        for match in _EXPECTED.finditer(line_text):
            severity, where, text = match.groups()
            target = line
            if where in ("above", "below"):
                target = line - 1 if where == "above" else line + 1
            elif where:
                target = line + int(where)
            expectations.append(Expectation(severity, target, _expected_pattern(text), text, line))
    return expectations


def verify(
    diagnostics: list[Diagnostic], expectations: list[Expectation], filename: str
) -> list[str]:
    """Problems found: diagnostics nobody expected, and expectations never met."""
    problems = []
    flat: list[Diagnostic] = []
    for diagnostic in diagnostics:
        flat.append(diagnostic)
        flat.extend(diagnostic.notes)
    for diagnostic in flat:
        for expectation in expectations:
            if (
                not expectation.matched
                and expectation.severity == diagnostic.severity
                and expectation.line == diagnostic.line
                and expectation.pattern.search(diagnostic.message)
            ):
                expectation.matched = True
                break
        else:
            if diagnostic.severity != "note":
                problems.append(
                    f"{diagnostic.where}: error: unexpected {diagnostic.severity}: "
                    f"{diagnostic.message}"
                )
    for expectation in expectations:
        if not expectation.matched:
            problems.append(
                f"{filename}:{expectation.comment_line}:1: error: expected {expectation.severity} "
                f'"{expectation.text}" was not produced'
            )
    return problems
