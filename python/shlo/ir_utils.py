"""Small helpers over the bindings: walking, constants and types.

The pinned wheel ships no Python op classes for stablehlo, so ops are matched
by name and built with ``ir.Operation.create``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from shlo import fast_walks
from shlo._mlir_compat import arith, ir

# Element types whose constants numpy can hold exactly.
_NUMPY_DTYPES = {
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
}


def ops_named(root: ir.Operation, *names: str) -> list[ir.Operation]:
    """Operations under ``root`` (pre-order) with one of ``names``, or all when none given.

    Collected into a list first so callers may mutate the IR while iterating.
    """
    if names:
        searched = fast_walks.ops_named(root, names)
        if searched is not None:
            return searched
    found: list[ir.Operation] = []
    append = found.append  # on the path of every op walked (GPT-2: 126,000 a compile)
    advance = ir.WalkResult.ADVANCE
    wanted = frozenset(names)

    def visit(op: ir.Operation) -> ir.WalkResult:
        if not wanted or op.name in wanted:
            append(op)
        return advance

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def ops_with_attributes(root: ir.Operation, *names: str) -> list[ir.Operation]:
    """Operations under ``root`` (pre-order) that have an attribute named one of ``names``."""
    searched = fast_walks.ops_with_attributes(root, names)
    if searched is not None:
        return searched
    return [op for op in ops_named(root) if any(name in op.attributes for name in names)]


def op_count(root: ir.Operation) -> int:
    """How many operations there are under ``root``, itself included."""
    counted = fast_walks.op_count(root)
    if counted is not None:
        return counted
    count = 0

    def visit(_: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return count


def functions(root: ir.Operation) -> list[ir.Operation]:
    """The ``func.func`` ops under ``root``, found without walking their bodies."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name != "func.func":
            return ir.WalkResult.ADVANCE
        found.append(op)
        return ir.WalkResult.SKIP  # a function holds no other

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def defined_function(module: ir.Operation, name: str) -> ir.Operation | None:
    """The top-level ``func.func`` of ``module`` named ``name`` that has a body, if any."""
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if (
            op.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == name
            and len(op.regions[0].blocks)
        ):
            return op
    return None


def is_optnone(function: ir.Operation) -> bool:
    """Whether ``function`` (an ``llvm.func``, or a ``func.func`` bound for LLVM) is
    marked ``optnone``: glue that LLVM compiles without optimizing it."""
    attributes = function.attributes
    name = "passthrough" if "passthrough" in attributes else "llvm.passthrough"
    if name not in attributes:
        return False
    passthrough = attributes[name]
    return isinstance(passthrough, ir.ArrayAttr) and any(
        isinstance(a, ir.StringAttr) and a.value == "optnone" for a in passthrough
    )


def linalg_fill(value: ir.Value, out: ir.Value) -> ir.Value | None:
    """``linalg.fill`` of ``out`` with ``value``: the filled tensor, or None for a buffer."""
    from shlo._mlir_compat import fill_builtin_region, linalg

    results = [out.type] if isinstance(out.type, ir.RankedTensorType) else []
    op = linalg.FillOp(results, [value], [out])
    fill_builtin_region(op.operation)
    return op.result if results else None


def linalg_copy(source: ir.Value, target: ir.Value) -> ir.Value | None:
    """``linalg.copy`` of ``source`` into ``target``: the new tensor, or None for buffers."""
    from shlo._mlir_compat import fill_builtin_region, linalg

    results = [target.type] if isinstance(target.type, ir.RankedTensorType) else []
    op = linalg.CopyOp(results, [source], [target])
    fill_builtin_region(op.operation)
    return op.result if results else None


def tensor_type_text(shape: Sequence[int], element: ir.Type | str) -> str:
    """``tensor<2x3xf32>`` for a static shape and an element type (or its spelling)."""
    return "tensor<" + "".join(f"{int(size)}x" for size in shape) + f"{element}>"


def create_value(
    name: str, operands: Sequence[ir.Value], result: ir.Type, **attributes: ir.Attribute
) -> ir.Value:
    """The result of a new one-result op at the current insertion point and location."""
    return ir.Operation.create(
        name, results=[result], operands=list(operands), attributes=attributes
    ).result


