// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-split-full-reductions{min-elements=16})' | FileCheck %s

// Every dimension reduced: all but the first, then the first, with the same body.
// CHECK-LABEL: func @sum_all
func.func @sum_all(%x: tensor<8x4x2xf32>) -> tensor<f32> {
  // CHECK: %[[Z:.+]] = stablehlo.constant
  // CHECK: %[[ROWS:.+]] = stablehlo.reduce(%arg0 init: %[[Z]]) applies stablehlo.add across dimensions = [1, 2] : (tensor<8x4x2xf32>, tensor<f32>) -> tensor<8xf32>
  // CHECK: %[[S:.+]] = stablehlo.reduce(%[[ROWS]] init: %[[Z]]) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  // CHECK: return %[[S]]
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<8x4x2xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Some dimensions kept, or one dimension: left alone.
// CHECK-LABEL: func @partial
func.func @partial(%x: tensor<8x4xf32>, %y: tensor<64xf32>) -> (tensor<8xf32>, tensor<f32>) {
  // CHECK: across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
  // CHECK: across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
  // CHECK-NOT: stablehlo.reduce
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %a = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
  %b = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
  return %a, %b : tensor<8xf32>, tensor<f32>
}
