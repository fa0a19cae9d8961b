"""The shared transforms every backend runs: static StableHLO -> linalg on tensors.

Our decompositions first turn the StableHLO ops that upstream's
``stablehlo-legalize-to-linalg`` leaves alone or lowers wrongly into ops it
lowers well (passes/decompose); then upstream lowers to linalg, and
``shlo-check-lowered`` names, with its location and the target, every op
left that no backend can compile.
"""

from __future__ import annotations

from shlo.linalg_stages import CANONICALIZE

# Our lowerings for StableHLO ops that upstream stablehlo-legalize-to-linalg
# leaves alone or lowers wrongly, in the order they run.
DECOMPOSITIONS: tuple[str, ...] = (
    # Registered custom calls (jax's LAPACK calls, users' own) become the ops
    # below lower: stablehlo.cholesky, stablehlo.triangular_solve, ...
    "shlo-lower-custom-calls",
    # First: collectives become slices, concatenates and maps that later passes may fix.
    "shlo-lower-collectives",
    "shlo-lower-scatter",
    "shlo-lower-sort",
    "shlo-lower-select-and-scatter",
    "shlo-lower-fft",
    # Before the triangular solves: a blocked Cholesky factorization makes some.
    "shlo-lower-cholesky",
    "shlo-lower-triangular-solve",
    "shlo-lower-rng",
    # After the lowerings above, which may emit the ops it fixes.
    "shlo-fix-elementwise-semantics",
    # Before the saturation, whose bounds a small float may not hold.
    "shlo-widen-small-float-converts",
    # NaN -> 0 and saturation for float-to-integer converts, as the interpreter.
    "shlo-saturate-float-to-int",
    "shlo-lower-complex-bitcast",
    "shlo-lower-complex-cbrt",
    # Narrow-float convolutions and sums in f32, cumsums in blocks, as XLA
    # computes them (first: the convolution splits below then add f32 parts).
    "shlo-accumulate-narrow-floats-as-xla",
    # Transposed convolutions: one per output phase, without the input's
    # dilation zeros (first: the 3-D split leaves input dilation alone).
    "shlo-split-transposed-convolutions",
    # 3-D convolutions: sums of 2-D ones, which the recipes take (before the
    # grouped split, which then sees 2-D ones).
    "shlo-split-spatial-convolutions",
    # Grouped convolutions are scalar loops as upstream lowers them.
    "shlo-split-grouped-convolutions",
    "shlo-normalize-dot-general",
    # Complex products are scalar loops: four real ones (after the
    # normalization above, which makes every dot a dot_general).
    "shlo-split-complex-dots",
    # After the widening above: every contraction becomes a (batch) matmul.
    "shlo-canonicalize-dot-general",
    "shlo-normalize-reduce",
    "shlo-fold-tuples",
    "shlo-lower-reduce-window-scan",
    # A slice's operand computed whole for it: compute only the slice (after
    # the lowerings above, which emit slices).
    "shlo-sink-slices",
    # After the lowerings above, which may emit loops; on stablehlo.while.
    "shlo-hoist-loop-invariants",
    # Keep last: the lowerings above may emit stablehlo.while and stablehlo.if.
    "shlo-lower-control-flow",
)


# Upstream's legalization; it makes invalid IR of some bad input, so a
# backend verifies the module after it before running more passes.
LEGALIZE_TO_LINALG = "stablehlo-legalize-to-linalg"


def to_linalg_stage(target: str, decompositions: tuple[str, ...] = DECOMPOSITIONS) -> list[str]:
    """Pipeline elements from static StableHLO to linalg on tensors, checked for ``target``."""
    return [
        *decompositions,
        # Copies shared cheap producers into the fusions below (indexing maps).
        "shlo-fuse-elementwise-by-indexing",
        LEGALIZE_TO_LINALG,
        # Before any fusion: all-parallel ops that read their init fuse wrongly.
        "shlo-parallel-inits-to-inputs",
        # Before code generation: name every op nothing above lowered.
        f"shlo-check-lowered{{target={target}}}",
        "stablehlo-convert-to-signless",
        CANONICALIZE,
    ]
