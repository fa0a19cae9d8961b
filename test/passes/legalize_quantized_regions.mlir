// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-legalize-quantized-regions)' | FileCheck %s

// CHECK-LABEL: func @reduce
func.func @reduce(%arg0: tensor<4x3x!quant.uniform<i8:f32, 5.000000e-01:3>>, %arg1: tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>> {
  // CHECK: %[[IN:.+]] = stablehlo.bitcast_convert %arg0 : (tensor<4x3x!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<4x3xi8>
  // CHECK: %[[INIT:.+]] = stablehlo.bitcast_convert %arg1 : (tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<i8>
  // CHECK: %[[R:.+]] = stablehlo.reduce(%[[IN]] init: %[[INIT]]) across dimensions = [1] : (tensor<4x3xi8>, tensor<i8>) -> tensor<4xi8>
  // CHECK: reducer(%[[A:.+]]: tensor<i8>, %[[B:.+]]: tensor<i8>)
  // CHECK-DAG: %[[QA:.+]] = stablehlo.bitcast_convert %[[A]] : (tensor<i8>) -> tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>
  // CHECK-DAG: %[[QB:.+]] = stablehlo.bitcast_convert %[[B]] : (tensor<i8>) -> tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>
  // CHECK: %[[MAX:.+]] = stablehlo.maximum %[[QA]], %[[QB]] : tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>
  // CHECK: %[[BITS:.+]] = stablehlo.bitcast_convert %[[MAX]] : (tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<i8>
  // CHECK: stablehlo.return %[[BITS]] : tensor<i8>
  // CHECK: %[[OUT:.+]] = stablehlo.bitcast_convert %[[R]] : (tensor<4xi8>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>>
  // CHECK: return %[[OUT]]
  %0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.maximum across dimensions = [1] : (tensor<4x3x!quant.uniform<i8:f32, 5.000000e-01:3>>, tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>>
  return %0 : tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>>
}

// -----

// An if has no quantized operand: only its results and returns change.
// CHECK-LABEL: func @if
func.func @if(%arg0: tensor<i1>, %arg1: tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>> {
  // CHECK: %[[R:.+]] = "stablehlo.if"(%arg0)
  // CHECK: %[[T:.+]] = stablehlo.bitcast_convert %arg1 : (tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<2xi8>
  // CHECK: stablehlo.return %[[T]] : tensor<2xi8>
  // CHECK: %[[N:.+]] = stablehlo.negate %arg1
  // CHECK: %[[E:.+]] = stablehlo.bitcast_convert %[[N]] : (tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<2xi8>
  // CHECK: stablehlo.return %[[E]] : tensor<2xi8>
  // CHECK: (tensor<i1>) -> tensor<2xi8>
  // CHECK: stablehlo.bitcast_convert %[[R]] : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>
  %0 = "stablehlo.if"(%arg0) ({
    stablehlo.return %arg1 : tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>
  }, {
    %1 = stablehlo.negate %arg1 : tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>
    stablehlo.return %1 : tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>
  }) : (tensor<i1>) -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>
  return %0 : tensor<2x!quant.uniform<i8:f32, 5.000000e-01:3>>
}

// -----

// Ops with regions and no quantized types stay as they are.
// CHECK-LABEL: func @float_reduce
func.func @float_reduce(%arg0: tensor<3xf32>, %arg1: tensor<f32>) -> tensor<f32> {
  // CHECK-NOT: bitcast_convert
  %0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
