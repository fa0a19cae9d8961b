"""shlo-parallel-inits-to-inputs: make all-parallel linalg.generic ops that read their init pure.

Ours because upstream is wrong: ``stablehlo-legalize-to-linalg`` lowers a
``dot_general`` without contracting dimensions (and a ``reduce`` over no
dimensions) to a linalg.generic whose loops are all parallel but whose body
accumulates into its zero-filled (or init-filled) output. Such an op is still
elementwise, yet ``linalg-fuse-elementwise-ops`` fuses it into a consuming
contraction by keeping the producer's init as an extra output of the fused
op; the fused loop nest then updates that output once per index of the
consumer's reduction loops, re-accumulating it (Flax BERT, RoBERTa and
ELECTRA gave wrong answers). When every loop is parallel each output element
is written exactly once, so the init is just another input: moving it to the
inputs and giving the op a fresh ``tensor.empty`` output is equivalent, and
the op becomes a pure elementwise producer that fuses correctly.

  %2 = linalg.generic {indexing_maps = [#a, #b, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<2xf32>, tensor<3xf32>) outs(%zeros : tensor<2x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  ==>
  %e = tensor.empty() : tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#a, #b, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y, %zeros : tensor<2xf32>, tensor<3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %in_1: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %in_1, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, tensor
from shlo.ir_utils import linalg_generic_parts, ops_named, rebuild_generic
from shlo.pass_framework import Pass


def move_read_inits(op: ir.Operation) -> None:
    """Rebuild ``op`` with each read init as an input and a fresh empty output in its place."""
    if not op.results:
        return  # buffer semantics
    parts = linalg_generic_parts(op)
    if not parts.all_parallel:
        return  # a real reduction: the init is the accumulator
    read = [i for i, arg in enumerate(parts.output_args) if list(arg.uses)]
    if not read:
        return
    with op.location, ir.InsertionPoint(op):
        fresh = []
        for index, init in enumerate(parts.outputs):
            if index in read:
                init_type = ir.RankedTensorType(init.type)
                init = tensor.empty(list(init_type.shape), init_type.element_type)
            fresh.append(init)
    rebuild_generic(
        op,
        [
            *zip(parts.inputs, parts.input_map_attrs),
            *((parts.outputs[i], parts.output_map_attrs[i]) for i in read),
        ],
        list(zip(fresh, parts.output_map_attrs)),
        # The body reads each moved init through its new input argument.
        [
            *([arg] for arg in parts.input_args),
            *([parts.output_args[i]] for i in read),
            *([] for _ in fresh),
        ],
    )


@dataclass(frozen=True)
class ParallelInitsToInputsPass(Pass):
    """Make all-parallel linalg.generic ops that read their init pure: the init becomes an input."""

    argument: ClassVar[str] = "shlo-parallel-inits-to-inputs"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "linalg.generic"):
            move_read_inits(op)
