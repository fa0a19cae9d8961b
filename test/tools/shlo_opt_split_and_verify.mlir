// Chunks are processed separately; diagnostics keep the file's line numbers.
// RUN: shlo-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @first
func.func @first(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}

// -----

// CHECK: // -----
// CHECK-LABEL: func @second
func.func @second(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}

// -----

func.func @parse_error() {
  // expected-error@+1 {{custom op 'not_an_op' is unknown}}
  not_an_op
}

// -----

func.func @verifier_error(%a: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{expects different type than prior uses: 'tensor<3xf32>' vs 'tensor<{{[0-9]}}xf32>'}}
  %0 = stablehlo.add %a, %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @op_verifier(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@below {{broadcast_dimensions size (0) does not match operand rank (1)}}
  %0 = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
