"""The exit policy shared by shlo's command-line tools: codes, never a traceback."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Sequence


class InternalError(Exception):
    """A bug in shlo, not in the user's input: exit 3."""


def robust_output() -> None:
    """Print text that is not valid UTF-8 (file names, MLIR strings) escaped, never raise."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def run_and_exit(
    prog: str,
    run: Callable[[Sequence[str]], int],
    user_errors: tuple[type[Exception], ...] = (),
    describe: Callable[[Exception], str] = str,
) -> None:
    """Exit with ``run``'s code; 1 for ``user_errors``, 3 for anything unexpected.

    ``SHLO_DEBUG=1`` lets internal errors raise, with their traceback.
    """
    robust_output()
    try:
        code = run(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    except user_errors as error:
        print(describe(error), file=sys.stderr)
        code = 1
    except Exception as error:  # the CLI never shows a traceback
        if os.environ.get("SHLO_DEBUG"):
            raise
        detail = (
            str(error) if isinstance(error, InternalError) else f"{type(error).__name__}: {error}"
        )
        if not detail.startswith("internal error"):
            detail = f"internal error: {detail}"
        print(f"{prog}: {detail} (set SHLO_DEBUG=1 for a traceback)", file=sys.stderr)
        code = 3
    sys.exit(code)
