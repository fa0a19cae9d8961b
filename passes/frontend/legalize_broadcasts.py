"""shlo-legalize-broadcasts: make CHLO's implicit broadcasts explicit, in pure StableHLO, with XLA's rules.

Ours because upstream is missing and wasteful: ``chlo-legalize-to-stablehlo``
rejects every ``broadcast_dimensions`` other than numpy's trailing alignment
("unsupported non prefix-padded dynamic rank"), reports (7,2,5) with (7,2,6)
as "incompatible shapes for broadcasting 5 and 6" at a function argument, and
wraps ``broadcast_select`` in ``shape`` dialect ops even for static shapes.
This pass applies XLA's broadcasting semantics (``shlo.broadcast_shapes``,
docs/broadcasting.md) to every ``chlo.broadcast_*`` op: binary, comparison,
logical, shift, complex and select. Static shapes get a
``stablehlo.broadcast_in_dim`` only for an operand that really broadcasts,
made once per value, target shape and block; a select's scalar predicate
stays scalar. Dynamic shapes get ``get_dimension_size`` arithmetic, a
``dynamic_broadcast_in_dim`` with its known expanding and non-expanding
dimensions, and, where only run time can tell, a JAX-style
``shape_assertion`` naming the shapes, dimensions and sizes, which
``shlo-remove-dynamism{types=...}`` checks while it refines the program to
static code. Incompatible shapes, a ``broadcast_dimensions`` that is not
strictly increasing and a size mismatch are errors at the op.
``next_after``, ``polygamma`` and ``zeta`` are broadcast here and then
expanded with upstream's decompositions.

  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 0>} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  %1 = chlo.broadcast_add %x, %x : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  ==>
  %b = stablehlo.broadcast_in_dim %v, dims = [0] : (tensor<3xf32>) -> tensor<3x3xf32>
  %0 = stablehlo.add %x, %b : tensor<3x3xf32>
  %1 = stablehlo.add %x, %x : tensor<3x3xf32>

  %0 = chlo.broadcast_add %x, %v : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  ==>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
  %shape = stablehlo.concatenate (reshape %n), (constant dense<3>), dim = 0 : ... -> tensor<2xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %v, %shape, dims = [1], known_nonexpanding_dimensions = [0] : (tensor<3xf32>, tensor<2xi32>) -> tensor<?x3xf32>
  %0 = stablehlo.add %x, %b : tensor<?x3xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir, passmanager
from shlo.broadcasting import (
    BroadcastError,
    BroadcastPlan,
    describe,
    format_shape,
    plan_broadcast,
    plan_numpy_broadcast,
)
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass, PassError

# chlo.broadcast_<x> -> the StableHLO op computing it once the shapes agree.
ELEMENTWISE = {
    f"chlo.broadcast_{name}": f"stablehlo.{target}"
    for name, target in {
        "add": "add",
        "atan2": "atan2",
        "complex": "complex",
        "divide": "divide",
        "maximum": "maximum",
        "minimum": "minimum",
        "multiply": "multiply",
        "power": "power",
        "remainder": "remainder",
        "shift_left": "shift_left",
        "shift_right_arithmetic": "shift_right_arithmetic",
        "shift_right_logical": "shift_right_logical",
        "subtract": "subtract",
        "and": "and",
        "or": "or",
        "xor": "xor",
        "compare": "compare",
        "select": "select",
    }.items()
}
# No StableHLO op computes these: they are expanded with upstream's decomposition.
DECOMPOSED = {
    "chlo.broadcast_next_after": "chlo.next_after",
    "chlo.broadcast_polygamma": "chlo.polygamma",
    "chlo.broadcast_zeta": "chlo.zeta",
}
EXPANDED = frozenset(DECOMPOSED.values())
HANDLED = frozenset(ELEMENTWISE) | frozenset(DECOMPOSED)
SELECT = "chlo.broadcast_select"
BINARY_NAMES = ("lhs", "rhs")
SELECT_NAMES = ("pred", "on_true", "on_false")
DYNAMIC = ir.ShapedType.get_dynamic_size()


@dataclass(frozen=True)
class _Recipe:
    """What to emit for one op signature (name, types, attributes)."""

    target: str  # the StableHLO op, or the element-wise CHLO op to expand
    attributes: dict[str, ir.Attribute]
    # Per operand: None to use it as is, else the broadcast_in_dim's type and dims.
    actions: tuple[tuple[ir.Type, ir.Attribute] | None, ...]
    dynamic: bool
    plan: BroadcastPlan
    infos: tuple[tuple[tuple[int | None, ...], ir.Type], ...]
    header: str  # the start of error messages


class _Legalizer:
    """One run over a module; caches types and attributes, which MLIR uniques anyway."""

    def __init__(self) -> None:
        # ir.Type -> (shape with None for dynamic sizes, element type).
        self.type_info: dict[ir.Type, tuple[tuple[int | None, ...], ir.Type] | None] = {}
        self.tensor_types: dict[tuple[tuple[int | None, ...], ir.Type], ir.Type] = {}
        self.dims_attrs: dict[tuple[int, ...], ir.Attribute] = {}
        self.chlo_attrs: dict[str, ir.Attribute] = {}
        # (block, value, target type, dims) -> a broadcast already made in that block.
        self.broadcasts: dict[tuple[ir.Block, ir.Value, ir.Type, tuple[int, ...]], ir.Value] = {}
        self.recipes: dict[tuple[object, ...], _Recipe] = {}
        self.decompositions: dict[tuple[str, ir.Type, str], ir.Module] = {}
        self.i32 = ir.IntegerType.get_signless(32)
        self.scalar_i32 = ir.RankedTensorType.get([], self.i32)
        self.scalar_i1 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))

    # -- types and attributes ---------------------------------------------------

    def info(
        self, type_: ir.Type, op: ir.Operation, what: str = "operands"
    ) -> tuple[tuple[int | None, ...], ir.Type]:
        """The shape (None for unknown sizes) and element type of a ranked tensor type."""
        found = self.type_info.get(type_, False)
        if found is False:
            try:
                ranked = ir.RankedTensorType(type_)
                found = (
                    tuple(None if s == DYNAMIC else s for s in ranked.shape),
                    ranked.element_type,
                )
            except ValueError:
                found = None
            self.type_info[type_] = found
        if found is None:
            raise PassError(op.location, f"expected ranked tensor {what}, got {type_}")
        return found  # type: ignore[return-value]

    def tensor_type(self, shape: tuple[int | None, ...], element: ir.Type) -> ir.Type:
        key = (shape, element)
        found = self.tensor_types.get(key)
        if found is None:
            found = self.tensor_types[key] = ir.RankedTensorType.get(
                [DYNAMIC if s is None else s for s in shape], element
            )
        return found

    def dims_attr(self, dims: tuple[int, ...]) -> ir.Attribute:
        found = self.dims_attrs.get(dims)
        if found is None:
            found = self.dims_attrs[dims] = ir.DenseI64ArrayAttr.get(list(dims))
        return found

    def stablehlo_attr(self, attr: ir.Attribute) -> ir.Attribute:
        """#chlo<comparison_direction LT> -> #stablehlo<comparison_direction LT>, same for types."""
        text = str(attr)
        found = self.chlo_attrs.get(text)
        if found is None:
            found = self.chlo_attrs[text] = ir.Attribute.parse(
                text.replace("#chlo<", "#stablehlo<", 1)
            )
        return found

    # -- the rewrite --------------------------------------------------------------

    def legalize(self, op: ir.Operation) -> None:
        operands = list(op.operands)
        result = op.results[0]
        result_type = result.type
        attributes = op.attributes
        # Everything but the values is decided once per op signature: MLIR
        # uniques types and attributes, so they make a cheap key.
        key = (
            op.name,
            result_type,
            *[value.type for value in operands],
            *([(name, attributes[name]) for name in attributes] if len(attributes) else ()),
        )
        recipe = self.recipes.get(key)
        if recipe is None:
            recipe = self.recipes[key] = self.make_recipe(op, operands, result_type)
        ip = ir.InsertionPoint(op)
        loc = op.location
        dynamic: _DynamicBroadcast | None = None
        if recipe.dynamic:
            dynamic = _DynamicBroadcast(self, op, operands, recipe, ip, loc)
            values = dynamic.run()
        else:
            values = operands
            block = None
            for k, action in enumerate(recipe.actions):
                if action is None:
                    continue  # already the result's shape, or a select's scalar predicate
                if block is None:
                    values = list(operands)
                    block = op.block
                reuse_key = (block, operands[k], action)
                broadcast = self.broadcasts.get(reuse_key)
                if broadcast is None:
                    broadcast = self.broadcasts[reuse_key] = ir.Operation.create(
                        "stablehlo.broadcast_in_dim",
                        results=[action[0]],
                        operands=[operands[k]],
                        attributes={"broadcast_dimensions": action[1]},
                        loc=loc,
                        ip=ip,
                    ).result
                values[k] = broadcast
        if recipe.target in EXPANDED:
            replacement = self.decompose(op, values, result_type, ip, dynamic)
        else:
            replacement = ir.Operation.create(
                recipe.target,
                results=[result_type],
                operands=values,
                attributes=recipe.attributes,
                loc=loc,
                ip=ip,
            ).result
        result.replace_all_uses_with(replacement)
        op.erase()

    def make_recipe(
        self, op: ir.Operation, operands: list[ir.Value], result_type: ir.Type
    ) -> _Recipe:
        name = op.name
        infos = [self.info(value.type, op) for value in operands]
        shapes = [shape for shape, _ in infos]
        dims = None
        try:
            if name == SELECT:
                plan = plan_numpy_broadcast(shapes, SELECT_NAMES)
            else:
                if "broadcast_dimensions" in op.attributes:
                    dims = tuple(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
                plan = plan_broadcast(shapes[0], shapes[1], dims)
        except BroadcastError as error:
            raise PassError(op.location, str(error)) from None
        result_shape, _ = self.info(result_type, op, "results")
        if len(result_shape) != len(plan.shape) or any(
            a is not None and b is not None and a != b for a, b in zip(result_shape, plan.shape)
        ):
            raise PassError(
                op.location,
                f"result type {result_type} does not match the broadcast shape "
                f"{format_shape(plan.shape)}",
            )
        attributes: dict[str, ir.Attribute] = {}
        if name == "chlo.broadcast_compare":
            source = op.attributes
            attributes["comparison_direction"] = self.stablehlo_attr(source["comparison_direction"])
            if "compare_type" in source:
                attributes["compare_type"] = self.stablehlo_attr(source["compare_type"])
        target = DECOMPOSED.get(name) or ELEMENTWISE[name]
        dynamic = None in plan.shape or any(None in shape for shape in shapes)
        actions: list[tuple[ir.Type, ir.Attribute] | None] = []
        for k, (shape, element) in enumerate(infos):
            if shape == plan.shape or (k == 0 and name == SELECT and not shape):
                actions.append(None)
            else:
                target_type = self.tensor_type(plan.shape, element)
                actions.append((target_type, self.dims_attr(plan.operand_dims[k])))
        return _Recipe(
            target=target,
            attributes=attributes,
            actions=tuple(actions),
            dynamic=dynamic,
            plan=plan,
            infos=tuple(infos),
            header=describe(shapes, dims),
        )

    # -- next_after, polygamma, zeta ----------------------------------------------------

    def decompose(
        self,
        op: ir.Operation,
        values: list[ir.Value],
        result_type: ir.Type,
        ip: ir.InsertionPoint,
        dynamic: _DynamicBroadcast | None,
    ) -> ir.Value:
        """Clone upstream's expansion of the element-wise CHLO op in place.

        With dynamic shapes upstream's constants are broadcast to
        ``shape.shape_of`` of an operand; every value of the expansion has the
        result's shape, so our StableHLO shape tensor stands in for it.
        """
        operand_type = values[0].type
        # Upstream gives every op of the expansion the location of the op it expands.
        location = str(op.location)
        key = (op.name, operand_type, location)
        module = self.decompositions.get(key)
        if module is None:
            chlo_name = DECOMPOSED[op.name]
            text = (
                f"func.func @f(%a: {operand_type}, %b: {operand_type}) -> {operand_type} {{\n"
                f"  %0 = {chlo_name} %a, %b : {operand_type}, {operand_type} -> {operand_type} {location}\n"
                f"  return %0 : {operand_type}\n}}"
            )
            module = ir.Module.parse(text)
            passmanager.PassManager.parse(
                "builtin.module(func.func(chlo-legalize-to-stablehlo))"
            ).run(module.operation)
            self.decompositions[key] = module
        body = module.body.operations[0].regions[0].blocks[0]
        mapping: dict[ir.Value, ir.Value] = dict(zip(body.arguments, values))
        returned: ir.Value | None = None
        for template in body.operations:
            if template.name == "func.return":
                returned = mapping[template.operands[0]]
                break
            if template.name == "shape.shape_of":
                assert dynamic is not None, "static expansions have no shape_of"
                mapping[template.results[0]] = dynamic.shape_value()
                continue
            clone = template.clone(ip=ip).operation
            for old in template.operands:
                if old in mapping:
                    clone.replace_uses_of_with(old, mapping[old])
            for old, new in zip(template.results, clone.results):
                mapping[old] = new
        assert returned is not None
        if returned.type != result_type:
            returned.set_type(result_type)
        return returned


class _DynamicBroadcast:
    """Shape arithmetic, run-time checks and dynamic_broadcast_in_dim for one op."""

    def __init__(
        self,
        legalizer: _Legalizer,
        op: ir.Operation,
        operands: list[ir.Value],
        recipe: _Recipe,
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> None:
        self.legalizer = legalizer
        self.operands = operands
        self.infos = recipe.infos
        self.plan = recipe.plan
        self.header = recipe.header
        self.ip = ip
        self.loc = loc
        self.is_select = op.name == SELECT
        self.names = SELECT_NAMES if self.is_select else BINARY_NAMES
        self.sizes: dict[tuple[int, int], ir.Value] = {}
        self.constants: dict[int, ir.Value] = {}
        self.extent: list[ir.Value | int] = []
        self.shape: ir.Value | None = None

    # -- building blocks ---------------------------------------------------------------

    def create(
        self,
        name: str,
        result: ir.Type | None,
        operands: list[ir.Value],
        **attributes: ir.Attribute,
    ) -> ir.Operation:
        return ir.Operation.create(
            name,
            results=[] if result is None else [result],
            operands=operands,
            attributes=attributes,
            loc=self.loc,
            ip=self.ip,
        )

    def constant(self, value: int) -> ir.Value:
        if value not in self.constants:
            scalar = self.legalizer.scalar_i32
            attr = ir.DenseElementsAttr.get_splat(
                scalar, ir.IntegerAttr.get(self.legalizer.i32, value)
            )
            self.constants[value] = self.create("stablehlo.constant", scalar, [], value=attr).result
        return self.constants[value]

    def size_of(self, k: int, i: int) -> ir.Value:
        """Dimension ``i`` of operand ``k`` as a tensor<i32>, read once."""
        if (k, i) not in self.sizes:
            self.sizes[k, i] = self.create(
                "stablehlo.get_dimension_size",
                self.legalizer.scalar_i32,
                [self.operands[k]],
                dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i),
            ).result
        return self.sizes[k, i]

    def equal(self, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return self.create(
            "stablehlo.compare",
            self.legalizer.scalar_i1,
            [lhs, rhs],
            comparison_direction=ir.Attribute.parse("#stablehlo<comparison_direction EQ>"),
            compare_type=ir.Attribute.parse("#stablehlo<comparison_type SIGNED>"),
        ).result

    def logical(self, name: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return self.create(name, self.legalizer.scalar_i1, [lhs, rhs]).result

    # -- the lowering ---------------------------------------------------------------------

    def run(self) -> list[ir.Value]:
        plan = self.plan
        # Which operand dimensions (operand, dimension, static size) feed each result dimension.
        feeding: list[list[tuple[int, int, int | None]]] = [[] for _ in plan.shape]
        for k, (shape, _) in enumerate(self.infos):
            if k == 0 and self.is_select and not shape:
                continue  # a scalar predicate is not broadcast
            for i, d in enumerate(plan.operand_dims[k]):
                feeding[d].append((k, i, shape[i]))
        # Per operand dimension: True when known non-expanding, False when
        # known expanding (static size 1), None when only run time can tell.
        known: dict[tuple[int, int], bool | None] = {}
        extent = self.extent
        for d, sources in enumerate(feeding):
            static = plan.shape[d]
            unknown = [(k, i) for k, i, size in sources if size is None]
            if static is not None:
                # A static size other than 1 decides; unknown sizes must be 1 or equal it.
                extent.append(static)
                for k, i, size in sources:
                    known[k, i] = None if size is None else size == static
                if unknown:
                    self.assert_compatible(sources, unknown, self.constant(static))
                continue
            # Every static size is 1: the result takes the first unknown size
            # that is not 1 at run time.
            value = self.size_of(*unknown[0])
            for k, i in unknown[1:]:
                value = self.create(
                    "stablehlo.select",
                    self.legalizer.scalar_i32,
                    [self.equal(value, self.constant(1)), self.size_of(k, i), value],
                ).result
            extent.append(value)
            for k, i, size in sources:
                # A lone unknown size is the result's size; static ones here are all 1.
                lone = len(unknown) == 1
                known[k, i] = (True if lone else None) if size is None else False
            if len(unknown) > 1:
                # The first unknown size is 1 or the result by construction.
                self.assert_compatible(sources, unknown[1:], value)
        values: list[ir.Value] = []
        for k, (value, (shape, element)) in enumerate(zip(self.operands, self.infos)):
            flags = [known.get((k, i)) for i in range(len(shape))]
            if (k == 0 and self.is_select and not shape) or (
                shape == plan.shape and all(flag is True for flag in flags)
            ):
                values.append(value)  # already the result's shape
                continue
            target = self.legalizer.tensor_type(plan.shape, element)
            dims = self.legalizer.dims_attr(plan.operand_dims[k])
            if None not in shape and None not in plan.shape:
                broadcast = self.create(
                    "stablehlo.broadcast_in_dim", target, [value], broadcast_dimensions=dims
                )
                values.append(broadcast.result)
                continue
            attributes = {"broadcast_dimensions": dims}
            expanding = tuple(i for i, flag in enumerate(flags) if flag is False)
            nonexpanding = tuple(i for i, flag in enumerate(flags) if flag is True)
            if expanding:
                attributes["known_expanding_dimensions"] = self.legalizer.dims_attr(expanding)
            if nonexpanding:
                attributes["known_nonexpanding_dimensions"] = self.legalizer.dims_attr(nonexpanding)
            broadcast = self.create(
                "stablehlo.dynamic_broadcast_in_dim",
                target,
                [value, self.shape_value()],
                **attributes,
            )
            values.append(broadcast.result)
        return values

    def assert_compatible(
        self,
        sources: list[tuple[int, int, int | None]],
        checked: list[tuple[int, int]],
        target: ir.Value,
    ) -> None:
        """A JAX-style shape_assertion: each checked size is 1 or ``target``."""
        holds: ir.Value | None = None
        for k, i in checked:
            size = self.size_of(k, i)
            ok = self.logical(
                "stablehlo.or", self.equal(size, self.constant(1)), self.equal(size, target)
            )
            holds = ok if holds is None else self.logical("stablehlo.and", holds, ok)
        assert holds is not None
        # The message shows every size feeding the dimension; {n} is filled in
        # with the n-th unknown one when the assertion fails.
        unknown = [(k, i) for k, i, size in sources if size is None]
        placeholder = {key: "{" + str(n) + "}" for n, key in enumerate(unknown)}
        parts = [
            f"{placeholder[k, i] if size is None else size} ({self.names[k]} dimension {i})"
            for k, i, size in sources
            if size != 1
        ]
        # At least two sizes are shown: an unknown one and the one it is checked against.
        listed = ", ".join(parts[:-1]) + " and " + parts[-1]
        message = f"{self.header}: sizes {listed} must be equal or 1"
        self.create(
            "stablehlo.custom_call",
            None,
            [holds, *(self.size_of(k, i) for k, i in unknown)],
            call_target_name=ir.StringAttr.get("shape_assertion"),
            has_side_effect=ir.BoolAttr.get(True),
            error_message=ir.StringAttr.get(message),
            api_version=ir.IntegerAttr.get(self.legalizer.i32, 2),
        )

    def shape_value(self) -> ir.Value:
        """The result's shape as a tensor<Nxi32>, made on first use (after ``run``)."""
        if self.shape is None:
            self.shape = self.shape_tensor(self.extent)
        return self.shape

    def shape_tensor(self, extent: list[ir.Value | int]) -> ir.Value:
        """The sizes as a tensor<Nxi32>: one constant per run of static sizes."""
        i32 = self.legalizer.i32
        pieces: list[ir.Value] = []
        run: list[int] = []
        for entry in [*extent, None]:
            if isinstance(entry, int):
                run.append(entry)
                continue
            if run:
                run_type = ir.RankedTensorType.get([len(run)], i32)
                attr = ir.DenseElementsAttr.get(np.array(run, dtype=np.int32), type=run_type)
                pieces.append(self.create("stablehlo.constant", run_type, [], value=attr).result)
                run = []
            if entry is not None:
                one = ir.RankedTensorType.get([1], i32)
                pieces.append(self.create("stablehlo.reshape", one, [entry]).result)
        if len(pieces) == 1:
            return pieces[0]
        return self.create(
            "stablehlo.concatenate",
            ir.RankedTensorType.get([len(extent)], i32),
            pieces,
            dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0),
        ).result


@dataclass(frozen=True)
class LegalizeBroadcastsPass(Pass):
    """Make CHLO's implicit broadcasts explicit, in pure StableHLO, with XLA's rules."""

    argument: ClassVar[str] = "shlo-legalize-broadcasts"

    def run(self, module: ir.Operation) -> None:
        # Pre-order keeps each block's ops in program order, which the reuse
        # of broadcasts within a block relies on.
        found = ops_named(module, *HANDLED)
        if not found:
            return
        legalizer = _Legalizer()
        for op in found:
            legalizer.legalize(op)
