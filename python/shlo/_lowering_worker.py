"""The child process of ``shlo.isolation.Worker``: lowers modules until stdin closes."""

from __future__ import annotations

import os
import sys
import traceback

from shlo.diagnostics import ShloError
from shlo.isolation import read_message, write_message
from shlo.lowering import lower_to_llvm


def main() -> None:
    # Replies go to the original stdout; anything printed there later, by C++
    # or Python, goes to stderr instead and cannot corrupt the reply stream.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        try:
            request = read_message(requests)
        except EOFError:
            return
        try:
            reply = ("ok", lower_to_llvm(**request))
        except ShloError as error:
            reply = ("error", (error.summary, error.diagnostics))
        except Exception as error:  # reported to the caller, which raises it
            traceback.print_exc()
            reply = ("error", (f"internal error while lowering: {error}", []))
        write_message(replies, reply)


if __name__ == "__main__":
    main()
