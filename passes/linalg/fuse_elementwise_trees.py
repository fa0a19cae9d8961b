"""shlo-fuse-elementwise-trees: fuse trees of single-use elementwise linalg ops; fence what must not fuse.

Ours because upstream is slow: ``linalg-fuse-elementwise-ops`` fuses one
producer into its consumer at a time and clones the growing body at each
step, so a chain of n elementwise ops costs O(n^2) (10,000 adds took more than
30 s). This pass handles the common case first, in time linear in the size of
the program: an all-parallel ``linalg.generic`` with one result, written with
the identity map and used once, as an identity-mapped input of another such
op over the same iteration space. Each maximal tree of such producers and its
final consumer becomes one ``linalg.generic``, built once: the bodies are
moved into it in order and every producer's yielded value replaces the
consumer's block argument. Inputs shared by several members (same value, same
map) are passed once. A tree stops growing at ``MAX_FUSED_BODY_OPS`` body
ops (1000): the producer that would pass it roots a tree of its own, fenced
from its consumer (see below), so that no kernel is larger than LLVM
compiles in linear time. Upstream fusion then handles the rest (broadcasts,
transposes, reshapes, producers with several uses) on far fewer ops.

Upstream fusion fuses every single-use producer it can and cannot be told
otherwise (no option; its control function is fixed). This pass therefore
also fences, with a call to a private ``shlo_fusion_fence_N`` function that
``shlo-remove-fusion-fences`` removes after it, the values upstream must not
fuse, so they have a second use: (1) the reshapes between a named
contraction or convolution (``linalg.matmul``, ``linalg.batch_matmul``, ...,
as ``shlo-canonicalize-dot-general`` leaves them) and its operands or result,
and its result when its consumer has a reshaped input (upstream moves that
reshape through the consumer onto the result: an RNN step's
``tanh(h @ w + xs[t])``), which upstream would fold by turning the
contraction back into a ``linalg.generic`` that no recipe tiles and then
fuse producers into it; (2) like XLA, a producer
that a ``linalg.generic`` would read more than once per element (a broadcast,
a window, a contraction's operand) when the consumer has reduction loops or
the producer is expensive (math functions, divisions, more than
``EXPENSIVE_BODY_OPS`` ops in its body, also in the producers
upstream would fuse into it; reshapes between them are looked through):
fused, it would be recomputed for every reread. Before all this, a
broadcast read by several generics gets a copy per reader (XLA duplicates
broadcasts into every fusion too): upstream fuses only single-use producers,
so layernorm's mean was written out at full size and read back twice.

  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%1, %a : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  ==>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %x : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import attribute_dict, copy_parts, defining_op, linalg_generic_parts, ops_named
from shlo.pass_framework import Pass


def _is_identity(affine_map: ir.AffineMap) -> bool:
    return affine_map == ir.AffineMap.get_identity(affine_map.n_dims, affine_map.context)


def _is_fusible(op: ir.Operation) -> bool:
    """All-parallel, on tensors, identity-mapped outputs, and a body that never reads them."""
    if op.name != "linalg.generic" or not op.results:
        return False
    parts = linalg_generic_parts(op)
    return (
        parts.all_parallel
        and all(_is_identity(m) for m in parts.output_maps)
        and not any(list(arg.uses) for arg in parts.output_args)
    )


def _consumer(
    op: ir.Operation, is_fusible: Callable[[ir.Operation], bool] = _is_fusible
) -> ir.Operation | None:
    """The fusible op that reads ``op``'s only result once, identity-mapped, over the same space."""
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    if not isinstance(user, ir.Operation):
        user = user.operation
    if user.block != op.block or not is_fusible(user):
        return None
    index = uses[0].operand_number
    if index >= ir.DenseI32ArrayAttr(user.attributes["operandSegmentSizes"])[0]:
        return None  # an output
    input_map = ir.ArrayAttr(user.attributes["indexing_maps"])[index]
    if not _is_identity(ir.AffineMapAttr(input_map).value):
        return None
    same_space = ir.RankedTensorType(user.results[0].type).shape == list(
        ir.RankedTensorType(op.results[0].type).shape
    )
    return user if same_space else None


