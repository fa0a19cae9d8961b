// --verify-diagnostics fails on a missing diagnostic and on an unexpected one.
// RUN: not shlo-opt %s --split-input-file --verify-diagnostics --shlo-verify-static 2>&1 | FileCheck %s

// CHECK: shlo_opt_verify_failures.mlir:[[# @LINE + 2]]:1: error: expected error "this message never appears" was not produced
func.func @missing(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{this message never appears}}
  return %arg0 : tensor<4xf32>
}

// -----

// CHECK: shlo_opt_verify_failures.mlir:[[# @LINE + 1]]:1: error: unexpected error: refinement left a dynamic value
func.func @unexpected(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  return %arg0 : tensor<?xf32>
}
