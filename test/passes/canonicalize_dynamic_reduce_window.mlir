// RUN: shlo-opt %s --split-input-file --verify-diagnostics --shlo-canonicalize-dynamic-reduce-window | FileCheck %s

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

// -----

// A negative window size is the user's error, reported at the call.
func.func @negative_window(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<0xFFFFFFFF> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  // expected-error@+1 {{expected positive window dimensions, got -1}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @zero_stride(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %stride = stablehlo.constant dense<0> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  // expected-error@+1 {{expected positive window strides, got 0}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %stride, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// One window size per input dimension.
func.func @window_rank_mismatch(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<2xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  // expected-error@+1 {{expected 1 window dimensions for a rank-1 input, got shape [2]}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @padding_shape(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[4, 0]> : tensor<2xi32>
  // expected-error@+1 {{expected padding of shape [1, 2], got [2]}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @missing_body(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  // expected-error@+1 {{expected one called computation, the reduction body}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A body whose name is not valid UTF-8 is still found (the bindings cannot
// turn that name into a Python string).
// CHECK-LABEL: func @non_utf8_body_name
// CHECK: "stablehlo.reduce_window"
// CHECK: stablehlo.add
// CHECK: }) : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
func.func @non_utf8_body_name(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@"a\FFdd"]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @"a\FFdd"(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Two inputs reduced together keep both results.
// CHECK-LABEL: func @two_inputs
// CHECK: %[[WINDOW:.+]]:2 = "stablehlo.reduce_window"(%arg0, %arg1, %[[Z0:.+]], %[[Z1:.+]])
// CHECK: stablehlo.return %{{.+}}, %{{.+}} : tensor<f32>, tensor<i32>
// CHECK: }) : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
func.func @two_inputs(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xi32>) -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %z0 = stablehlo.constant dense<0.0> : tensor<f32>
  %z1 = stablehlo.constant dense<0> : tensor<i32>
  %window = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %ones = stablehlo.constant dense<1> : tensor<2xi64>
  %padding = stablehlo.constant dense<0> : tensor<2x2xi64>
  %0:2 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %arg1, %z0, %z1, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@pair]} : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2x2xi64>) -> (tensor<?x?xf32>, tensor<?x?xi32>)
  return %0#0, %0#1 : tensor<?x?xf32>, tensor<?x?xi32>
}
func.func private @pair(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %0 = stablehlo.add %a, %c : tensor<f32>
  %1 = stablehlo.add %b, %d : tensor<i32>
  return %0, %1 : tensor<f32>, tensor<i32>
}

// -----

// Negative padding trims the input, but cannot trim more than all of it.
func.func @padding_past_the_input(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5> : tensor<1xi32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[-3, -3]]> : tensor<1x2xi32>
  // expected-error@+1 {{expected padding that leaves a non-negative padded size, got [-1]}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @float_window(%arg0: tensor<5xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %window = stablehlo.constant dense<5.0> : tensor<1xf32>
  %ones = stablehlo.constant dense<1> : tensor<1xi32>
  %padding = stablehlo.constant dense<[[4, 0]]> : tensor<1x2xi32>
  // expected-error@+1 {{expected integer window dimensions, got float32 values}}
  %0 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %zero, %window, %ones, %ones, %ones, %padding) {api_version = 2 : i32, called_computations = [@add]} : (tensor<5xf32>, tensor<f32>, tensor<1xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1x2xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func private @add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}
