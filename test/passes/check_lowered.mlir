// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-check-lowered{target=cpu})' | FileCheck %s

// Every op that no lowering handled is named, not only the first.
func.func @custom_calls(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{custom call @my_kernel is not supported on target cpu: no handler is registered for it}}
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = math.exp %a : tensor<3xf32>
  // expected-error@+1 {{'stablehlo.cbrt' is not supported on target cpu: no lowering handles it}}
  %2 = stablehlo.cbrt %0 : tensor<3xf32>
  return %2 : tensor<3xf32>
}

// -----

// An unlowered op with a region is reported once, not also for its return.
func.func @region(%a: tensor<3xf32>, %i: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{'stablehlo.reduce' is not supported on target cpu}}
  %0 = stablehlo.reduce(%a init: %i) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func @lowered
func.func @lowered(%a: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: math.exp
  %0 = math.exp %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}
