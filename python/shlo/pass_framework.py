"""Base class for shlo's Python passes, and the parser for their options.

A pass is a frozen dataclass: its typed fields are its options, spelled in
MLIR's syntax ``shlo-name{opt=1 list=a,b}``. Passes anchor on
``builtin.module`` and walk the IR themselves, because the bindings cannot nest
Python passes on other ops.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import typing
from typing import Any, ClassVar

from shlo._mlir_compat import ir, passmanager

logger = logging.getLogger("shlo.passes")


@functools.cache
def _option_types(cls: type) -> dict[str, Any]:
    # Once per class: get_type_hints evaluates every annotation, 4 ms per compile.
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


class PassError(Exception):
    """An error in the user's IR, reported as a diagnostic at ``location``."""

    def __init__(self, location: ir.Location, message: str) -> None:
        super().__init__(message)
        self.location = location
        self.message = message


class OptionError(ValueError):
    """A pass option that does not parse or does not exist."""


def no_match(op: ir.Operation | ir.OpView, reason: str) -> bool:
    """Log why a rewrite pattern did not apply; a truthy return means "no match"."""
    # Checked first: reading the name is a call into the bindings, and folding
    # patterns fail on thousands of ops per program.
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: no match: %s", op.name if hasattr(op, "name") else op, reason)
    return True


def split_top_level(text: str, separators: str = ",") -> list[str]:
    """Split ``text`` at separators that are not nested in brackets or quotes."""
    parts: list[str] = []
    depth = 0
    quote = ""
    current: list[str] = []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif depth == 0 and char in separators:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    if len(value) >= 2 and value[0] == "{" and value[-1] == "}":
        return value[1:-1]
    return value


def _convert(name: str, annotation: Any, value: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin is tuple:
        (item_type, _) = typing.get_args(annotation)
        return tuple(_convert(name, item_type, item) for item in split_top_level(value))
    if annotation is bool:
        if value in ("true", "1", ""):
            return True
        if value in ("false", "0"):
            return False
        raise OptionError(f"option '{name}' expects true or false, got '{value}'")
    try:
        return annotation(value)
    except ValueError:
        raise OptionError(f"option '{name}' expects {annotation.__name__}, got '{value}'") from None


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(_format(item) for item in value)
    return str(value)


@dataclasses.dataclass(frozen=True)
class Pass:
    """Subclasses set ``argument`` and implement ``run`` on the module operation."""

    argument: ClassVar[str]

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""

    @classmethod
    def option_types(cls) -> dict[str, Any]:
        return _option_types(cls)

    @classmethod
    def from_options(cls, text: str) -> Pass:
        """Build the pass from MLIR option text: ``opt=1 list=a,b`` (braces optional)."""
        types = cls.option_types()
        values: dict[str, Any] = {}
        for item in split_top_level(_unquote(text.strip()), separators=" "):
            name, _, raw = item.partition("=")
            key = name.strip().replace("-", "_")
            if key not in types:
                known = ", ".join(sorted(field.replace("_", "-") for field in types)) or "none"
                raise OptionError(f"'{cls.argument}' has no option '{name}' (options: {known})")
            values[key] = _convert(name, types[key], _unquote(raw.strip()))
        return cls(**values)

    def options_text(self) -> str:
        items = [
            f"{field.name.replace('_', '-')}={_format(getattr(self, field.name))}"
            for field in dataclasses.fields(self)
        ]
        return "{" + " ".join(items) + "}" if items else ""

    def add_to(self, pm: passmanager.PassManager) -> None:
        pm.add(
            self._execute,
            name=type(self).__name__,
            argument=self.argument,
            description=self.summary(),
        )

    def _execute(self, op: ir.Operation, pass_: Any) -> None:
        # Exceptions must never unwind through C++: report them as diagnostics.
        try:
            with op.context, op.location:
                self.run(op)
        except PassError as error:
            error.location.emit_error(error.message)
            pass_.signal_pass_failure()
        except Exception as error:  # converted to a diagnostic
            logger.debug("internal error in %s", self.argument, exc_info=True)
            op.location.emit_error(
                f"internal error in {self.argument}: {type(error).__name__}: {error}"
            )
            pass_.signal_pass_failure()


@dataclasses.dataclass(frozen=True)
class PassPipeline(Pass):
    """A named sequence of passes, expanded when the pipeline is built."""

    def elements(self) -> list[str]:
        raise NotImplementedError

    def run(self, module: ir.Operation) -> None:
        raise TypeError(f"{self.argument} is a pipeline and is expanded, not run")
