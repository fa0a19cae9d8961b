"""Diagnostics: capture them from MLIR, print them as ``file:line:col``, match expected ones."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from shlo._mlir_compat import ir

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
        lines = [f"{self.where}: {self.severity}: {self.message}"]
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


def convert(diagnostic: ir.Diagnostic | ir.DiagnosticInfo, filename: str = "") -> Diagnostic:
    """Our Diagnostic from the bindings' one; ``filename`` replaces the "-" of parsed strings."""
    location = str(diagnostic.location)
    match = _FILE_LINE_COL.search(location)
    if match:
        file = match.group(1)
        if file == "-" and filename:
            file = filename
        file_fields = {"file": file, "line": int(match.group(2)), "column": int(match.group(3))}
    else:
        name = re.search(r'loc\("([^"]*)"', location)
        file_fields = {"file": filename or (name.group(1) if name else location)}
    return Diagnostic(
        severity=_severity_name(diagnostic.severity),
        message=diagnostic.message,
        # The pass manager's "see current operation" note dumps whole functions.
        notes=tuple(
            convert(note, filename)
            for note in diagnostic.notes
            if not note.message.startswith("see current operation")
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
