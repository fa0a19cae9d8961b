"""shlo-insert-codegen-recipes: add the transform sequence of named codegen recipes.

Ours because upstream is missing: ``transform-interpreter`` runs a sequence
that must already be in the module (or a file). This pass writes the
sequence for the recipes of ``shlo.backends.cpu.codegen_recipes`` into the module, so a
pipeline string selects per-op-kind code generation by name. Run
``transform-interpreter`` next and ``shlo-erase-codegen-recipes`` after it.

  module { func.func @main ... }
  ==> shlo-insert-codegen-recipes{recipes=tile-matmul-32}
  module attributes {transform.with_named_sequence} {
    func.func @main ...
    transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
      %ops0 = transform.structured.match ops{["linalg.matmul", ...]} in %root : ...
      %tiled, %loops:2 = transform.structured.tile_using_for %ops0 tile_sizes [32, 32] : ...
      transform.yield
    }
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.backends.cpu.codegen_recipes import (
    CONTRACTIONS,
    DOT_ROWS,
    ContractionShape,
    transform_module_text,
)
from shlo.ir_utils import ops_named, static_shape
from shlo.pass_framework import Pass, PassError


@dataclass(frozen=True)
class InsertCodegenRecipesPass(Pass):
    """Add the transform sequence applying ``recipes`` (names from shlo.backends.cpu.codegen_recipes).

    ``threads``: how many threads the recipes that split work evenly plan for.
    The matmuls' thread tiles also depend on their shapes, read from the module.
    """

    argument: ClassVar[str] = "shlo-insert-codegen-recipes"
    recipes: tuple[str, ...] = ()
    threads: int = 1

    def run(self, module: ir.Operation) -> None:
        try:
            text = transform_module_text(self.recipes, self.threads, contraction_shapes(module))
        except ValueError as error:
            raise PassError(module.location, str(error)) from None
        append_transform_sequence(module, text)


def contraction_shapes(module: ir.Operation) -> list[ContractionShape]:
    """(name without ``linalg.``, result shape, element bits) of each (batch) matmul and
    convolution on static tensors of integers or floats, and ("dot_rows", (), 0) for each
    generic tagged DOT_ROWS."""
    shapes = []
    for op in ops_named(module, *CONTRACTIONS, "linalg.generic"):
        if op.name == "linalg.generic":
            # The recipe takes every tagged op: it needs only to know of one.
            if DOT_ROWS in op.attributes:
                shapes.append(("dot_rows", (), 0))
            continue
        shape = static_shape(op.results[0]) if len(op.results) == 1 else None
        element = ir.ShapedType(op.results[0].type).element_type if shape is not None else None
        if isinstance(element, (ir.IntegerType, ir.FloatType)):
            shapes.append((op.name.removeprefix("linalg."), tuple(shape), element.width))
    return shapes


def append_transform_sequence(module: ir.Operation, text: str) -> None:
    """Parse the transform ``text`` (a named sequence) into ``module`` for transform-interpreter."""
    sequence = ir.Module.parse(
        f"module attributes {{transform.with_named_sequence}} {{\n{text}\n}}", module.context
    )
    block = module.regions[0].blocks[0]
    for op in list(sequence.body.operations):
        block.append(op.operation)
    module.attributes["transform.with_named_sequence"] = ir.UnitAttr.get(module.context)