def llvm_integer(value: int, width: int = 64) -> ir.Value:
    """An ``llvm.mlir.constant`` of a signless integer of ``width`` bits."""
    type_ = ir.IntegerType.get_signless(width)
    attribute = ir.IntegerAttr.get(type_, value)
    return ir.Operation.create(
        "llvm.mlir.constant", results=[type_], attributes={"value": attribute}
    ).result


def i64_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def slice_ranges(value: ir.Value, ranges: Sequence[tuple[int, int, int]]) -> ir.Value:
    """A stablehlo.slice of ``value`` by the (start, limit, stride) of each dimension, at
    the current insertion point and location; ``value`` itself when that is all of it."""
    type_ = ir.RankedTensorType(value.type)
    if all(r == (0, size, 1) for r, size in zip(ranges, type_.shape, strict=True)):
        return value
    shape = [-(-(limit - start) // stride) for start, limit, stride in ranges]
    return create_value(
        "stablehlo.slice",
        [value],
        ir.RankedTensorType.get(shape, type_.element_type),
        **{
            name: ir.DenseI64ArrayAttr.get([r[i] for r in ranges])
            for i, name in enumerate(("start_indices", "limit_indices", "strides"))
        },
    )


def slice_dimension(value: ir.Value, dimension: int, start: int, limit: int) -> ir.Value:
    """``value``'s elements ``start`` to ``limit`` along ``dimension`` (see slice_ranges)."""
    ranges = [(0, size, 1) for size in ir.RankedTensorType(value.type).shape]
    ranges[dimension] = (start, limit, 1)
    return slice_ranges(value, ranges)


def concatenate(values: Sequence[ir.Value], dimension: int) -> ir.Value:
    """``values`` joined along ``dimension`` (a stablehlo.concatenate unless only one)."""
    if len(values) == 1:
        return values[0]
    first = ir.RankedTensorType(values[0].type)
    shape = list(first.shape)
    shape[dimension] = sum(ir.RankedTensorType(v.type).shape[dimension] for v in values)
    result = ir.RankedTensorType.get(shape, first.element_type)
    return create_value("stablehlo.concatenate", values, result, dimension=i64_attr(dimension))


def numpy_dtype(element_type: ir.Type) -> type[np.generic] | None:
    return _NUMPY_DTYPES.get(str(element_type))


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op whose result ``value`` is; None for a block argument."""
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def subview_offsets(subview: ir.Operation) -> list[ir.Value | int]:
    """A ``memref.subview``'s offsets: its operands where dynamic, else ints."""
    dynamic = iter(list(subview.operands)[1:])
    marker = ir.ShapedType.get_dynamic_size()
    static = ir.DenseI64ArrayAttr(subview.attributes["static_offsets"])
    return [next(dynamic) if offset == marker else offset for offset in static]


def is_function_argument(value: ir.Value) -> bool:
    """Whether ``value`` is an argument of a function (a buffer the caller owns)."""
    if not isinstance(value, ir.BlockArgument):
        return False
    parent = value.owner.owner
    return parent is not None and parent.operation.name == "func.func"


def block_of_rows(op: ir.Operation) -> bool:
    """Whether ``op`` is a subview of a function's buffer that takes whole rows from one
    dynamic row on: a contiguous block, followed in memory by the next."""
    if op.name != "memref.subview" or not is_function_argument(op.operands[0]):
        return False
    source = op.operands[0].type
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    dynamic = ir.ShapedType.get_dynamic_size()
    return (
        source.has_static_shape
        and len(op.operands) == 2  # one dynamic value: the first offset
        and offsets[0] == dynamic
        and all(offset == 0 for offset in offsets[1:])
        and all(stride == 1 for stride in strides)
        and sizes[1:] == list(source.shape[1:])
        and 0 < sizes[0] < source.shape[0]
    )


def within(op: ir.Operation, roots: Sequence[ir.Operation]) -> bool:
    """Whether ``op`` is one of ``roots`` or nested in one (Operations hash by identity)."""
    while op is not None:
        if any(op == root for root in roots):
            return True
        op = op.parent
    return False


def view_chain(value: ir.Value, is_root: Callable[[ir.Value], bool]) -> list[ir.Operation] | None:
    """The subviews that make ``value`` from a value ``is_root`` accepts, outermost first;
    None if ``value`` is not such a view."""
    chain: list[ir.Operation] = []
    while not is_root(value):
        producer = defining_op(value)
        if producer is None or producer.name != "memref.subview":
            return None
        chain.insert(0, producer)
        value = producer.operands[0]
    return chain


def index_constant(value: int) -> ir.Value:
    """An ``arith.constant`` of ``value`` as an index, at the current insertion point."""
    return arith.ConstantOp(ir.IndexType.get(), value).result


def constant_index(value: ir.Value) -> int | None:
    """The integer an ``arith.constant`` (index or integer) defining ``value`` holds, else None."""
    owner = defining_op(value)
    if owner is None or owner.name != "arith.constant":
        return None
    attribute = owner.attributes["value"].maybe_downcast()
    return attribute.value if isinstance(attribute, ir.IntegerAttr) else None


def constant_float(value: ir.Value) -> float | None:
    """The float an ``arith.constant`` defining ``value`` holds (a scalar or a splat), else None."""
    owner = defining_op(value)
    if owner is None or owner.name != "arith.constant":
        return None
    attribute = owner.attributes["value"].maybe_downcast()
    if isinstance(attribute, ir.DenseElementsAttr):
        if not attribute.is_splat:
            return None
        attribute = attribute.get_splat_value()
    return ir.FloatAttr(attribute).value if isinstance(attribute, ir.FloatAttr) else None


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The value of ``value`` when a stablehlo.constant of a numpy-representable type defines it."""
    owner = defining_op(value)
    if owner is None or owner.name != "stablehlo.constant":
        return None
    tensor_type = ir.RankedTensorType(value.type)
    dtype = numpy_dtype(tensor_type.element_type)
    if dtype is None:
        return None
    attr = ir.DenseElementsAttr(owner.attributes["value"]).maybe_downcast()
    return np.asarray(np.array(attr), dtype=dtype).reshape(tensor_type.shape)


def create_constant(
    array: np.ndarray, result_type: ir.RankedTensorType, loc: ir.Location
) -> ir.Operation:
    """A stablehlo.constant of ``result_type`` holding ``array``, at the current insertion point."""
    dtype = numpy_dtype(result_type.element_type)
    assert dtype is not None, f"no numpy dtype for {result_type.element_type}"
    data = np.ascontiguousarray(np.asarray(array).astype(dtype).reshape(result_type.shape))
    with loc:
        if data.size and np.all(data == data.flat[0]):
            # Splats print compactly and are what upstream folders produce.
            value = ir.DenseElementsAttr.get_splat(
                result_type, scalar_attr(data.flat[0], result_type.element_type)
            )
        else:
            value = ir.DenseElementsAttr.get(data, type=result_type)
        return ir.Operation.create(
            "stablehlo.constant", results=[result_type], attributes={"value": value}
        )


def scalar_attr(scalar: np.generic, element_type: ir.Type) -> ir.Attribute:
    if isinstance(element_type, ir.FloatType) or str(element_type).startswith("f"):
        return ir.FloatAttr.get(element_type, float(scalar))
    return ir.IntegerAttr.get(element_type, int(scalar))


def as_ranked(type_: ir.Type) -> ir.RankedTensorType | None:
    try:
        return ir.RankedTensorType(type_)
    except ValueError:
        return None


def ranked_type(value: ir.Value) -> ir.RankedTensorType | None:
    return as_ranked(value.type)


def static_shape(value: ir.Value) -> list[int] | None:
    """The shape of a statically shaped ranked tensor ``value``; None for anything else."""
    type_ = value.type
    if isinstance(type_, ir.RankedTensorType) and type_.has_static_shape:
        return list(type_.shape)
    return None


def is_static(type_: ir.Type) -> bool:
    """False for tensors with dynamic dimensions and for unranked tensors."""
    try:
        return ir.ShapedType(type_).has_static_shape
    except ValueError:
        return True


@dataclass(frozen=True)
class GenericParts:
    """A linalg.generic's operands, indexing maps and block arguments, split into ins and outs."""

    inputs: list[ir.Value]
    outputs: list[ir.Value]
    input_map_attrs: list[ir.Attribute]
    output_map_attrs: list[ir.Attribute]
    input_args: list[ir.BlockArgument]
    output_args: list[ir.BlockArgument]
    iterator_types: ir.ArrayAttr

    @property
    def all_parallel(self) -> bool:
        # One print of the array: a str() per iterator type was a third of
        # shlo-fuse-elementwise-trees' time on GPT-2.
        return str(self.iterator_types).count("parallel") == len(self.iterator_types)

    @property
    def input_maps(self) -> list[ir.AffineMap]:
        return [ir.AffineMapAttr(m).value for m in self.input_map_attrs]

    @property
    def output_maps(self) -> list[ir.AffineMap]:
        return [ir.AffineMapAttr(m).value for m in self.output_map_attrs]


def linalg_generic_parts(op: ir.Operation) -> GenericParts:
    n_inputs = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[0]
    operands = list(op.operands)
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    arguments = list(op.regions[0].blocks[0].arguments)
    kinds = ir.ArrayAttr(op.attributes["iterator_types"])
    return GenericParts(
        inputs=operands[:n_inputs],
        outputs=operands[n_inputs:],
        input_map_attrs=maps[:n_inputs],
        output_map_attrs=maps[n_inputs:],
        input_args=arguments[:n_inputs],
        output_args=arguments[n_inputs:],
        iterator_types=kinds,
    )


def copy_parts(op: ir.Operation) -> GenericParts | None:
    """The parts of a linalg.generic that only copies its one input into its one result,
    all loops parallel (a copy, broadcast or transpose, by its maps); None for other ops."""
    if op.name != "linalg.generic" or len(op.results) != 1 or len(op.operands) != 2:
        return None
    body = op.regions[0].blocks[0].operations
    if len(body) != 1:
        return None
    parts = linalg_generic_parts(op)
    if list(body[0].operands) != [parts.input_args[0]] or not parts.all_parallel:
        return None
    return parts


def attribute_dict(op: ir.Operation) -> dict[str, ir.Attribute]:
    """``op``'s attributes by name, to copy onto a rebuilt op."""
    return {
        named.name: named.attr for named in (op.attributes[i] for i in range(len(op.attributes)))
    }


def parallel_generic(inputs: Sequence[ir.Value], outputs: Sequence[ir.Value]) -> ir.Block:
    """A linalg.generic over ``outputs``' shape, every loop parallel, every map the identity,
    created at the current insertion point; its empty body block (one argument per
    operand, of its element type), which the caller fills and ends with linalg.yield."""
    operands = [*inputs, *outputs]
    rank = ir.RankedTensorType(outputs[0].type).rank
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    generic = ir.Operation.create(
        "linalg.generic",
        results=[value.type for value in outputs],
        operands=operands,
        attributes={
            "indexing_maps": ir.ArrayAttr.get([identity] * len(operands)),
            "iterator_types": ir.ArrayAttr.get([parallel] * rank),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(inputs), len(outputs)]),
        },
        regions=1,
    )
    return generic.regions[0].blocks.append(
        *(ir.RankedTensorType(value.type).element_type for value in operands)
    )


