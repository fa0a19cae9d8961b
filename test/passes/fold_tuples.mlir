// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-fold-tuples)' | FileCheck %s

// CHECK-LABEL: func @nested
func.func @nested(%a: tensor<2xf64>, %b: tensor<i64>) -> (tensor<2xf64>, tensor<i64>) {
  // CHECK-NOT: stablehlo.tuple
  // CHECK-NOT: get_tuple_element
  // CHECK: return %arg0, %arg1
  %inner = stablehlo.tuple %b : tuple<tensor<i64>>
  %t = stablehlo.tuple %a, %inner : tuple<tensor<2xf64>, tuple<tensor<i64>>>
  %0 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tensor<2xf64>
  %1 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tuple<tensor<i64>>
  %2 = stablehlo.get_tuple_element %1[0] : (tuple<tensor<i64>>) -> tensor<i64>
  return %0, %2 : tensor<2xf64>, tensor<i64>
}

// -----

// CHECK-LABEL: func @argument_tuple_stays
func.func @argument_tuple_stays(%t: tuple<tensor<f32>>) -> tensor<f32> {
  // CHECK: stablehlo.get_tuple_element %arg0[0]
  %0 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<f32>>) -> tensor<f32>
  return %0 : tensor<f32>
}
