"""shlo-outline-tensor-kernels: move each kernel on tensors into a function, one per distinct kernel.

Ours because upstream is missing it (shlo-outline-contractions does the same
for contractions only). After shlo-fuse-rows every kernel of a function is
a top-level loop nest or linalg op on tensors. Each becomes a private
function; kernels that print the same share one function. The vector plan
and ``transform-interpreter`` then tile and vectorize each distinct kernel
once, in a small function, where a 12-layer transformer has every kernel
twelve times (GPT-2: the interpreter's 0.30 s becomes 0.06 s), and the
functions stay through bufferization and the loop passes, which also see
each distinct kernel once (GPT-2's compile: 2.3-2.5 s -> 1.6-1.8 s).

The function takes the kernel's destinations as arguments, as the op does
(destination-passing style): the caller's ``tensor.empty`` stays in the
caller, and after bufferization the kernel writes into the caller's buffer,
returned as it came (``drop-equivalent-buffer-results`` then drops the
result). A fill of that destination moves in, since the plan tiles a fill
with its consumer's loops (unless the fill repeats and got a function of
its own first). So do the slices and reshapes that only the kernel reads:
a strided view never crosses a call, where bufferization would copy it into
a buffer of the identity layout (GPT-2: 54 copies). Only kernels that
repeat are worth a function (each one costs the transforms a fixed time),
so a function called once is put back at once.

  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic ... ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>)
  ==>
  %e = tensor.empty() : tensor<8xf32>
  %r = call @shlo_tensor_kernel_0(%a, %e) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.func private @shlo_tensor_kernel_0(%a: tensor<8xf32>, %e: tensor<8xf32>) -> tensor<8xf32> {
    %r = linalg.generic ... ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>)
    return %r : tensor<8xf32>
  }
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import callee_name, defining_op
from shlo.pass_framework import Pass
from shlo.passes.cpu.outline_kernels import (
    DistinctFunctions,
    defined_functions,
    init_chain,
    outline,
)

PREFIX = "shlo_tensor_kernel_"
# Kernels: loop nests (shlo-fuse-rows' blocks of rows) and linalg ops with a body.
_LOOPS = ("scf.forall", "scf.for")


def _is_kernel(op: ir.Operation) -> bool:
    if not len(op.results) or not all(isinstance(r.type, ir.RankedTensorType) for r in op.results):
        return False
    return op.name in _LOOPS or (op.name.startswith("linalg.") and len(op.regions) > 0)


def _signature(op: ir.Operation) -> tuple[str, ...]:
    return (op.name, *(str(v.type) for v in op.operands), "->", *(str(r.type) for r in op.results))


# Tensor views that bufferize to strided views of their source.
_VIEWS = ("tensor.extract_slice", "tensor.expand_shape", "tensor.collapse_shape")


def _view_chain(op: ir.Operation, value: ir.Value) -> list[ir.Operation]:
    """The slices and reshapes that make ``value`` from another tensor, used only by ``op``.

    Outermost first; empty when ``value`` is not such a view.
    """
    chain: list[ir.Operation] = []
    while (producer := defining_op(value)) is not None:
        if producer.name not in _VIEWS or producer.parent != op.parent:
            break
        if len(list(value.uses)) != 1:  # its one use: op, or the view after it
            break
        chain.insert(0, producer)
        value = producer.operands[0]
    return chain


def _moved_in(op: ir.Operation) -> list[ir.Operation]:
    """The producers outlined with ``op``: views of its inputs and fills of its destinations.

    A destination's ``tensor.empty`` stays with the caller, which then owns
    the buffer the kernel writes.
    """
    inputs = list(op.operands)[: len(op.operands) - len(op.results)]
    views = [p for operand in inputs for p in _view_chain(op, operand)]
    chains = [init_chain(op, operand) for operand in op.operands]
    # Each chain starts at its tensor.empty, which stays.
    fills = [p for chain in chains if chain and chain[0].name == "tensor.empty" for p in chain[1:]]
    return [*views, *fills]


@dataclass(frozen=True)
class OutlineTensorKernelsPass(Pass):
    """Outline the top-level kernels on tensors of every function; identical ones share one."""

    argument: ClassVar[str] = "shlo-outline-tensor-kernels"

    def run(self, module: ir.Operation) -> None:
        candidates = [
            op.operation
            for function in defined_functions(module)
            for block in function.regions[0].blocks
            for op in block.operations
            if _is_kernel(op.operation)
        ]
        # Only kernels that may repeat: identical kernels have the same
        # signature (not conversely; ``outline`` compares whole functions).
        signatures = [_signature(op) for op in candidates]
        repeats = Counter(signatures)
        kernels = DistinctFunctions()
        calls: dict[str, list[ir.Operation]] = {}
        for op, signature in zip(candidates, signatures):
            if repeats[signature] > 1:
                ops = [*_moved_in(op), op]
                call = outline(module, ops, f"{PREFIX}{len(kernels)}", kernels)
                calls.setdefault(callee_name(call), []).append(call)
        symbols = ir.SymbolTable(module)
        for name, uses in calls.items():
            if len(uses) == 1:
                _inline(uses[0], symbols[name])


def _inline(call: ir.Operation, function: ir.Operation) -> None:
    """Put the body of ``function``, called only by ``call``, back in place of the call."""
    entry = function.regions[0].blocks[0]
    for argument, operand in zip(entry.arguments, call.operands):
        argument.replace_all_uses_with(operand)
    ops = [op.operation for op in entry.operations]
    for op in ops[:-1]:
        op.move_before(call)
    for result, value in zip(call.results, ops[-1].operands):
        result.replace_all_uses_with(value)
    call.erase()
    function.erase()