def rebuild_generic(
    op: ir.Operation,
    inputs: Sequence[tuple[ir.Value, ir.Attribute]],
    outputs: Sequence[tuple[ir.Value, ir.Attribute]],
    replaces: Sequence[Sequence[ir.Value]],
    iterator_types: ir.ArrayAttr | None = None,
) -> ir.Operation:
    """``op``, a linalg.generic on tensors, rebuilt in its place with these (operand,
    indexing map) inputs and outputs, its other attributes (or these ``iterator_types``)
    and its body; the new block's i-th argument takes the place of the old block
    arguments ``replaces[i]`` (old arguments not listed must be unused). ``op`` is
    erased; the new op, whose results replace its results, is returned."""
    operands = [value for value, _ in [*inputs, *outputs]]
    attributes = attribute_dict(op)
    attributes["indexing_maps"] = ir.ArrayAttr.get([m for _, m in [*inputs, *outputs]])
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(inputs), len(outputs)])
    if iterator_types is not None:
        attributes["iterator_types"] = iterator_types
    with op.location, ir.InsertionPoint(op):
        new = ir.Operation.create(
            "linalg.generic",
            results=[value.type for value, _ in outputs],
            operands=operands,
            attributes=attributes,
            regions=1,
        )
    block = new.regions[0].blocks.append(
        *(v.type.element_type if isinstance(v.type, ir.ShapedType) else v.type for v in operands)
    )
    for argument, old_arguments in zip(block.arguments, replaces, strict=True):
        for old in old_arguments:
            old.replace_all_uses_with(argument)
    for body_op in list(op.regions[0].blocks[0].operations):
        body_op.detach_from_parent()
        block.append(body_op)
    for old_result, new_result in zip(op.results, new.results, strict=True):
        old_result.replace_all_uses_with(new_result)
    op.erase()
    return new


