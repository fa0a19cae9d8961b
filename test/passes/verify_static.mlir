// RUN: shlo-opt %s --split-input-file --verify-diagnostics --shlo-verify-static | FileCheck %s

// CHECK-LABEL: func @static
func.func @static(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}

// -----

// expected-error@+1 {{refinement left a dynamic value: argument #1 of @dynamic_argument has type tensor<?xi32>}}
func.func @dynamic_argument(%arg0: tensor<4xf32>, %arg1: tensor<?xi32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}

// -----

func.func @dynamic_result(%arg0: tensor<1xi32>) -> tensor<?xf32> {
  // expected-error@+1 {{refinement left a dynamic value: result #0 of 'stablehlo.dynamic_iota' has type tensor<?xf32>}}
  %0 = stablehlo.dynamic_iota %arg0, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
