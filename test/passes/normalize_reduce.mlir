// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-normalize-reduce)' | FileCheck %s

// CHECK-LABEL: func @no_dimensions
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>, %[[I:.+]]: tensor<2x3xi32>)
func.func @no_dimensions(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %ci = stablehlo.constant dense<0> : tensor<i32>
  // CHECK-DAG: %[[X1:.+]] = stablehlo.reshape %[[X]] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  // CHECK-DAG: %[[I1:.+]] = stablehlo.reshape %[[I]] : (tensor<2x3xi32>) -> tensor<2x3x1xi32>
  // CHECK: stablehlo.reduce(%[[X1]] init: %{{.+}}), (%[[I1]] init: %{{.+}}) across dimensions = [2]
  %r:2 = stablehlo.reduce(%x init: %c), (%i init: %ci) across dimensions = [] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ia: tensor<i32>, %ib: tensor<i32>) {
    %s = stablehlo.add %a, %b : tensor<f32>
    %t = stablehlo.add %ia, %ib : tensor<i32>
    stablehlo.return %s, %t : tensor<f32>, tensor<i32>
  }
  return %r#0, %r#1 : tensor<2x3xf32>, tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func @empty_dimension
// CHECK-SAME: (%[[X:.+]]: tensor<2x0xf32>, %[[INIT:.+]]: tensor<f32>)
func.func @empty_dimension(%x: tensor<2x0xf32>, %init: tensor<f32>) -> tensor<2xf32> {
  // CHECK-NOT: stablehlo.reduce
  // CHECK: %[[B:.+]] = stablehlo.broadcast_in_dim %[[INIT]], dims = [] : (tensor<f32>) -> tensor<2xf32>
  // CHECK: return %[[B]]
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// CHECK-LABEL: func @ordinary
func.func @ordinary(%x: tensor<2x3xf32>, %init: tensor<f32>) -> tensor<2xf32> {
  // CHECK: stablehlo.reduce(%{{.+}} init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>)
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// The verifier accepts padding that trims the input below nothing; upstream's
// lowering then aborts the process building the pad (found by the fuzzer).
func.func @over_trimmed_window(%x: tensor<5xf32>, %init: tensor<f32>) -> tensor<0xf32> {
  // expected-error@+1 {{expected padding that leaves dimension 0 a size of at least 0, got 5 + (-3) + (-3)}}
  %r = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[-3, -3]]> : tensor<1x2xi64>, window_dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>, tensor<f32>) -> tensor<0xf32>
  return %r : tensor<0xf32>
}

// -----

// CHECK-LABEL: func @trimmed_window
func.func @trimmed_window(%x: tensor<5xf32>, %init: tensor<f32>) -> tensor<1xf32> {
  // CHECK: stablehlo.reduce_window
  %r = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[-2, -2]]> : tensor<1x2xi64>, window_dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>, tensor<f32>) -> tensor<1xf32>
  return %r : tensor<1xf32>
}