def string_value(attribute: ir.Attribute) -> str:
    """A string attribute's text; bytes that are not UTF-8 become replacement characters.

    ``StringAttr.value`` raises a RuntimeError on them (corrupt or hostile
    input), which would surface as an internal error.
    """
    return ir.StringAttr(attribute).value_bytes.decode(errors="replace")


def result_dims(affine_map: ir.AffineMap) -> list[int] | None:
    """The loop each result of ``affine_map`` is; None unless each is a loop."""
    results = list(affine_map.results)
    if not all(isinstance(result, ir.AffineDimExpr) for result in results):
        return None
    return [result.position for result in results]


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Each dimension's stride, in elements, in a dense row-major array of ``shape``."""
    return [math.prod(shape[i + 1 :]) for i in range(len(shape))]


def callee_name(call: ir.Operation) -> str:
    """The name of the function a ``func.call`` calls."""
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def is_private(function: ir.Operation) -> bool:
    """Whether a ``func.func`` is private: only calls in its module reach it."""
    if "sym_visibility" not in function.attributes:
        return False
    return string_value(function.attributes["sym_visibility"]) == "private"


# Ops whose memref result is a view of their first operand's buffer.
VIEW_OPS = frozenset(
    (
        "memref.cast",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.reinterpret_cast",
        "memref.subview",
        "memref.transpose",
        "memref.view",
    )
)


