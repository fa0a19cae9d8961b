"""shlo-canonicalize-dynamic-reduce-window: make JAX's dynamic reduce_window custom call static.

Ours because upstream is missing: JAX lowers shape-polymorphic cumulative ops
(``jnp.cumsum``, ``cumprod``, ``cummax``) to ``@stablehlo.dynamic_reduce_window``,
whose refinement lives in StableHLO's "ext" passes that the pinned wheel lacks.
Once its window operands are constants and its inputs static, the call becomes
a ``stablehlo.reduce_window`` with the called function as its body; run
``stablehlo-refine-shapes`` afterwards to propagate the static result.

  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%x, %zero, %window, %ones, %ones, %ones, %padding) {called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  ==>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{window_dimensions = array<i64: 5>, ..., padding = dense<[[4, 0]]> : tensor<1x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import constant_array, functions, ops_named, ranked_type
from shlo.pass_framework import Pass, PassError

TARGET = b"stablehlo.dynamic_reduce_window"
# The trailing operands, in order: window dimensions, strides, base dilations,
# window dilations and padding.
WINDOW_OPERANDS = 5
WINDOW_NAMES = ("window dimensions", "window strides", "base dilations", "window dilations")
INT64_MAX = 2**63 - 1


def _is_target(op: ir.Operation) -> bool:
    # Bytes, not str: a call target that is not valid UTF-8 must not raise.
    return (
        op.name == "stablehlo.custom_call"
        and "call_target_name" in op.attributes
        and ir.StringAttr(op.attributes["call_target_name"]).value_bytes == TARGET
    )


def _padded_size(size: int, base: int, pad: list[int]) -> int:
    return (size - 1) * base + 1 + pad[0] + pad[1] if size else pad[0] + pad[1]


def _output_size(padded: int, window: int, stride: int, dilation: int) -> int:
    extent = (window - 1) * dilation + 1
    return 0 if padded < extent else (padded - extent) // stride + 1


def _quoted_symbol(text: str) -> str:
    """A printed symbol name (``@add``, ``@"a b"``, ``"add"``) as an escaped string literal.

    Compared in printed form because the bindings raise converting a name that
    is not valid UTF-8 to str, while the printer escapes it.
    """
    text = text.removeprefix("@")
    return text if text.startswith('"') else f'"{text}"'


def _find_callee(op: ir.Operation, module: ir.Operation) -> ir.Operation:
    called = (
        list(ir.ArrayAttr(op.attributes["called_computations"]))
        if "called_computations" in op.attributes
        else []
    )
    if len(called) != 1:
        raise PassError(op.location, "expected one called computation, the reduction body")
    wanted = _quoted_symbol(str(called[0]))
    for candidate in functions(module):
        if _quoted_symbol(str(candidate.attributes["sym_name"])) == wanted:
            if len(candidate.regions[0].blocks) != 1:
                raise PassError(
                    op.location, f"expected the called computation {called[0]} to have one block"
                )
            return candidate
    raise PassError(op.location, f"expected the called computation {called[0]}")


def _window_arrays(op: ir.Operation, window: list[np.ndarray], rank: int) -> list[list[int]]:
    """The window operands' values, checked as stablehlo.reduce_window requires."""
    for name, array in zip((*WINDOW_NAMES, "padding"), window):
        if array.dtype.kind not in "iu":
            raise PassError(op.location, f"expected integer {name}, got {array.dtype} values")
    arrays = []
    for name, array in zip(WINDOW_NAMES, window[:4]):
        values = array.astype(object).tolist() if array.ndim == 1 else None
        if values is None or len(values) != rank:
            raise PassError(
                op.location,
                f"expected {rank} {name} for a rank-{rank} input, got shape {list(array.shape)}",
            )
        bad = next((v for v in values if v <= 0), None)
        if bad is not None:
            raise PassError(op.location, f"expected positive {name}, got {bad}")
        if max(values, default=0) > INT64_MAX:
            raise PassError(op.location, f"expected {name} below 2^63, got {max(values)}")
        arrays.append(values)
    padding = window[4]
    if padding.shape != (rank, 2):
        raise PassError(
            op.location, f"expected padding of shape [{rank}, 2], got {list(padding.shape)}"
        )
    pads = padding.astype(object).tolist()
    bad = next((v for row in pads for v in row if not -INT64_MAX - 1 <= v <= INT64_MAX), None)
    if bad is not None:
        raise PassError(op.location, f"expected padding that fits in 64 bits, got {bad}")
    return [*arrays, pads]


