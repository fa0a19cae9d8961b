"""shlo-check-lowered: name every StableHLO op and custom call that no lowering handled.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` is a
partial conversion that leaves ops it cannot lower in place, and the first
one then fails much later with "op was not bufferized", naming neither the op
nor the target. Run right after the linalg legalization, before code
generation, this pass reports all of them at once, each at its location.

  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<3xf32>) -> tensor<3xf32>
  ==>
  error: custom call @my_kernel is not supported on target cpu: no handler is registered for it
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named, string_value
from shlo.pass_framework import Pass, PassError

_UNLOWERED_DIALECTS = ("stablehlo.", "chlo.")


def _is_unlowered(op: ir.Operation) -> bool:
    return op.name.startswith(_UNLOWERED_DIALECTS)


def unsupported_message(op: ir.Operation, target: str) -> str:
    if op.name == "stablehlo.custom_call":
        callee = string_value(op.attributes["call_target_name"])
        return (
            f"custom call @{callee} is not supported on target {target}: "
            "no handler is registered for it"
        )
    return f"'{op.name}' is not supported on target {target}: no lowering handles it"


@dataclass(frozen=True)
class CheckLoweredPass(Pass):
    """Name every StableHLO op and custom call that no lowering handled, with its location."""

    argument: ClassVar[str] = "shlo-check-lowered"
    target: str = "cpu"

    def run(self, module: ir.Operation) -> None:
        # Ops nested in an unlowered op (its region's return) are not reported twice.
        unlowered = [
            op for op in ops_named(module) if _is_unlowered(op) and not _is_unlowered(op.parent)
        ]
        if not unlowered:
            return
        *others, last = unlowered
        for op in others:
            op.location.emit_error(unsupported_message(op, self.target))
        raise PassError(last.location, unsupported_message(last, self.target))
