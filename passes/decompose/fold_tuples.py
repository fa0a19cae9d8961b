"""shlo-fold-tuples: forward tuple elements to their uses and erase tuples left unused.

Ours because upstream is missing: neither ``canonicalize`` nor
``stablehlo-legalize-to-linalg`` folds ``get_tuple_element`` of ``tuple``, and
tuples have no buffer form, so they reach bufferization ("op was not
bufferized").

  %t = stablehlo.tuple %a, %b : tuple<tensor<2xf64>, tensor<i64>>
  %0 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf64>, tensor<i64>>) -> tensor<i64>
  ==>
  (uses of %0 use %b; %t is erased)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import defining_op, ops_named
from shlo.pass_framework import Pass


def _defining_tuple(value: ir.Value) -> ir.Operation | None:
    owner = defining_op(value)
    return owner if owner is not None and owner.name == "stablehlo.tuple" else None


def forward_element(op: ir.Operation) -> None:
    tuple_op = _defining_tuple(op.operands[0])
    if tuple_op is None:
        return
    index = ir.IntegerAttr(op.attributes["index"]).value
    op.results[0].replace_all_uses_with(tuple_op.operands[index])
    op.erase()


@dataclass(frozen=True)
class FoldTuplesPass(Pass):
    """Forward tuple elements to their uses and erase tuples left unused."""

    argument: ClassVar[str] = "shlo-fold-tuples"

    def run(self, module: ir.Operation) -> None:
        # Program order: an element that is itself a tuple is forwarded before its own uses.
        for op in ops_named(module, "stablehlo.get_tuple_element"):
            forward_element(op)
        # Reverse order: a tuple nested in another becomes unused once its user is gone.
        for op in reversed(ops_named(module, "stablehlo.tuple")):
            if all(not list(result.uses) for result in op.results):
                op.erase()
