"""shlo-erase-codegen-recipes: remove transform sequences once they are applied.

Ours because upstream is missing: ``transform-interpreter`` leaves its
sequence in the module, and the LLVM conversion cannot handle it.

  module attributes {transform.with_named_sequence} {
    func.func @main ...
    transform.named_sequence @__transform_main(...) { ... }
  }
  ==>
  module {
    func.func @main ...
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.backends.cpu.codegen_recipes import DOT_ROWS, FUSED_BLOCK, PARTIAL_TILES
from shlo.ir_utils import ops_with_attributes
from shlo.pass_framework import Pass


@dataclass(frozen=True)
class EraseCodegenRecipesPass(Pass):
    """Erase transform.named_sequence ops, the module's transform attribute and op tags."""

    argument: ClassVar[str] = "shlo-erase-codegen-recipes"

    def run(self, module: ir.Operation) -> None:
        for op in list(module.regions[0].blocks[0].operations):
            if op.operation.name == "transform.named_sequence":
                op.operation.erase()
        if "transform.with_named_sequence" in module.attributes:
            del module.attributes["transform.with_named_sequence"]
        _erase_tags(module)


# What shlo-fuse-rows and shlo-plan-vector-codegen put on the ops they plan, and the codegen
# recipes on the loops over partial tiles.
_TAGS = (
    "shlo.codegen_op",
    "shlo.vectorize",
    "shlo.drop_unit_dims",
    "shlo.row_op",
    PARTIAL_TILES,
    FUSED_BLOCK,
    DOT_ROWS,
)


def _erase_tags(module: ir.Operation) -> None:
    for op in ops_with_attributes(module, *_TAGS):
        for tag in _TAGS:
            if tag in op.attributes:
                del op.attributes[tag]
