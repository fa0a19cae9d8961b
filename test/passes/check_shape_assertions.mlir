// RUN: shlo-opt %s --split-input-file --verify-diagnostics --shlo-check-shape-assertions | FileCheck %s

// CHECK-LABEL: func @holds
func.func @holds(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // CHECK-NOT: shape_assertion
  // CHECK: return %arg0
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<3x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "Expected value >= 1 for 'b', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %arg0 : tensor<3x4xf32>
}

// -----

func.func @fails(%arg0: tensor<0x4xf32>) -> tensor<0x4xf32> {
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c4 = stablehlo.constant dense<4> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<0x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  // expected-error@+1 {{Expected value >= 1 for 'b', got 0 (and 4)}}
  stablehlo.custom_call @shape_assertion(%1, %0, %c4) {api_version = 2 : i32, error_message = "Expected value >= 1 for 'b', got {0} (and {1})", has_side_effect = true} : (tensor<i1>, tensor<i32>, tensor<i32>) -> ()
  return %arg0 : tensor<0x4xf32>
}

// -----

// Operands that are still dynamic leave the assertion in place.
// CHECK-LABEL: func @not_yet_static
func.func @not_yet_static(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: stablehlo.custom_call @shape_assertion
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "Expected value >= 1 for 'b', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %arg0 : tensor<?x4xf32>
}

// -----

// After refine-arguments, dimension sizes are read through the operand wrapper.
// CHECK-LABEL: func @through_refinement_wrapper
func.func @through_refinement_wrapper(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  // CHECK-NOT: shape_assertion
  %shape = stablehlo.constant dense<5> : tensor<1xi64>
  %w = stablehlo.custom_call @stablehlo.shape_refinement_operand_wrapper(%arg0, %shape) {indices_of_shape_operands = dense<1> : tensor<1xi64>} : (tensor<5xf32>, tensor<1xi64>) -> tensor<?xf32>
  %c5 = stablehlo.constant dense<5> : tensor<i32>
  %0 = stablehlo.get_dimension_size %w, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.compare EQ, %0, %c5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "expected 5, got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %w : tensor<?xf32>
}

// -----

// A call target that is not valid UTF-8 is not a shape assertion (and must not
// stop the pass: the bindings cannot turn it into a Python string).
// CHECK-LABEL: func @target_not_utf8
func.func @target_not_utf8(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<3x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  // CHECK: stablehlo.custom_call @"sh\E1pe_assertion"
  stablehlo.custom_call @"sh\E1pe_assertion"(%1, %0) {api_version = 2 : i32, error_message = "Expected value >= 1 for 'b', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %arg0 : tensor<3x4xf32>
}

// -----

// A message that is not valid UTF-8 is still reported, its bad bytes replaced.
func.func @message_not_utf8(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %c5 = stablehlo.constant dense<5> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<3x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  // expected-error@+1 {{b', got 3}}
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "Expected value >= 5 for '\FFb', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %arg0 : tensor<3x4xf32>
}

// -----

// Dimension sizes read through a custom call whose target is not valid UTF-8.
// CHECK-LABEL: func @wrapper_target_not_utf8
func.func @wrapper_target_not_utf8(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %shape = stablehlo.constant dense<5> : tensor<1xi64>
  %w = stablehlo.custom_call @"wr\E1pper"(%arg0, %shape) : (tensor<5xf32>, tensor<1xi64>) -> tensor<?xf32>
  %c5 = stablehlo.constant dense<5> : tensor<i32>
  %0 = stablehlo.get_dimension_size %w, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.compare EQ, %0, %c5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  // CHECK: stablehlo.custom_call @shape_assertion
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "expected 5, got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %w : tensor<?xf32>
}
