"""The exit policy shared by shlo's command-line tools: codes, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence


def run_and_exit(
    prog: str,
    run: Callable[[Sequence[str]], int],
    user_errors: tuple[type[Exception], ...] = (),
    describe: Callable[[Exception], str] = str,
) -> None:
    """Exit with ``run``'s code; 1 for ``user_errors``, 3 for anything unexpected.

    ``SHLO_DEBUG=1`` lets internal errors raise, with their traceback.
    """
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
        print(
            f"{prog}: internal error: {type(error).__name__}: {error} "
            "(set SHLO_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        code = 3
    sys.exit(code)
