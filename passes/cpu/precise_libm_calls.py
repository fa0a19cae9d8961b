"""shlo-precise-libm-calls: compute math.expm1 and math.log1p with the C library.

Ours because upstream is wrong for us: ``convert-math-to-llvm`` lowers
``math.expm1`` to ``exp(x) - 1`` (and ``math.log1p`` to ``log(1 + x)``),
which loses every digit near 0. The C library's ``expm1``/``log1p`` are
accurate to about 1 ULP. Runs before ``convert-math-to-llvm``; f16 and bf16
reach it widened to f32 by ``math-extend-to-supported-types``.

  %0 = math.expm1 %x : f64
  ==>
  %0 = func.call @expm1(%x) : (f64) -> f64
  func.func private @expm1(f64) -> f64
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named, string_value
from shlo.pass_framework import Pass

# (math op, element type) -> C function.
LIBM_FUNCTIONS = {
    ("math.expm1", "f32"): "expm1f",
    ("math.expm1", "f64"): "expm1",
    ("math.log1p", "f32"): "log1pf",
    ("math.log1p", "f64"): "log1p",
}


def _declare(module: ir.Operation, name: str, type_: str, declared: set[str]) -> None:
    if name in declared:
        return
    existing = {
        string_value(op.attributes["sym_name"])
        for op in module.regions[0].blocks[0].operations
        if op.operation.name == "func.func"
    }
    if name not in existing:
        # The parsed module must outlive the move of its only op.
        parsed = ir.Module.parse(f"func.func private @{name}({type_}) -> {type_}", module.context)
        module.regions[0].blocks[0].append(parsed.body.operations[0].operation)
    declared.add(name)


@dataclass(frozen=True)
class PreciseLibmCallsPass(Pass):
    """Replace scalar math.expm1 and math.log1p on f32/f64 by calls to the C library."""

    argument: ClassVar[str] = "shlo-precise-libm-calls"

    def run(self, module: ir.Operation) -> None:
        declared: set[str] = set()
        for op in ops_named(module, *{name for name, _ in LIBM_FUNCTIONS}):
            type_ = op.results[0].type
            function = LIBM_FUNCTIONS.get((op.name, str(type_)))
            if function is None:  # vectors and other types keep upstream's lowering
                continue
            _declare(module, function, str(type_), declared)
            call = ir.Operation.create(
                "func.call",
                results=[type_],
                operands=[op.operands[0]],
                attributes={"callee": ir.FlatSymbolRefAttr.get(function, module.context)},
                loc=op.location,
            )
            ir.InsertionPoint(op).insert(call)
            op.results[0].replace_all_uses_with(call.results[0])
            op.erase()
