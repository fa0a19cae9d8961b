"""docs/cli.md mentions every flag of shlo-opt, so new flags cannot go undocumented."""

from __future__ import annotations

import re
from pathlib import Path

from shlo.tools.shlo_opt import make_parser

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def long_options() -> list[str]:
    return sorted(
        option
        for action in make_parser()._actions
        for option in action.option_strings
        if option.startswith("--")
    )


def test_parser_has_long_options() -> None:
    # Guards the test below against a parser it cannot see into.
    assert "--pass-pipeline" in long_options()


def test_every_long_option_is_documented() -> None:
    text = CLI_MD.read_text(encoding="utf-8")
    # A whole flag: "--mlir-timing" must not count as "--mlir-timing-foo".
    missing = [
        option for option in long_options() if not re.search(re.escape(option) + r"(?![\w-])", text)
    ]
    assert not missing, f"docs/cli.md does not mention: {', '.join(missing)}"


def test_pass_flags_and_environment_are_documented() -> None:
    text = CLI_MD.read_text(encoding="utf-8")
    for term in ("--<pass-name>", "SHLO_REPRO_DIR", "SHLO_DEBUG", "shlo-run", "shlo-compile"):
        assert term in text
