"""shlo-write-over-dead-inputs: an elementwise op writes its result over an input that dies there.

Ours because upstream is missing: one-shot bufferization never picks an
input's buffer for an output, and ``linalg.generic`` ops from
``stablehlo-legalize-to-linalg`` write into a fresh ``tensor.empty``. So in
softmax ``exp(x - max) / sum`` the exponentials get a buffer of their own,
the division reads it and writes the result buffer: 8 MB more to keep in
cache, and 30% of the run time at [512, 4096]. XLA's buffer assignment shares
an elementwise op's output with an operand of the same shape that dies there.

An all-parallel ``linalg.generic`` with one output, written into a
``tensor.empty`` and not read, takes as its init an input that:

- has the output's type and indexing map, a permutation, so each element is
  read once, where it is written;
- is a fresh buffer: the result of ops that write into their init (linalg ops,
  ``scf.forall``, ``scf.for``) and of reshapes of a value nothing else reads
  (unless the op's result is returned: it would be copied into the caller's
  buffer), back to a ``tensor.empty``, not a function argument or a constant, which
  bufferization would copy first;
- is made in the op's block (not outside a loop the op is in) and has no use
  after the op: every other user is before it in that block.

An op whose body reads a dimension's index keeps its own buffer: reading its
init too, upstream's vectorizer would miscompile it, so it would stay scalar
loops (see shlo-plan-vector-codegen).

The body then reads that element through the output's block argument, and
bufferization writes the result in place.

  %e = linalg.generic ... outs(%empty0 : tensor<512x4096xf32>)           // exp(x - max)
  %s = linalg.generic ... ins(%e ...)                                    // sum
  %r = linalg.generic {indexing_maps = [#id, #row, #id]}
      ins(%e, %s : tensor<512x4096xf32>, tensor<512xf32>) outs(%empty1 : tensor<512x4096xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  ==>
  %r = linalg.generic {indexing_maps = [#row, #id]}
      ins(%s : tensor<512xf32>) outs(%e : tensor<512x4096xf32>) {
  ^bb0(%b: f32, %a: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }

It runs after fusion: ``linalg-fuse-elementwise-ops`` does not fuse an op
that reads its init (see ``shlo-parallel-inits-to-inputs``, which undoes
this form before fusion).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import defining_op, linalg_generic_parts, ops_named, rebuild_generic
from shlo.pass_framework import Pass

# Ops whose results are their inits, written: a result of one of these is a
# fresh buffer when its init is.
_DESTINATION_OPS = ("scf.forall", "scf.for")
# Ops whose result is a view of their operand's buffer.
_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _init_of(value: ir.OpResult) -> ir.Value | None:
    """The init that ``value``, a result of a destination-style op, is written into."""
    op = value.owner
    if op.name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
        ins, outs = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
        if value.result_number < outs:
            return op.operands[ins + value.result_number]
        return None
    if op.name in _DESTINATION_OPS:
        # The inits (shared_outs, iter_args) are the last operands, one per result.
        inits = list(op.operands)[len(op.operands) - len(op.results) :]
        return inits[value.result_number]
    return None


def _is_fresh(value: ir.Value, through_reshapes: bool) -> bool:
    """Whether ``value`` is written into a ``tensor.empty`` through destination-style ops."""
    while True:
        op = defining_op(value)
        if op is None:
            return False  # a function or block argument
        if op.name == "tensor.empty":
            return True
        if op.name in _RESHAPES and through_reshapes:
            # A view of its source (a matmul's [128, 768] product as [1, 128, 768]).
            value = op.operands[0]
            if len(list(value.uses)) != 1:
                return False  # the source is read elsewhere too
            continue
        init = _init_of(ir.OpResult(value))
        if init is None:
            return False
        value = init


def _dies_at(value: ir.Value, op: ir.Operation) -> bool:
    """Whether ``value`` is made in ``op``'s block and every other user comes before ``op``.

    Made outside, in a loop op runs in again and again, it would have to be copied each time.
    """
    op = op.operation
    producer = defining_op(value)
    if producer is None or producer.operation.parent != op.parent:
        return False
    owner = op.parent.operation
    for use in value.uses:
        user = use.owner.operation
        if user == op:
            continue
        # The user's ancestor beside op; none when the user is outside op's
        # region (op is inside a loop, say). Asked of a top-level op, .block crashes.
        while (parent := user.parent) is not None and parent.operation != owner:
            user = parent.operation
        if parent is None or user.block != op.block or not user.is_before_in_block(op):
            return False
    return True


def write_over_dead_input(op: ir.Operation) -> bool:
    """Rebuild ``op`` with an input that dies there as its init; False if none qualifies."""
    if not op.results:
        return False  # buffer semantics
    parts = linalg_generic_parts(op)
    if not parts.all_parallel or len(parts.outputs) != 1 or list(parts.output_args[0].uses):
        return False
    if ops_named(op, "linalg.index"):
        # Reading its init and an index, it would not be vectorized
        # (shlo-plan-vector-codegen, _reads_its_init_and_an_index): a
        # buffer of its own costs less than scalar loops.
        return False
    empty = defining_op(parts.outputs[0])
    if empty is None or empty.name != "tensor.empty":
        return False
    if not parts.output_maps[0].is_permutation:
        return False  # each element written more than once: later reads see the result
    output_type, output_map = parts.outputs[0].type, parts.output_map_attrs[0]
    # A returned result written into a view of another buffer could not be the
    # caller's buffer (buffer-results-to-out-params): it would be copied there.
    returned = any(use.owner.name == "func.return" for use in op.results[0].uses)
    chosen = next(
        (
            value
            for value, map_attr in zip(parts.inputs, parts.input_map_attrs)
            if value.type == output_type
            and map_attr == output_map
            and _is_fresh(value, through_reshapes=not returned)
            and _dies_at(value, op)
        ),
        None,
    )
    if chosen is None:
        return False
    # Every read of the chosen value moves to the output; one through another map would
    # read elements already overwritten.
    moved = [i for i, value in enumerate(parts.inputs) if value == chosen]
    if any(parts.input_map_attrs[i] != output_map for i in moved):
        return False
    kept = [i for i in range(len(parts.inputs)) if i not in moved]
    rebuild_generic(
        op,
        [(parts.inputs[i], parts.input_map_attrs[i]) for i in kept],
        [(chosen, output_map)],
        [*([parts.input_args[i]] for i in kept), [parts.input_args[i] for i in moved]],
    )
    if not list(empty.results[0].uses):
        empty.erase()
    return True


@dataclass(frozen=True)
class WriteOverDeadInputsPass(Pass):
    """Elementwise ops write their result over an input of the same shape that dies there."""

    argument: ClassVar[str] = "shlo-write-over-dead-inputs"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "linalg.generic"):
            write_over_dead_input(op)
