"""Writing a generated document, or checking that the committed one is current."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(output: Path, root: Path, text: str, command: str, check: bool) -> int:
    """Write ``text`` to ``output``; with ``check``, exit status 1 (and say so) if it differs.

    ``root`` is the checkout the message names ``output`` from.
    """
    if not check:
        output.write_text(text, encoding="utf-8")
        return 0
    if not output.exists() or output.read_text(encoding="utf-8") != text:
        where = output.relative_to(root)
        print(f"{where} is out of date; regenerate it with `{command}`", file=sys.stderr)
        return 1
    return 0
