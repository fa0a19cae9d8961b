"""shlo-lower-reduce-window-scan: lower cumulative reduce_windows (cumsum & co.) to a linear scan.

Ours because upstream is slow: ``stablehlo-legalize-to-linalg`` lowers every
``stablehlo.reduce_window`` to a pooling loop nest that visits the whole
window for each output, so ``jnp.cumsum`` and its friends, exported as a
window covering the whole axis, take quadratic time. A reduce_window is a
scan when, along one axis of size ``n``, the window has size ``w >= n`` and
padding ``(w - 1, 0)`` (``out[i] = x[0] op ... op x[i]``) or ``(0, w - 1)``
(``out[i] = x[i] op ... op x[n - 1]``), with size 1 and no padding on every
other axis, unit strides and dilations, and a body that is one ``add``,
``multiply``, ``maximum``, ``minimum``, ``and`` or ``or`` of its two arguments.
The init must be a constant identity of ``add``/``multiply`` (0 or 1; complex
numbers: ``add`` only), because the padding repeats it; for the idempotent
ops any init is exact. Variadic reduce_windows and every other window are
left alone.

A scan becomes a row-major ``scf.for`` nest of scalar ``tensor.extract`` /
``tensor.insert``, which bufferizes in place with no allocation, and whose
innermost loop walks contiguous memory (LLVM vectorizes it when the axis is
not the last one). Along the last axis the running value is carried in a
register; along another axis each element combines the result one step back
with the operand, and the first step, peeled, combines the init. Forward
scans combine in the reference interpreter's order (``init op x[0] op x[1]
...``); reverse ones from ``x[n - 1]`` down. Slices of whole tensors with
``linalg`` ops would allocate and copy a slice per step in today's
bufferization. The scalar ops are those of ``stablehlo-legalize-to-linalg``
after ``shlo-fix-elementwise-semantics``: booleans add with OR, and unsigned
integers (computed as signless) compare unsigned.

  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[0, 0], [3, 0]]> : tensor<2x2xi64>,
                                               window_dimensions = array<i64: 1, 4>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  ==>
  %init = tensor.extract %zero[] : tensor<f32>
  %empty = tensor.empty() : tensor<2x4xf32>
  %0 = scf.for %i = %c0 to %c2 step %c1 iter_args(%out = %empty) -> (tensor<2x4xf32>) {
    %row:2 = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %init, %o = %out) -> (f32, tensor<2x4xf32>) {
      %xk = tensor.extract %x[%i, %k] : tensor<2x4xf32>
      %next = arith.addf %acc, %xk : f32
      %o2 = tensor.insert %next into %o[%i, %k] : tensor<2x4xf32>
      scf.yield %next, %o2 : f32, tensor<2x4xf32>
    }
    scf.yield %row#1 : tensor<2x4xf32>
  }
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, scf, tensor
from shlo.ir_templates import signless_element
from shlo.ir_utils import defining_op, ops_named
from shlo.pass_framework import Pass, no_match

# Body ops whose repetition changes nothing (x op x == x): any init is exact,
# however many times the padding repeats it.
IDEMPOTENT = ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.and", "stablehlo.or")
# Body ops that need their identity as init: the padding repeats the init.
WITH_IDENTITY = {"stablehlo.add": 0, "stablehlo.multiply": 1}
# On booleans these are OR (false < true); multiply, minimum and and are AND.
BOOLEAN_OR = ("stablehlo.add", "stablehlo.maximum", "stablehlo.or")


@dataclass(frozen=True)
class Scan:
    """A reduce_window that is a scan along ``axis``, from the end when ``reverse``."""

    axis: int
    reverse: bool
    body: str


def _i64_array(op: ir.Operation, name: str, rank: int, default: int) -> list[int]:
    if name not in op.attributes:
        return [default] * rank
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _padding(op: ir.Operation, rank: int) -> list[tuple[int, int]]:
    if "padding" not in op.attributes:
        return [(0, 0)] * rank
    values = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["padding"])]
    if len(values) == 1:
        values *= 2 * rank  # a splat iterates as one element
    return [(values[2 * d], values[2 * d + 1]) for d in range(rank)]


def _splat_constant(value: ir.Value) -> ir.Operation | None:
    """The stablehlo.constant behind ``value``, through rank-0 broadcasts."""
    owner = defining_op(value)
    while owner is not None and owner.name == "stablehlo.broadcast_in_dim":
        owner = defining_op(owner.operands[0])
    if owner is not None and owner.name == "stablehlo.constant":
        return owner
    return None


def _is_constant(value: ir.Value, wanted: int) -> bool:
    """Whether ``value`` is the constant ``wanted`` (0 or 1); -0.0 counts as 0."""
    constant = _splat_constant(value)
    if constant is None:
        return False
    element = ir.RankedTensorType(constant.results[0].type).element_type
    if isinstance(element, ir.ComplexType):
        # The bindings raise on reading a complex dense attribute: read its text.
        match = re.search(r"dense<\(([^,()]+),([^,()]+)\)>", str(constant))
        try:
            return match is not None and (float(match[1]), float(match[2])) == (wanted, 0.0)
        except ValueError:
            return False
    splat = ir.DenseElementsAttr(constant.attributes["value"]).get_splat_value()
    if isinstance(element, ir.IntegerType):
        bits = ir.IntegerAttr(splat).value
        # i1 reads as -1 when true.
        return bits == wanted or (element.width == 1 and bits == -wanted)
    return ir.FloatAttr(splat).value == wanted


def _same_values(values: list[ir.Value], arguments: list[ir.Value]) -> bool:
    """Whether ``values`` are the two ``arguments``, in either order."""
    return (values[0] == arguments[0] and values[1] == arguments[1]) or (
        values[0] == arguments[1] and values[1] == arguments[0]
    )


def _reject(op: ir.Operation, reason: str) -> None:
    no_match(op, reason)


def _body_kind(op: ir.Operation, element: ir.Type) -> str | None:
    """The name of the single binary op of ``op``'s body, when that is all it does."""
    block = op.regions[0].blocks[0]
    operations = list(block.operations)
    if len(operations) != 2:
        return None
    binary, terminator = (o.operation for o in operations)
    scalar = ir.RankedTensorType.get([], element)
    arguments = list(block.arguments)
    if any(a.type != scalar for a in arguments):
        return None
    if (
        binary.name not in (*IDEMPOTENT, *WITH_IDENTITY)
        or len(binary.operands) != 2
        or not _same_values(list(binary.operands), arguments)
        or len(terminator.operands) != 1
        or terminator.operands[0] != binary.results[0]
    ):
        return None
    return binary.name


