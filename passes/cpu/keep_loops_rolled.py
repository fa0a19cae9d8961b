"""shlo-keep-loops-rolled: LLVM does not unroll a loop that holds other loops.

Ours because upstream has no pass that sets loop annotations: ``scf.for``
carries a ``loop_annotation`` attribute that ``convert-scf-to-cf`` moves to
the loop's latch branch and LLVM reads as ``llvm.loop`` metadata, but nothing
sets it.

The loops around the vector code are ours (tiles for threads, caches and
registers, rows of a block): LLVM's unroller would copy each whole inner
loop nest of a loop of few iterations (6 blocks of 128 rows, 8 register
tiles), which makes the code generator's work several times larger and
saves only the outer loop's branch. An innermost loop (a row's reduction
over 16 vectors) is left to LLVM: unrolling it saves a branch for every
few vector ops, and its copies are small. Measured on GPT-2 (1 layer),
LLVM's serial time: 0.52 s with no loop marked, 0.44 s with the loops that
hold loops (this pass; the bench models' run times within 2%), 0.39 s with
every loop, which made layernorm [1024, 1024] 3-8% slower (its rows'
reductions unrolled no more); see docs/cpu.md.

  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c128 step %c1 { ... }
  }
  ==>
  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c128 step %c1 { ... }
  } {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass

KEEP_ROLLED = "#llvm.loop_annotation<unroll = <disable = true>>"


@dataclass(frozen=True)
class KeepLoopsRolledPass(Pass):
    """Mark each scf.for that holds another loop: LLVM must not unroll it."""

    argument: ClassVar[str] = "shlo-keep-loops-rolled"

    def run(self, module: ir.Operation) -> None:
        annotation = ir.Attribute.parse(KEEP_ROLLED)
        for loop in ops_named(module, "scf.for"):
            # Marked from the innermost loop out: every enclosing scf.for
            # holds a loop. Loops nested in non-scf.for ops count too.
            parent = loop.parent
            while parent is not None and parent.name != "func.func":
                if parent.name == "scf.for":
                    if "loop_annotation" in parent.attributes:
                        break  # and so are the loops around it
                    parent.attributes["loop_annotation"] = annotation
                parent = parent.parent
