"""shlo-lower-custom-calls: replace custom calls by the ops their registered handlers build.

Ours because upstream has no registry: jax's CPU exports call LAPACK
through ``stablehlo.custom_call @lapack_*_ffi`` (``jnp.linalg.cholesky``,
``jax.scipy.linalg.solve_triangular``, ...), and users have their own
targets. ``shlo.custom_calls`` maps a target to its handler; this pass calls
it for every custom call that has one and leaves the others, which
``shlo-check-lowered`` then names with their location. The built-in LAPACK
handlers (``lapack_handlers.py``) compute the LAPACK routine's results from StableHLO ops that
the later decompositions lower (``stablehlo.cholesky``,
``stablehlo.triangular_solve``); they follow LAPACK, not jax's use of it, so
jax's own checks of ``info`` still apply. The custom call's layouts only say
how LAPACK sees the buffers: the handlers compute on the logical arrays.

  %l, %info = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, ...} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
  ==>
  %c = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
  %l = stablehlo.select %lower_triangle, %c, %a : tensor<3x3xi1>, tensor<3x3xf32>
  %info = stablehlo.convert (reduce or (not is_finite %c) or (diagonal and not %c > 0)) : tensor<i32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.custom_calls import handler_for
from shlo.ir_utils import ops_named, string_value
from shlo.pass_framework import Pass


def lower_with(op: ir.Operation, values: list[ir.Value]) -> None:
    """Replace ``op``'s results by ``values`` and erase it."""
    for result, value in zip(op.results, values):
        result.replace_all_uses_with(value)
    op.erase()


def _target(op: ir.Operation) -> str:
    return string_value(op.attributes["call_target_name"])


@dataclass(frozen=True)
class LowerCustomCallsPass(Pass):
    """Replace custom calls by the ops their registered handlers build."""

    argument: ClassVar[str] = "shlo-lower-custom-calls"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.custom_call"):
            handler = handler_for(_target(op))
            if handler is not None:
                handler(op)
