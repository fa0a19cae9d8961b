"""Per-op-kind code generation recipes, written in MLIR's transform dialect.

A recipe says how the linalg ops of one kind (contractions, convolutions,
reductions, elementwise) are transformed before bufferization: tiling,
packing, vectorization. ``CodegenStrategy.recipes`` names the recipes to apply;
``shlo-insert-codegen-recipes`` puts their transform sequence into the module,
upstream's ``transform-interpreter`` applies it, and
``shlo-erase-codegen-recipes`` removes it again. Swapping a recipe changes
only how that kind of op is generated.
"""

from __future__ import annotations

from dataclasses import dataclass

# The linalg ops of each kind, as stablehlo-legalize-to-linalg emits them.
OP_KINDS: dict[str, tuple[str, ...]] = {
    "contraction": ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.dot"),
    "convolution": (
        "linalg.conv_1d_nwc_wcf",
        "linalg.conv_2d_nhwc_hwcf",
        "linalg.conv_3d_ndhwc_dhwcf",
        "linalg.depthwise_conv_2d_nhwc_hwcm",
    ),
}


@dataclass(frozen=True)
class Recipe:
    """A transform applied to every op of ``kind``; ``%ops`` is the handle to them."""

    name: str
    kind: str
    transform: str

    def sequence_body(self, index: int) -> str:
        names = ", ".join(f'"{op}"' for op in OP_KINDS[self.kind])
        body = self.transform.replace("%ops", f"%ops{index}")
        return (
            f"    %ops{index} = transform.structured.match ops{{[{names}]}} in %root"
            " : (!transform.any_op) -> !transform.any_op\n"
            f"    {body}\n"
        )


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        # Cache-sized output tiles for matrix products: 32x32 (and one batch at a time).
        Recipe(
            "tile-matmul-32",
            "contraction",
            "%tiled, %loops:2 = transform.structured.tile_using_for %ops tile_sizes [32, 32]"
            " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)",
        ),
    )
}

SEQUENCE_NAME = "__transform_main"


def transform_module_text(recipe_names: tuple[str, ...]) -> str:
    """The named sequence that applies ``recipe_names`` in order."""
    unknown = [name for name in recipe_names if name not in RECIPES]
    if unknown:
        raise ValueError(
            f"unknown codegen recipe {unknown[0]!r}; known: {', '.join(sorted(RECIPES))}"
        )
    bodies = "".join(RECIPES[name].sequence_body(i) for i, name in enumerate(recipe_names))
    return (
        f"transform.named_sequence @{SEQUENCE_NAME}"
        "(%root: !transform.any_op {transform.readonly}) {\n"
        f"{bodies}    transform.yield\n}}"
    )