def match_scan(op: ir.Operation) -> Scan | None:
    """How ``op`` scans, or None when it is not a scan this pass lowers."""
    if len(op.operands) != 2 or len(op.results) != 1:
        return _reject(op, "expected one operand")
    operand_type = ir.RankedTensorType(op.operands[0].type)
    if not operand_type.has_static_shape or op.results[0].type != operand_type:
        return _reject(op, "expected a static result of the operand's type")
    if 0 in operand_type.shape:
        return _reject(op, "expected a non-empty operand")
    kind = _body_kind(op, operand_type.element_type)
    if kind is None:
        return _reject(op, "expected a body of one binary op")
    if isinstance(operand_type.element_type, ir.ComplexType) and kind != "stablehlo.add":
        return _reject(op, "expected add on complex numbers")
    if kind in WITH_IDENTITY and not _is_constant(op.operands[1], WITH_IDENTITY[kind]):
        return _reject(op, "expected the body's identity as init")
    rank = operand_type.rank
    window = _i64_array(op, "window_dimensions", rank, 1)
    units = [
        *_i64_array(op, "window_strides", rank, 1),
        *_i64_array(op, "base_dilations", rank, 1),
        *_i64_array(op, "window_dilations", rank, 1),
    ]
    if any(u != 1 for u in units):
        return _reject(op, "expected unit strides and dilations")
    padding = _padding(op, rank)
    axes = [d for d in range(rank) if window[d] != 1 or padding[d] != (0, 0)]
    if len(axes) != 1:
        return _reject(op, "expected a window along one axis")
    (axis,) = axes
    size, span = operand_type.shape[axis], window[axis]
    if span < size:
        return _reject(op, "expected a window covering the axis")
    if padding[axis] == (span - 1, 0):
        return Scan(axis, reverse=False, body=kind)
    if padding[axis] == (0, span - 1):
        return Scan(axis, reverse=True, body=kind)
    return _reject(op, "expected the padding of a prefix or suffix scan")