FENCE_PREFIX = "shlo_fusion_fence_"
_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")
# Named linalg ops with reduction loops, as stablehlo-legalize-to-linalg emits them.
_CONTRACTIONS = frozenset(
    "linalg." + name
    for name in "matmul batch_matmul matvec vecmat dot batch_matvec batch_vecmat".split()
)
_CONVOLUTION_PREFIXES = ("linalg.conv_", "linalg.depthwise_conv_", "linalg.pooling_")


def _is_named_contraction(op: ir.Operation) -> bool:
    return op.name in _CONTRACTIONS or op.name.startswith(_CONVOLUTION_PREFIXES)


# A body of this many ops costs more to recompute for a second read than a
# store and a load of its result (a math function is about 20 after
# shlo-approximate-math).
EXPENSIVE_BODY_OPS = 32


def _has_expensive_body(op: ir.Operation) -> bool:
    """A long body, or one with math functions, complex arithmetic or divisions: too
    costly to recompute."""
    operations = op.regions[0].blocks[0].operations
    if len(operations) > EXPENSIVE_BODY_OPS:
        return True
    for inner in operations:
        name = inner.operation.name
        if name.startswith(("math.", "complex.")) or (
            name.startswith("arith.") and ("div" in name or "rem" in name)
        ):
            return True
    return False


