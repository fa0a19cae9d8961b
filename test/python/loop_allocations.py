"""How many buffers a program still allocates inside loops after the CPU loop stage."""

from __future__ import annotations

import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.ir_utils import ops_named


def allocations_in_loops(source: bytes, loops: tuple[str, ...], without: str | None = None) -> int:
    """memref.alloc ops nested in one of ``loops`` after the loop-codegen stage.

    ``without``: a pass left out of the pipeline, to count what it saves.
    """
    module = shlo.load_module(source)
    elements = [e for e in CpuPipeline().elements(through="loop-codegen") if e != without]
    shlo.run_pipeline(module, elements)
    count = 0
    for alloc in ops_named(module.operation, "memref.alloc"):
        parent = alloc.parent
        while parent is not None and parent.name not in ("func.func", *loops):
            parent = parent.parent
        count += parent is not None and parent.name != "func.func"
    return count
