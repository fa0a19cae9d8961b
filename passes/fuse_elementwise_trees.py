"""shlo-fuse-elementwise-trees: fuse whole trees of single-use elementwise linalg ops at once.

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
map) are passed once. Upstream fusion then handles the rest (broadcasts,
transposes, reshapes, producers with several uses) on far fewer ops.

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

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import attribute_dict, linalg_generic_parts, ops_named
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


def _consumer(op: ir.Operation) -> ir.Operation | None:
    """The fusible op that reads ``op``'s only result once, identity-mapped, over the same space."""
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    if not isinstance(user, ir.Operation):
        user = user.operation
    if user.block != op.block or not _is_fusible(user):
        return None
    parts = linalg_generic_parts(user)
    index = uses[0].operand_number
    if index >= len(parts.inputs) or not _is_identity(parts.input_maps[index]):
        return None
    same_space = ir.RankedTensorType(user.results[0].type).shape == list(
        ir.RankedTensorType(op.results[0].type).shape
    )
    return user if same_space else None


def fuse_tree(members: list[ir.Operation]) -> None:
    """Replace ``members`` (in block order, the root last) by one linalg.generic."""
    root = members[-1]
    member_results = {m.results[0]: m for m in members[:-1]}
    external: dict[tuple[ir.Value, str], int] = {}
    input_values: list[ir.Value] = []
    input_maps: list[ir.Attribute] = []
    input_types: list[ir.Type] = []
    for member in members:
        parts = linalg_generic_parts(member)
        for value, map_attr, arg in zip(parts.inputs, parts.input_map_attrs, parts.input_args):
            key = (value, str(map_attr))
            if value in member_results or key in external:
                continue
            external[key] = len(input_values)
            input_values.append(value)
            input_maps.append(map_attr)
            input_types.append(arg.type)
    root_parts = linalg_generic_parts(root)
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
    for member in members:
        parts = linalg_generic_parts(member)
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


@dataclass(frozen=True)
class FuseElementwiseTreesPass(Pass):
    """Fuse whole trees of single-use elementwise linalg ops at once, in linear time."""

    argument: ClassVar[str] = "shlo-fuse-elementwise-trees"

    def run(self, module: ir.Operation) -> None:
        trees: dict[ir.Operation, list[ir.Operation]] = {}
        root_of: dict[ir.Operation, ir.Operation] = {}
        # Block order is a topological order: producers come before their consumer.
        for op in reversed(ops_named(module, "linalg.generic")):
            consumer = _consumer(op) if _is_fusible(op) else None
            root = root_of.get(consumer, consumer) if consumer is not None else op
            root_of[op] = root
            trees.setdefault(root, []).append(op)
        for members in trees.values():
            if len(members) > 1:
                fuse_tree(list(reversed(members)))