def _move_body(callee: ir.Operation, region: ir.Region) -> None:
    """Fill ``region`` with a copy of ``callee``'s body, returning with stablehlo.return."""
    copy = callee.clone(ip=False)
    source = copy.regions[0].blocks[0]
    block = region.blocks.append(
        *[argument.type for argument in source.arguments],
        arg_locs=[argument.location for argument in source.arguments],
    )
    for old, new in zip(source.arguments, block.arguments):
        old.replace_all_uses_with(new)
    insertion = ir.InsertionPoint(block)
    for inner in list(source.operations):
        if inner.operation.name == "func.return":
            ir.Operation.create(
                "stablehlo.return",
                operands=list(inner.operands),
                loc=inner.location,
                ip=insertion,
            )
            inner.operation.erase()
        else:
            insertion.insert(inner.operation.detach_from_parent())
    copy.erase()


def static_reduce_window(op: ir.Operation, module: ir.Operation) -> ir.Operation | None:
    """A reduce_window op equivalent to ``op``, or None while ``op`` is not yet static."""
    operands = list(op.operands)
    count = (len(operands) - WINDOW_OPERANDS) // 2
    if count < 1 or len(operands) != 2 * count + WINDOW_OPERANDS or len(op.results) != count:
        raise PassError(
            op.location,
            "expected N inputs, N init values, 5 window operands and N results, "
            f"got {len(operands)} operands and {len(op.results)} results",
        )
    inputs, inits = operands[:count], operands[count : 2 * count]
    window = [constant_array(value) for value in operands[2 * count :]]
    input_types = [ranked_type(value) for value in inputs]
    if any(array is None for array in window) or any(
        t is None or not t.has_static_shape for t in input_types
    ):
        return None
    input_shape = input_types[0].shape  # type: ignore[union-attr]
    dims, strides, bases, dilations, padding = _window_arrays(op, window, len(input_shape))  # type: ignore[arg-type]
    padded = [_padded_size(size, bases[i], padding[i]) for i, size in enumerate(input_shape)]
    if min(padded, default=0) < 0:
        # Negative padding may trim the input, not more than all of it.
        raise PassError(
            op.location, f"expected padding that leaves a non-negative padded size, got {padded}"
        )
    shape = [_output_size(size, dims[i], strides[i], dilations[i]) for i, size in enumerate(padded)]
    if max(shape, default=0) > INT64_MAX:
        raise PassError(op.location, f"expected a result shape that fits in 64 bits, got {shape}")
    callee = _find_callee(op, module)
    with op.location:
        result_types = [
            ir.RankedTensorType.get(shape, t.element_type)  # type: ignore[union-attr]
            for t in input_types
        ]
        attributes = {
            "window_dimensions": ir.DenseI64ArrayAttr.get(dims),
            "window_strides": ir.DenseI64ArrayAttr.get(strides),
            "base_dilations": ir.DenseI64ArrayAttr.get(bases),
            "window_dilations": ir.DenseI64ArrayAttr.get(dilations),
            "padding": ir.DenseElementsAttr.get(
                np.array(padding, dtype=np.int64).reshape(len(padding), 2),
                type=ir.IntegerType.get_signless(64),
            ),
        }
        replacement = ir.Operation.create(
            "stablehlo.reduce_window",
            results=result_types,
            operands=inputs + inits,
            attributes=attributes,
            regions=1,
            ip=ir.InsertionPoint(op),
        )
    _move_body(callee, replacement.regions[0])
    return replacement


@dataclass(frozen=True)
class CanonicalizeDynamicReduceWindowPass(Pass):
    """Make JAX's dynamic reduce_window custom call static."""

    argument: ClassVar[str] = "shlo-canonicalize-dynamic-reduce-window"

    def run(self, module: ir.Operation) -> None:
        for op in [op for op in ops_named(module, "stablehlo.custom_call") if _is_target(op)]:
            replacement = static_reduce_window(op, module)
            if replacement is None:
                continue
            for old, new in zip(op.results, replacement.results):
                # Users still expect the dynamic type until refine-shapes runs, so
                # a convert bridges the types; shlo-simplify folds it once equal.
                bridge = ir.Operation.create(
                    "stablehlo.convert",
                    results=[old.type],
                    operands=[new],
                    loc=op.location,
                    ip=ir.InsertionPoint(op),
                )
                old.replace_all_uses_with(bridge.results[0])
            op.erase()
