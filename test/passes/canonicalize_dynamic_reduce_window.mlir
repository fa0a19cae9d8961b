// RUN: shlo-opt %s --split-input-file --shlo-canonicalize-dynamic-reduce-window | FileCheck %s

// CHECK-LABEL: func @cumulative_sum
// CHECK: %[[WINDOW:.+]] = "stablehlo.reduce_window"(%arg0, %[[ZERO:.+]]) <{base_dilations = array<i64: 1>, padding = dense<{{\[\[}}4, 0]]> : tensor<1x2xi64>, window_dilations = array<i64: 1>, window_dimensions = array<i64: 5>, window_strides = array<i64: 1>}> ({
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<f32>, %[[B:.+]]: tensor<f32>):
// CHECK-NEXT:   %[[SUM:.+]] = stablehlo.add %[[A]], %[[B]] : tensor<f32>
// CHECK-NEXT:   stablehlo.return %[[SUM]] : tensor<f32>
// CHECK-NEXT: }) : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
// CHECK: stablehlo.convert %[[WINDOW]] : (tensor<5xf32>) -> tensor<?xf32>
// CHECK-NOT: dynamic_reduce_window
func.func @cumulative_sum(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Strides and dilations give the output size: ((7 - 1) * 2 + 1 + 1 + 0 - 3) / 2 + 1 = 6.
// CHECK-LABEL: func @strided_and_dilated
// CHECK: "stablehlo.reduce_window"
// CHECK: }) : (tensor<7xf32>, tensor<f32>) -> tensor<6xf32>
func.func @strided_and_dilated(%arg0: tensor<7xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<2> : tensor<1xi32>
  %stride = stablehlo.constant dense<2> : tensor<1xi32>
  %base = stablehlo.constant dense<2> : tensor<1xi32>
  %dilation = stablehlo.constant dense<2> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[1, 0]]> : tensor<1x2xi32>
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %stride, %base, %dilation, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<7xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Window operands that are not constant yet leave the call alone.
// CHECK-LABEL: func @not_constant
// CHECK: stablehlo.custom_call @stablehlo.dynamic_reduce_window
func.func @not_constant(%arg0: tensor<5xf32>, %window: tensor<1xi32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}
