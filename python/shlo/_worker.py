"""The child process of ``shlo.isolation.Worker``: runs tasks until stdin closes."""

from __future__ import annotations

import os
import sys
import traceback

from shlo.diagnostics import ShloError
from shlo.interpreter import interpret
from shlo.isolation import read_message, write_message
from shlo.lowering import lower_to_llvm

TASKS = {"lower": lower_to_llvm, "interpret": interpret}


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
            task = TASKS[request.pop("task")]
            reply = ("ok", task(**request))
        except ShloError as error:
            reply = ("error", (error.summary, error.diagnostics))
        except Exception as error:  # reported to the caller, which raises it
            traceback.print_exc()
            reply = ("error", (f"internal error: {error}", []))
        write_message(replies, reply)


if __name__ == "__main__":
    main()
