// Python and C++ passes mix in one pipeline, as a string or as flags.
// RUN: shlo-opt %s --pass-pipeline='builtin.module(func.func(stablehlo-canonicalize-dynamism),shlo-simplify,cse,canonicalize)' | FileCheck %s
// RUN: shlo-opt %s --stablehlo-canonicalize-dynamism --shlo-simplify --cse | FileCheck %s
// RUN: shlo-opt %s --stablehlo-canonicalize-dynamism --shlo-simplify --mlir-print-ir-before-all --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=PRINT
// RUN: shlo-opt %s --shlo-simplify --mlir-timing 2>&1 >/dev/null | FileCheck %s --check-prefix=TIMING
// RUN: shlo-opt --list-passes | FileCheck %s --check-prefix=LIST

// CHECK-LABEL: func.func @mixed
// CHECK-NEXT: %[[CST:.+]] = stablehlo.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-NEXT: return %[[CST]]

// PRINT: IR Dump Before StablehloCanonicalizeDynamismPass: stablehlo-canonicalize-dynamism
// PRINT: IR Dump After StablehloCanonicalizeDynamismPass: stablehlo-canonicalize-dynamism
// PRINT: IR Dump Before SimplifyPass: shlo-simplify
// PRINT: IR Dump After SimplifyPass: shlo-simplify

// TIMING: Execution time report
// TIMING: SimplifyPass

// LIST: shlo passes:
// LIST: --shlo-remove-dynamism{{ +}}Refine a shape-polymorphic program into a fully static one.
// LIST: --shlo-simplify
// LIST: StableHLO passes:
// LIST: --stablehlo-refine-shapes
// LIST: MLIR passes:
// LIST: --canonicalize
func.func @mixed() -> tensor<3xf32> {
  %cst = stablehlo.constant dense<1.0> : tensor<f32>
  %shape = stablehlo.constant dense<3> : tensor<1xi32>
  %0 = stablehlo.dynamic_broadcast_in_dim %cst, %shape, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
