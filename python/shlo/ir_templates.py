"""Expand an op into IR written as text, with the op's regions moved inline.

A lowering writes its replacement as a module holding ``func.func @template``,
whose arguments stand for the op's operands and whose ``return`` gives the
replacement values. Where a region of the op must run, the template calls a
declared placeholder (``func.call @region_0(...)``); the region's body is moved
to that call site. The template's ops are moved, not copied, so a region may
be called at one site only.

    text = '''
      func.func private @region_0(tensor<f32>, tensor<f32>) -> tensor<i1>
      func.func @template(%x: tensor<4xf32>) -> tensor<4xf32> { ... }
    '''
    replace_with_template(op, text, {"region_0": op.regions[0]})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shlo._mlir_compat import ir
from shlo.ir_utils import callee_name, ops_named, string_value

TEMPLATE = "template"


def signless_element(element: ir.Type) -> ir.Type:
    """The signless integer type of the same width for ui/si types; others as they are."""
    if isinstance(element, ir.IntegerType) and not element.is_signless:
        return ir.IntegerType.get_signless(element.width)
    return element


def _move_before(ops: Sequence[ir.Operation], anchor: ir.Operation) -> None:
    ip = ir.InsertionPoint(anchor)
    for op in ops:
        ip.insert(op.detach_from_parent())


def inline_region(region: ir.Region, call: ir.Operation) -> None:
    """Move ``region``'s single block in place of ``call``; its return feeds the call's users."""
    block = region.blocks[0]
    for argument, value in zip(block.arguments, call.operands):
        argument.replace_all_uses_with(value)
    ops = [op.operation for op in block.operations]
    _move_before(ops[:-1], call)
    for result, value in zip(call.results, ops[-1].operands):
        result.replace_all_uses_with(value)
    call.erase()


def replace_with_template(
    op: ir.Operation, text: str, regions: Mapping[str, ir.Region] | None = None
) -> None:
    """Replace ``op`` by the body of ``@template`` in ``text``, then erase ``op``.

    ``@template`` takes ``op``'s operands and returns values for its results.
    Calls to the names in ``regions`` are replaced by those regions' bodies, so
    ``op``'s regions are consumed.
    """
    parsed = ir.Module.parse(text, op.context)
    template = next(
        f
        for f in ops_named(parsed.operation, "func.func")
        if string_value(f.attributes["sym_name"]) == TEMPLATE
    )
    block = template.regions[0].blocks[0]
    for argument, value in zip(block.arguments, op.operands):
        argument.replace_all_uses_with(value)
    calls = [
        call for call in ops_named(template, "func.call") if callee_name(call) in (regions or {})
    ]
    ops = [body_op.operation for body_op in block.operations]
    terminator = ops[-1]
    _move_before(ops[:-1], op)
    for call in calls:
        inline_region((regions or {})[callee_name(call)], call)
    for result, value in zip(op.results, terminator.operands):
        result.replace_all_uses_with(value)
    terminator.erase()
    op.erase()