def _bitcast(value: ir.Value, element: ir.Type) -> ir.Value:
    """``value`` with element type ``element`` and the same bits; itself when it has it."""
    value_type = ir.RankedTensorType(value.type)
    if value_type.element_type == element:
        return value
    new_type = ir.RankedTensorType.get(value_type.shape, element)
    return ir.Operation.create(
        "stablehlo.bitcast_convert", results=[new_type], operands=[value]
    ).result


def _scalar_op(body: str, element: ir.Type) -> str:
    """The arith or complex op computing ``body`` on scalars of ``element`` (signless storage).

    As stablehlo-legalize-to-linalg after shlo-fix-elementwise-semantics:
    booleans add with OR and multiply with AND, and compare as unsigned.
    """
    if isinstance(element, ir.ComplexType):
        return "complex.add"  # match_scan lets complex numbers through only for add
    if isinstance(element, ir.IntegerType):
        if element.width == 1:
            return "arith.ori" if body in BOOLEAN_OR else "arith.andi"
        unsigned = "u" if element.is_unsigned else "s"
        return {
            "stablehlo.add": "arith.addi",
            "stablehlo.multiply": "arith.muli",
            "stablehlo.maximum": f"arith.max{unsigned}i",
            "stablehlo.minimum": f"arith.min{unsigned}i",
            "stablehlo.and": "arith.andi",
            "stablehlo.or": "arith.ori",
        }[body]
    return {
        "stablehlo.add": "arith.addf",
        "stablehlo.multiply": "arith.mulf",
        # NaN-propagating, as the spec's maximum and minimum.
        "stablehlo.maximum": "arith.maximumf",
        "stablehlo.minimum": "arith.minimumf",
    }[body]


