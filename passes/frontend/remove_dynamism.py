"""shlo-remove-dynamism: refine a shape-polymorphic program into a fully static one.

A pipeline after the dynamism seed and StableHLO's remove-dynamism pipeline:
make shape computations in other dialects StableHLO (torch-mlir's), turn
composites into calls, refine the arguments of @main to ``types``, check JAX
shape assertions, propagate shapes, replace dynamic ops by static ones, inline JAX's wrapper
functions, fold what is left and verify that nothing dynamic remains. Without
``types`` the argument types are kept and only their consequences refined.
The function refined is @main, or the module's only function; a module with
neither (several functions, or functions only in nested modules) is an error.

  func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
    %cst = stablehlo.constant dense<1.0> : tensor<f32>
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %2 = stablehlo.dynamic_broadcast_in_dim %cst, %1, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
    %3 = stablehlo.add %arg0, %2 : tensor<?xf32>
    return %3 : tensor<?xf32>
  }
  ==> shlo-remove-dynamism{types=tensor<16xf32>}
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
    %0 = stablehlo.add %arg0, %cst : tensor<16xf32>
    return %0 : tensor<16xf32>
  }
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, passmanager
from shlo.folding import fold_constants
from shlo.pass_framework import Pass, PassError, PassPipeline


@dataclass(frozen=True)
class RefinementTargetCheck(Pass):
    """Fail, at the module, unless it has @main or exactly one function at its top level.

    StableHLO's refinement passes refine that function; without one, refine-shapes
    fails without a diagnostic and refine-arguments with a message that names no file.
    """

    argument: ClassVar[str] = "shlo-remove-dynamism"

    def __str__(self) -> str:
        return "(check: the module has @main or exactly one function at its top level)"

    def run(self, module: ir.Operation) -> None:
        top_level = list(module.regions[0].blocks[0].operations)
        # Printed, not decoded: a name may not be valid UTF-8 (@"a\FF").
        printed = [
            str(op.attributes["sym_name"]) for op in top_level if op.operation.name == "func.func"
        ]
        names = [name[1:-1] if re.fullmatch(r'"[\w.$-]+"', name) else name for name in printed]
        if "main" in names or len(names) == 1:
            return
        expected = (
            "shlo-remove-dynamism refines @main, or the only function, of the top-level "
            "module: expected a function @main or exactly one function there"
        )
        if names:
            listed = ", ".join(f"@{name}" for name in names[:5])
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            raise PassError(module.location, f"{expected}, found {listed}{more}")
        nested = any(op.operation.name == "builtin.module" for op in top_level)
        found = "only nested modules, whose functions are not refined" if nested else "none"
        raise PassError(module.location, f"{expected}, found {found}")


# Rounds of RefineWhileFolding: each one's folds make the sizes of the next
# static (F.pad by replicate on two dimensions of a torch export needs two).
MAX_EXTRA_ROUNDS = 8


def _dynamic_values(module: ir.Operation) -> int:
    """How many op results in ``module`` have a ranked tensor type of dynamic shape."""
    count = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal count
        for result in op.results:
            type_ = result.type
            if isinstance(type_, ir.RankedTensorType) and not type_.has_static_shape:
                count += 1
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return count


@dataclass(frozen=True)
class RefineWhileFolding(Pass):
    """Fold and refine again while that makes more values static.

    refine-shapes folds integer shape arithmetic, not the floating-point
    arithmetic torch-mlir computes some sizes with (arange's length): a size
    that shlo-simplify folds after one round of refinement may feed another
    that only the next round can see. A program that is already static costs
    one walk.
    """

    argument: ClassVar[str] = "shlo-remove-dynamism"

    def __str__(self) -> str:
        return "(fold and refine again while values become static)"

    def run(self, module: ir.Operation) -> None:
        refine = (
            "builtin.module(stablehlo-refine-shapes,func.func(stablehlo-canonicalize-dynamism))"
        )
        dynamic = _dynamic_values(module)
        for _ in range(MAX_EXTRA_ROUNDS):
            if not dynamic:
                return
            fold_constants(module)
            passmanager.PassManager.parse(refine).run(module)
            remaining = _dynamic_values(module)
            if remaining >= dynamic:
                return  # shlo-verify-static names what stays dynamic
            dynamic = remaining


# Ops that refinement replaces or folds though every type is static.
_SHAPE_OPS = frozenset(
    "stablehlo." + name
    for name in (
        "compute_reshape_shape cstr_reshapable custom_call dynamic_broadcast_in_dim "
        "dynamic_conv dynamic_gather dynamic_iota dynamic_pad dynamic_reshape "
        "get_dimension_size real_dynamic_slice"
    ).split()
)
_FUNCTION_OPS = frozenset(("func.func", "func.return", "func.call", "builtin.module"))


def _static_type(type_: ir.Type) -> bool:
    return isinstance(type_, ir.RankedTensorType) and type_.has_static_shape


def is_static_stablehlo(module: ir.Operation) -> bool:
    """Whether ``module`` is StableHLO (and functions) of static tensors only, with no
    op that refinement would replace: it has nothing to refine (``static-program``)."""
    static = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal static
        name = op.name
        if name in _FUNCTION_OPS:
            if name == "func.func":
                signature = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                static = all(map(_static_type, [*signature.inputs, *signature.results]))
        else:
            static = name.startswith("stablehlo.") and name not in _SHAPE_OPS
            static = static and all(_static_type(result.type) for result in op.results)
        return ir.WalkResult.ADVANCE if static else ir.WalkResult.INTERRUPT

    module.walk(visit)
    return static


@dataclass(frozen=True)
class RemoveDynamismPass(PassPipeline):
    """Refine a shape-polymorphic program into a fully static one.

    ``static-program``: the caller found the program static already
    (``is_static_stablehlo``): JAX's wrapper is inlined and constants folded,
    without the refinement (GPT-2: 34 instead of 45-52 ms).
    """

    argument: ClassVar[str] = "shlo-remove-dynamism"
    types: tuple[str, ...] = ()
    static_program: bool = False

    def elements(self) -> list[str | Pass]:  # type: ignore[override]
        if self.static_program and not self.types:
            return [
                RefinementTargetCheck(),
                "func.func(stablehlo-legalize-composite-to-call)",
                "shlo-check-shape-assertions",
                "inline{default-pipeline=}",
                "symbol-dce",
                "shlo-simplify",
                "cse",
                "shlo-verify-static",
            ]
        # Composites (JAX's chlo.top_k, say) become calls to their decompositions,
        # which refine-shapes specializes like any callee; it cannot refine a
        # composite's decomposition in place.
        steps: list[str | Pass] = [
            # Its own error for a module refinement cannot work on.
            RefinementTargetCheck(),
            # torch-mlir's exports compute shapes in the shape, tensor and arith
            # dialects and hold arith constants: as StableHLO they refine.
            "shlo-legalize-shape-computations",
            "shlo-arith-constants-to-stablehlo",
            "func.func(stablehlo-legalize-composite-to-call)",
        ]
        if self.types:
            # Replace @main's argument types; shapes are not propagated yet.
            steps.append("stablehlo-refine-arguments{types=" + ",".join(self.types) + "}")
        steps += [
            # Fail early, with JAX's message, on inputs that break the export's assumptions.
            "shlo-check-shape-assertions",
            # Propagate static shapes through the program and into callees.
            "stablehlo-refine-shapes",
            # dynamic_* ops with constant shape operands become their static forms.
            "func.func(stablehlo-canonicalize-dynamism)",
            # Sizes that refine-shapes does not fold: torch's arange length,
            # ceil((end - start) / step), is computed in f64 (F.unfold, strided
            # aranges); folded here, the second round below makes them static.
            "shlo-simplify",
            # JAX's cumulative ops use a custom call that refine-shapes leaves
            # dynamic; once static, shapes are propagated from it once more.
            "shlo-canonicalize-dynamic-reduce-window",
            "stablehlo-refine-shapes",
            "func.func(stablehlo-canonicalize-dynamism)",
            # Assertions whose operands only became constant during propagation.
            "shlo-check-shape-assertions",
            # JAX exports call @_wrapped_jax_export_main; make it one function
            # (the simplify and cse below clean up, not the inliner's canonicalize).
            "inline{default-pipeline=}",
            "symbol-dce",
            # Fold the constant broadcasts and shape arithmetic refinement leaves.
            "shlo-simplify",
            "cse",
            RefineWhileFolding(),
            # Name the first value that is still dynamic, if any.
            "shlo-verify-static",
        ]
        return steps
