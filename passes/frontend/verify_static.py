"""shlo-verify-static: fail, naming the first dynamic value, when a program is not fully static.

Ours because upstream is missing: no pass reports which value refinement could
not make static. Function arguments are checked first, then ops in program
order, so the error points at the origin of the dynamism.

  %0 = stablehlo.dynamic_iota %n, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
  ==>
  error: refinement left a dynamic value: result #0 of 'stablehlo.dynamic_iota' has type tensor<?xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import functions, is_static, ops_named, string_value
from shlo.pass_framework import Pass, PassError


@dataclass(frozen=True)
class VerifyStaticPass(Pass):
    """Fail, naming the first dynamic value, when a program is not fully static."""

    argument: ClassVar[str] = "shlo-verify-static"

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            if not func.regions[0].blocks:
                continue
            name = string_value(func.attributes["sym_name"])
            for index, argument in enumerate(func.regions[0].blocks[0].arguments):
                if not is_static(argument.type):
                    raise PassError(
                        func.location,
                        f"refinement left a dynamic value: argument #{index} of @{name} "
                        f"has type {argument.type}; give its static type in types=",
                    )
        for op in ops_named(module):
            for index, result in enumerate(op.results):
                if not is_static(result.type):
                    raise PassError(
                        op.location,
                        f"refinement left a dynamic value: result #{index} of '{op.name}' "
                        f"has type {result.type}",
                    )
