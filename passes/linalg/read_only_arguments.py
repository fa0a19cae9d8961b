"""shlo-read-only-arguments: forbid bufferization from writing into the arguments of public functions.

Ours because upstream is missing a default: ``one-shot-bufferize`` with
``bufferize-function-boundaries`` treats tensor arguments as writable, so an
in-place update (``dynamic_update_slice``, ``scatter``) would overwrite the
caller's numpy input. Marking the arguments of public functions (the
entry point) not writable makes bufferization copy first. Private functions
keep writable arguments: bufferization sees their callers and copies an
operand only where the caller still needs it, so a kernel function
(shlo-outline-tensor-kernels) writes into the destination it is passed.

  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
  ==>
  func.func @main(%arg0: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import functions, is_private
from shlo.pass_framework import Pass


def mark_read_only(function: ir.Operation) -> None:
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    old = (
        list(ir.ArrayAttr(function.attributes["arg_attrs"]))
        if "arg_attrs" in function.attributes
        else [ir.DictAttr.get({})] * len(function_type.inputs)
    )
    new = []
    for attrs in old:
        entries = {named.name: named.attr for named in ir.DictAttr(attrs)}
        entries["bufferization.writable"] = ir.BoolAttr.get(False)
        new.append(ir.DictAttr.get(entries))
    function.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


@dataclass(frozen=True)
class ReadOnlyArgumentsPass(Pass):
    """Mark every tensor argument of every public function ``bufferization.writable = false``."""

    argument: ClassVar[str] = "shlo-read-only-arguments"

    def run(self, module: ir.Operation) -> None:
        for function in functions(module):
            if function.regions[0].blocks and not is_private(function):
                mark_read_only(function)