_DEFAULT_MATMUL_MAPS = {
    "linalg.matmul": "[affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,"
    " affine_map<(m, n, k) -> (m, n)>]",
    "linalg.batch_matmul": "[affine_map<(b, m, n, k) -> (b, m, k)>,"
    " affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]",
}


def has_default_matmul_maps(op: ir.Operation) -> bool:
    """Whether ``op``, a linalg.matmul or batch_matmul, reads its operands untransposed
    and unbroadcast: no ``indexing_maps``, or the default ones."""
    if "indexing_maps" not in op.attributes:
        return True
    with op.context:
        default = ir.Attribute.parse(_DEFAULT_MATMUL_MAPS[op.name])
    return op.attributes["indexing_maps"] == default


def viewed_buffer(value: ir.Value) -> ir.Value:
    """The buffer ``value`` is a view of, through any chain of VIEW_OPS (``value`` if none)."""
    while (producer := defining_op(value)) is not None and producer.name in VIEW_OPS:
        value = producer.operands[0]
    return value


def remap_operands(op: ir.Operation, mapping: dict[ir.Value, ir.Value]) -> None:
    """Replace the operands of ``op`` and of the ops nested in it that ``mapping`` renames
    (for a clone whose operands still name the original's values)."""

    def visit(nested: ir.Operation) -> ir.WalkResult:
        for index, operand in enumerate(nested.operands):
            if operand in mapping:
                nested.operands[index] = mapping[operand]
        return ir.WalkResult.ADVANCE

    op.walk(visit)
