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

from shlo._mlir_compat import ir
from shlo.ir_utils import constant_array, ops_named, ranked_type
from shlo.pass_framework import Pass, PassError

TARGET = "stablehlo.dynamic_reduce_window"
# The trailing operands, in order: window dimensions, strides, base dilations,
# window dilations and padding.
WINDOW_OPERANDS = 5


def _is_target(op: ir.Operation) -> bool:
    return (
        op.name == "stablehlo.custom_call"
        and ir.StringAttr(op.attributes["call_target_name"]).value == TARGET
    )


def _output_size(
    size: int, window: int, stride: int, base: int, dilation: int, pad: list[int]
) -> int:
    padded = (size - 1) * base + 1 + pad[0] + pad[1] if size else pad[0] + pad[1]
    extent = (window - 1) * dilation + 1
    return 0 if padded < extent else (padded - extent) // stride + 1


def _array(values: list[int]) -> str:
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


def _body_region(callee: ir.Operation) -> str:
    """The callee's body in generic form, returning with stablehlo.return."""
    text = callee.get_asm(print_generic_op_form=True)
    region = text[text.index("({") : text.rindex("})") + 2]
    return region.replace('"func.return"', '"stablehlo.return"')


def static_reduce_window(op: ir.Operation, module: ir.Operation) -> ir.Operation | None:
    """A reduce_window op equivalent to ``op``, or None while ``op`` is not yet static."""
    operands = list(op.operands)
    count = (len(operands) - WINDOW_OPERANDS) // 2
    inputs, inits = operands[:count], operands[count : 2 * count]
    window = [constant_array(value) for value in operands[2 * count :]]
    input_types = [ranked_type(value) for value in inputs]
    if any(array is None for array in window) or any(
        t is None or not t.has_static_shape for t in input_types
    ):
        return None
    dims, strides, bases, dilations, padding = (array.tolist() for array in window)  # type: ignore[union-attr]
    shape = [
        _output_size(size, dims[i], strides[i], bases[i], dilations[i], padding[i])
        for i, size in enumerate(input_types[0].shape)  # type: ignore[union-attr]
    ]
    callee_name = ir.FlatSymbolRefAttr(ir.ArrayAttr(op.attributes["called_computations"])[0]).value
    callee = next(
        (
            f
            for f in ops_named(module, "func.func")
            if ir.StringAttr(f.attributes["sym_name"]).value == callee_name
        ),
        None,
    )
    if callee is None:
        raise PassError(op.location, f"expected the called computation @{callee_name}")

    element_types = [str(ranked_type(value).element_type) for value in inputs]  # type: ignore[union-attr]
    dims_text = "".join(f"{size}x" for size in shape)
    result_types = [f"tensor<{dims_text}{element}>" for element in element_types]
    operand_types = [str(value.type) for value in inputs + inits]
    names = [f"%operand{i}" for i in range(len(operand_types))]
    rows = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
    wrapper = (
        "func.func @wrapper("
        + ", ".join(f"{name}: {t}" for name, t in zip(names, operand_types))
        + ") {\n"
        + f'  %r:{count} = "stablehlo.reduce_window"({", ".join(names)}) <{{'
        + f"window_dimensions = {_array(dims)}, window_strides = {_array(strides)}, "
        + f"base_dilations = {_array(bases)}, window_dilations = {_array(dilations)}, "
        + f"padding = dense<[{rows}]> : tensor<{len(padding)}x2xi64>}}> {_body_region(callee)}"
        + f" : ({', '.join(operand_types)}) -> ({', '.join(result_types)})\n"
        + "  return\n}"
    )
    parsed = ir.Module.parse(wrapper, op.context)
    template = ops_named(parsed.operation, "stablehlo.reduce_window")[0]
    replacement = template.clone(ip=ir.InsertionPoint(op))
    for index, value in enumerate(inputs + inits):
        replacement.operands[index] = value
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