class _ScanBuilder:
    """Builds the loop nest of one scan, at the current insertion point.

    The loops run in row-major order, so the innermost one walks contiguous
    memory. A scan along the last axis carries its running value in a
    register; along another axis each element combines the result one step
    back with the operand (the first step of the axis, peeled, uses the init).
    """

    def __init__(self, op: ir.Operation, scan: Scan) -> None:
        operand_type = ir.RankedTensorType(op.operands[0].type)
        self.shape = list(operand_type.shape)
        self.axis = scan.axis
        self.reverse = scan.reverse
        self.element = operand_type.element_type
        # Loop values use signless storage; unsignedness lives on in the
        # choice of scalar op.
        self.storage = signless_element(self.element)
        self.scalar_op = _scalar_op(scan.body, self.element)
        # Every index constant the loops use, made once, before them all.
        values = sorted({0, 1, self.shape[self.axis] - 1, *self.shape})
        self.constants = {v: arith.ConstantOp(ir.IndexType.get(), v).result for v in values}
        self.one = self.index(1)
        self.last = self.index(self.shape[self.axis] - 1)

    def index(self, value: int) -> ir.Value:
        return self.constants[value]

    def combine(self, accumulated: ir.Value, current: ir.Value) -> ir.Value:
        return ir.Operation.create(
            self.scalar_op, results=[self.storage], operands=[accumulated, current]
        ).result

    def position(self, k: ir.Value) -> ir.Value:
        """The index along the axis of step ``k``."""
        return arith.SubIOp(self.last, k).result if self.reverse else k

    def loops(
        self,
        dims: range,
        carried: list[ir.Value],
        body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
    ) -> list[ir.Value]:
        """A loop nest over ``dims`` carrying ``carried``; ``body(ivs, carried)`` yields."""
        if not dims:
            return body([], carried)
        loop = scf.ForOp(self.index(0), self.index(self.shape[dims[0]]), self.one, carried)
        with ir.InsertionPoint(loop.body):
            iv = loop.induction_variable

            def inner(ivs: list[ir.Value], values: list[ir.Value]) -> list[ir.Value]:
                return body([iv, *ivs], values)

            scf.YieldOp(self.loops(dims[1:], list(loop.inner_iter_args), inner))
        return list(loop.results)

    def build(self, source: ir.Value, init: ir.Value) -> ir.Value:
        rank = len(self.shape)
        result = tensor.EmptyOp(self.shape, self.storage).result
        if self.axis == rank - 1:

            def row(outer: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
                def step(ks: list[ir.Value], values: list[ir.Value]) -> list[ir.Value]:
                    accumulated, out = values
                    index = [*outer, self.position(ks[0])]
                    value = self.combine(accumulated, tensor.ExtractOp(source, index).result)
                    return [value, tensor.InsertOp(value, out, index).result]

                return self.loops(range(self.axis, rank), [init, *carried], step)[1:]

            return self.loops(range(self.axis), [result], row)[0]

        def inner(
            outer: list[ir.Value], at: ir.Value, before: ir.Value | None, out: ir.Value
        ) -> list[ir.Value]:
            """``out`` with row ``at`` of the axis written; ``before``: the row it follows."""

            def element(ivs: list[ir.Value], values: list[ir.Value]) -> list[ir.Value]:
                (out,) = values
                index = [*outer, at, *ivs]
                previous = init
                if before is not None:
                    previous = tensor.ExtractOp(out, [*outer, before, *ivs]).result
                value = self.combine(previous, tensor.ExtractOp(source, index).result)
                return [tensor.InsertOp(value, out, index).result]

            return self.loops(range(self.axis + 1, rank), [out], element)

        def along_axis(outer: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
            # The first step combines the init with x[first]...
            first = self.shape[self.axis] - 1 if self.reverse else 0
            (out,) = inner(outer, self.index(first), None, carried[0])
            # ...and each next one the result one step back with x[position].
            loop = scf.ForOp(self.one, self.index(self.shape[self.axis]), self.one, [out])
            with ir.InsertionPoint(loop.body):
                at = self.position(loop.induction_variable)
                before = (arith.AddIOp if self.reverse else arith.SubIOp)(at, self.one).result
                scf.YieldOp(inner(outer, at, before, loop.inner_iter_args[0]))
            return list(loop.results)

        return self.loops(range(self.axis), [result], along_axis)[0]


def lower_scan(op: ir.Operation, scan: Scan) -> None:
    with ir.InsertionPoint(op), op.location:
        operand, init = op.operands
        builder = _ScanBuilder(op, scan)
        source = _bitcast(operand, builder.storage)
        first = tensor.ExtractOp(_bitcast(init, builder.storage), []).result
        result = builder.build(source, first)
        op.results[0].replace_all_uses_with(_bitcast(result, builder.element))
    op.erase()


@dataclass(frozen=True)
class LowerReduceWindowScanPass(Pass):
    """Lower cumulative reduce_windows (cumsum & co.) to a linear-time scan."""

    argument: ClassVar[str] = "shlo-lower-reduce-window-scan"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.reduce_window"):
            scan = match_scan(op)
            if scan is not None:
                lower_scan(op, scan)
