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
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass


def _all_parallel(op: ir.Operation) -> bool:
    return all("parallel" in str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"]))


def _segment_sizes(op: ir.Operation) -> tuple[int, int]:
    inputs, outputs = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    return inputs, outputs


def move_read_inits(op: ir.Operation) -> None:
    """Rebuild ``op`` with each read init as an input and a fresh empty output in its place."""
    if not op.results or not _all_parallel(op):
        return  # buffer semantics, or a real reduction: the init is the accumulator
    n_inputs, n_outputs = _segment_sizes(op)
    old_block = op.regions[0].blocks[0]
    read = [i for i in range(n_outputs) if list(old_block.arguments[n_inputs + i].uses)]
    if not read:
        return
    inputs = list(op.operands)[:n_inputs]
    outputs = list(op.operands)[n_inputs:]
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    with op.location, ir.InsertionPoint(op):
        fresh = []
        for index, init in enumerate(outputs):
            if index in read:
                init_type = ir.RankedTensorType(init.type)
                init = tensor.empty(list(init_type.shape), init_type.element_type)
            fresh.append(init)
        attributes = {
            named.name: named.attr
            for named in (op.attributes[i] for i in range(len(op.attributes)))
        }
        attributes["indexing_maps"] = ir.ArrayAttr.get(
            maps[:n_inputs] + [maps[n_inputs + i] for i in read] + maps[n_inputs:]
        )
        attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(
            [n_inputs + len(read), n_outputs]
        )
        new = ir.Operation.create(
            "linalg.generic",
            results=[r.type for r in op.results],
            operands=[*inputs, *(outputs[i] for i in read), *fresh],
            attributes=attributes,
            regions=1,
        )
    old_args = list(old_block.arguments)
    arg_types = [a.type for a in old_args]
    new_types = (
        arg_types[:n_inputs] + [arg_types[n_inputs + i] for i in read] + arg_types[n_inputs:]
    )
    new_block = new.regions[0].blocks.append(*new_types)
    new_args = list(new_block.arguments)
    for index, arg in enumerate(old_args[:n_inputs]):
        arg.replace_all_uses_with(new_args[index])
    for offset, index in enumerate(read):
        # The body reads the moved init through its new input argument.
        old_args[n_inputs + index].replace_all_uses_with(new_args[n_inputs + offset])
    for body_op in list(old_block.operations):
        body_op.detach_from_parent()
        new_block.append(body_op)
    for old_result, new_result in zip(op.results, new.results):
        old_result.replace_all_uses_with(new_result)
    op.erase()


@dataclass(frozen=True)
class ParallelInitsToInputsPass(Pass):
    """Make all-parallel linalg.generic ops that read their init pure: the init becomes an input."""

    argument: ClassVar[str] = "shlo-parallel-inits-to-inputs"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "linalg.generic"):
            move_read_inits(op)
