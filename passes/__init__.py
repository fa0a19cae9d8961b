"""The registry of shlo's Python passes, by pass argument.

One pass per module; each module docstring is a summary line plus a
before/after example, and docs/passes.md is generated from them.
"""

from __future__ import annotations

from shlo.pass_framework import Pass
from shlo.passes.canonicalize_dynamic_reduce_window import CanonicalizeDynamicReduceWindowPass
from shlo.passes.check_shape_assertions import CheckShapeAssertionsPass
from shlo.passes.remove_dynamism import RemoveDynamismPass
from shlo.passes.simplify import SimplifyPass
from shlo.passes.verify_static import VerifyStaticPass

PASSES: dict[str, type[Pass]] = {
    CanonicalizeDynamicReduceWindowPass.argument: CanonicalizeDynamicReduceWindowPass,
    CheckShapeAssertionsPass.argument: CheckShapeAssertionsPass,
    RemoveDynamismPass.argument: RemoveDynamismPass,
    SimplifyPass.argument: SimplifyPass,
    VerifyStaticPass.argument: VerifyStaticPass,
}

__all__ = ["PASSES"]
