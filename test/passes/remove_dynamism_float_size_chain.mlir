// Two sizes computed in floating point, the second from the first's result:
// each round of refinement makes the next one's size constant once
// shlo-simplify folds it (F.pad by replicate on two dimensions of a torch
// export). The second round of the pipeline sees the first; RefineWhileFolding
// the rest.
// RUN: shlo-opt %s --shlo-remove-dynamism='types=tensor<12xf32>' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<6xi64>, tensor<3xi64>, tensor<1xi64>)
// CHECK-NOT: dynamic
func.func @main(%arg0: tensor<?xf32>) -> (tensor<?xi64>, tensor<?xi64>, tensor<?xi64>) {
  %one = stablehlo.constant dense<1.0> : tensor<f64>
  %two = stablehlo.constant dense<2.0> : tensor<f64>
  %n0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %f0 = stablehlo.convert %n0 : (tensor<i32>) -> tensor<f64>
  %d0 = stablehlo.subtract %f0, %one : tensor<f64>
  %q0 = stablehlo.divide %d0, %two : tensor<f64>
  %c0 = stablehlo.ceil %q0 : tensor<f64>
  %i0 = stablehlo.convert %c0 : (tensor<f64>) -> tensor<i64>
  %s0 = stablehlo.reshape %i0 : (tensor<i64>) -> tensor<1xi64>
  %a = stablehlo.dynamic_iota %s0, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  %n1 = stablehlo.get_dimension_size %a, dim = 0 : (tensor<?xi64>) -> tensor<i32>
  %f1 = stablehlo.convert %n1 : (tensor<i32>) -> tensor<f64>
  %d1 = stablehlo.subtract %f1, %one : tensor<f64>
  %q1 = stablehlo.divide %d1, %two : tensor<f64>
  %c1 = stablehlo.ceil %q1 : tensor<f64>
  %i1 = stablehlo.convert %c1 : (tensor<f64>) -> tensor<i64>
  %s1 = stablehlo.reshape %i1 : (tensor<i64>) -> tensor<1xi64>
  %b = stablehlo.dynamic_iota %s1, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  %n2 = stablehlo.get_dimension_size %b, dim = 0 : (tensor<?xi64>) -> tensor<i32>
  %f2 = stablehlo.convert %n2 : (tensor<i32>) -> tensor<f64>
  %d2 = stablehlo.subtract %f2, %one : tensor<f64>
  %q2 = stablehlo.divide %d2, %two : tensor<f64>
  %c2 = stablehlo.ceil %q2 : tensor<f64>
  %i2 = stablehlo.convert %c2 : (tensor<f64>) -> tensor<i64>
  %s2 = stablehlo.reshape %i2 : (tensor<i64>) -> tensor<1xi64>
  %c = stablehlo.dynamic_iota %s2, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  return %a, %b, %c : tensor<?xi64>, tensor<?xi64>, tensor<?xi64>
}