def _loop_extents(op: ir.Operation) -> dict[int, int]:
    """The sizes of the loops of a linalg.generic that some operand indexes directly."""
    extents: dict[int, int] = {}
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    for value, affine_map in zip(op.operands, maps):
        type_ = value.type
        if not isinstance(type_, ir.RankedTensorType):
            continue
        for size, expr in zip(type_.shape, affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and size >= 0:
                extents[expr.position] = size
    return extents


def rereads(consumer: ir.Operation, affine_map: ir.AffineMap) -> bool:
    """True unless each point of ``consumer``'s loops reads a distinct element (sufficient)."""
    if not affine_map.is_projected_permutation:
        return True  # windows, delinearizations: may read an element more than once
    used = {e.position for e in affine_map.results if isinstance(e, ir.AffineDimExpr)}
    extents = _loop_extents(consumer)
    # A loop the map ignores rereads every element, unless it has one iteration.
    return any(extents.get(d, 2) != 1 for d in range(affine_map.n_dims) if d not in used)


def _is_upstream_fusible_producer(op: ir.Operation) -> bool:
    return (
        op.name == "linalg.generic"
        and len(op.results) == 1
        and linalg_generic_parts(op).all_parallel
        and len(list(op.results[0].uses)) == 1
    )


def _fusible_producer(value: ir.Value) -> tuple[ir.Value, ir.Operation] | None:
    """The generic upstream may fuse into the reader of ``value``, and its result.

    Upstream folds single-use reshapes into their consumer first, so they are
    looked through; a reshape does not change how often an element is read.
    """
    producer = defining_op(value)
    while (
        producer is not None
        and producer.name in _RESHAPES
        and len(list(producer.results[0].uses)) == 1
    ):
        value = producer.operands[0]
        producer = defining_op(value)
    if producer is None or not _is_upstream_fusible_producer(producer):
        return None
    return value, producer


def _reshapes_reach(user: ir.Operation) -> bool:
    """Whether ``user`` is a reshape or a linalg.generic with a reshaped input."""
    if user.name in _RESHAPES:
        return True
    if user.name != "linalg.generic":
        return False
    producers = (defining_op(value) for value in linalg_generic_parts(user).inputs)
    return any(p is not None and p.name in _RESHAPES for p in producers)


def values_to_fence(module: ir.Operation) -> list[tuple[ir.Value, ir.Operation]]:
    """The values upstream fusion must not fuse, each with the op to fence it before."""
    fences: list[tuple[ir.Value, ir.Operation]] = []
    # Generics whose body, once upstream has fused their unfenced producers
    # into them, is expensive. Block order visits producers first.
    expensive: set[ir.Operation] = set()
    for op in ops_named(module):
        if _is_named_contraction(op):
            for operand in op.operands:
                reshape = defining_op(operand)
                if reshape is not None and reshape.name in _RESHAPES:
                    fences.append((operand, op))
            # A reshape of the result, or of another operand of its consumer,
            # which upstream moves through the consumer onto the result.
            for result in op.results:
                uses = list(result.uses)
                if len(uses) == 1 and _reshapes_reach(uses[0].owner.operation):
                    fences.append((result, uses[0].owner.operation))
        elif op.name == "linalg.generic" and op.results:
            parts = linalg_generic_parts(op)
            if _has_expensive_body(op):
                expensive.add(op)
            for value, affine_map in zip(parts.inputs, parts.input_maps):
                found = _fusible_producer(value)
                if found is None:
                    continue
                result, producer = found
                if (not parts.all_parallel or producer in expensive) and rereads(op, affine_map):
                    fences.append((result, op))
                elif producer in expensive:
                    expensive.add(op)  # upstream fuses it in
    return fences


def fence(module: ir.Operation, fences: list[tuple[ir.Value, ir.Operation]]) -> None:
    """Give each value a second use: a call to a private function per type."""
    callees: dict[str, tuple[str, ir.Type]] = {}
    for value, before in fences:
        name, _ = callees.setdefault(str(value.type), (f"{FENCE_PREFIX}{len(callees)}", value.type))
        with ir.InsertionPoint(before), before.location:
            ir.Operation.create(
                "func.call", operands=[value], attributes={"callee": ir.FlatSymbolRefAttr.get(name)}
            )
    body = module.regions[0].blocks[0]
    for name, type_ in reversed(callees.values()):
        with ir.InsertionPoint.at_block_begin(body), module.location:
            ir.Operation.create(
                "func.func",
                attributes={
                    "sym_name": ir.StringAttr.get(name),
                    "function_type": ir.TypeAttr.get(ir.FunctionType.get([type_], [])),
                    "sym_visibility": ir.StringAttr.get("private"),
                },
                regions=1,
            )


def fuse_tree(members: list[ir.Operation]) -> ir.Operation:
    """Replace ``members`` (in block order, the root last) by one linalg.generic; that op."""
    root = members[-1]
    member_results = {m.results[0]: m for m in members[:-1]}
    external: dict[tuple[ir.Value, str], int] = {}
    input_values: list[ir.Value] = []
    input_maps: list[ir.Attribute] = []
    input_types: list[ir.Type] = []
    # Read once: fusing changes no member's operands, maps or arguments.
    all_parts = [linalg_generic_parts(member) for member in members]
    for member, parts in zip(members, all_parts):
        for value, map_attr, arg in zip(parts.inputs, parts.input_map_attrs, parts.input_args):
            key = (value, str(map_attr))
            if value in member_results or key in external:
                continue
            external[key] = len(input_values)
            input_values.append(value)
            input_maps.append(map_attr)
            input_types.append(arg.type)
    root_parts = all_parts[-1]
    attributes = attribute_dict(root)
    attributes["indexing_maps"] = ir.ArrayAttr.get(input_maps + root_parts.output_map_attrs)
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(
        [len(input_values), len(root_parts.outputs)]
    )
    with root.location, ir.InsertionPoint(root):
        fused = ir.Operation.create(
            "linalg.generic",
            results=[r.type for r in root.results],
            operands=[*input_values, *root_parts.outputs],
            attributes=attributes,
            regions=1,
        )
    block = fused.regions[0].blocks.append(
        *input_types, *(arg.type for arg in root_parts.output_args)
    )
    arguments = list(block.arguments)
    yielded: dict[ir.Operation, ir.Value] = {}
    for member, parts in zip(members, all_parts):
        for value, map_attr, arg in zip(parts.inputs, parts.input_map_attrs, parts.input_args):
            producer = member_results.get(value)
            replacement = (
                yielded[producer] if producer else arguments[external[(value, str(map_attr))]]
            )
            arg.replace_all_uses_with(replacement)
        body = list(member.regions[0].blocks[0].operations)
        if member is not root:
            *body, terminator = body
            yielded[member] = terminator.operands[0]
        for op in body:
            op.detach_from_parent()
            block.append(op)
    for old, new in zip(root.results, fused.results):
        old.replace_all_uses_with(new)
    for member in reversed(members):
        member.erase()
    return fused


def _is_broadcast(op: ir.Operation) -> bool:
    """A linalg.generic that only copies its one input into a larger shape, in the same order."""
    parts = copy_parts(op)
    if parts is None or not _is_identity(parts.output_maps[0]):
        return False
    dims = []
    for expr in parts.input_maps[0].results:
        if isinstance(expr, ir.AffineDimExpr):
            dims.append(expr.position)
        elif not (isinstance(expr, ir.AffineConstantExpr) and expr.value == 0):
            return False  # 0 indexes a dimension of size 1
    return dims == sorted(set(dims))


def duplicate_broadcasts(module: ir.Operation) -> None:
    """Give each elementwise reader of a broadcast with several uses its own copy.

    Upstream fuses only single-use producers, so a broadcast read twice (the
    mean in a layernorm: by the variance and by the result) was written to
    memory at full size and read back by both. A copy costs nothing once
    fused: the reader indexes the broadcast's input instead. Only readers
    that will fuse it get one (not contractions, which the fences keep).
    """
    for op in ops_named(module, "linalg.generic"):
        if not _is_broadcast(op):
            continue
        uses = list(op.results[0].uses)
        if len(uses) < 2:
            continue
        takers = []
        for use in uses:
            user = use.owner.operation
            if user.name != "linalg.generic" or user.block != op.block:
                continue
            parts = linalg_generic_parts(user)
            index = use.operand_number
            if index >= len(parts.inputs):
                continue
            if parts.all_parallel or not rereads(user, parts.input_maps[index]):
                takers.append((user, index))
        # With every use a taker, the original serves the first.
        if len(takers) == len(uses):
            takers = takers[1:]
        for user, index in takers:
            copy = op.clone(ir.InsertionPoint(user))
            user.operands[index] = copy.results[0]


# Body ops of one fused generic. LLVM's code generation is superlinear in
# the size of a loop body (a chain of n adds, one kernel: 42, 47, 64 and 150
# us per add for n = 1000, 2000, 4000 and 10,000); a tree cut at this size
# costs one store and one load per element against 1000 ops of arithmetic.
MAX_FUSED_BODY_OPS = 1000


@dataclass(frozen=True)
class FuseElementwiseTreesPass(Pass):
    """Fuse whole trees of single-use elementwise linalg ops at once, in linear time; fence the rest."""

    argument: ClassVar[str] = "shlo-fuse-elementwise-trees"

    def run(self, module: ir.Operation) -> None:
        duplicate_broadcasts(module)
        trees: dict[ir.Operation, list[ir.Operation]] = {}
        root_of: dict[ir.Operation, ir.Operation] = {}
        body_ops: dict[ir.Operation, int] = {}  # per tree, by its root
        cut: set[ir.Operation] = set()  # roots of trees cut off their consumer's
        # Each generic is asked once whether it is fusible (and once more as a consumer).
        fusible: dict[ir.Operation, bool] = {}

        def is_fusible(op: ir.Operation) -> bool:
            if op not in fusible:
                fusible[op] = _is_fusible(op)
            return fusible[op]

        # Block order is a topological order: producers come before their consumer.
        for op in reversed(ops_named(module, "linalg.generic")):
            consumer = _consumer(op, is_fusible) if is_fusible(op) else None
            root = root_of.get(consumer, consumer) if consumer is not None else op
            size = len(op.regions[0].blocks[0].operations) - 1  # without the yield
            if root is not op and body_ops[root] + size > MAX_FUSED_BODY_OPS:
                root = op
                cut.add(op)
            root_of[op] = root
            body_ops[root] = body_ops.get(root, 0) + size
            trees.setdefault(root, []).append(op)
        cut_results = []
        for root, members in trees.items():
            is_cut = root in cut
            if len(members) > 1:
                root = fuse_tree(list(reversed(members)))  # erases the old root
            if is_cut:
                cut_results.append(root.results[0])
        fences = values_to_fence(module)
        fences += [(value, next(iter(value.uses)).owner.operation) for value in cut_results]
        fence(module, fences)
