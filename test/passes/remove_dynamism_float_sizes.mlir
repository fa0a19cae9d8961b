// A size computed in floating point, as torch-mlir computes torch.arange's
// length, ceil((end - start) / step): refine-shapes folds integer arithmetic
// only, so shlo-simplify folds this one before the second round of refinement.
// RUN: shlo-opt %s --shlo-remove-dynamism='types=tensor<12xf32>' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%{{.+}}: tensor<12xf32>) -> tensor<6xf32>
// CHECK: stablehlo.iota dim = 0 : tensor<6xi64>
// CHECK-NOT: dynamic
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %size = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %end = stablehlo.convert %size : (tensor<i32>) -> tensor<f64>
  %one = stablehlo.constant dense<1.0> : tensor<f64>
  %two = stablehlo.constant dense<2.0> : tensor<f64>
  %span = stablehlo.subtract %end, %one : tensor<f64>
  %steps = stablehlo.divide %span, %two : tensor<f64>
  %ceil = stablehlo.ceil %steps : tensor<f64>
  %count = stablehlo.convert %ceil : (tensor<f64>) -> tensor<i64>
  %shape = stablehlo.reshape %count : (tensor<i64>) -> tensor<1xi64>
  %iota = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  %result = stablehlo.convert %iota : (tensor<?xi64>) -> tensor<?xf32>
  return %result : tensor<?xf32>
}
