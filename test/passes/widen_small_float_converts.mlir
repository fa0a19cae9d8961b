// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-widen-small-float-converts)' | FileCheck %s

// CHECK-LABEL: func @to_signed
func.func @to_signed(%arg0: tensor<4xf8E8M0FNU>) -> tensor<4xi32> {
  // CHECK: %[[W:.+]] = stablehlo.convert %arg0 : (tensor<4xf8E8M0FNU>) -> tensor<4xf32>
  // CHECK: %[[R:.+]] = stablehlo.convert %[[W]] : (tensor<4xf32>) -> tensor<4xi32>
  // CHECK: return %[[R]]
  %0 = stablehlo.convert %arg0 : (tensor<4xf8E8M0FNU>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func @to_unsigned_f4
func.func @to_unsigned_f4(%arg0: tensor<2x3xf4E2M1FN>) -> tensor<2x3xui8> {
  // CHECK: %[[W:.+]] = stablehlo.convert %arg0 : (tensor<2x3xf4E2M1FN>) -> tensor<2x3xf32>
  // CHECK: stablehlo.convert %[[W]] : (tensor<2x3xf32>) -> tensor<2x3xui8>
  %0 = stablehlo.convert %arg0 : (tensor<2x3xf4E2M1FN>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

// Other converts stay as they are.
// CHECK-LABEL: func @untouched
func.func @untouched(%arg0: tensor<4xf8E4M3FN>, %arg1: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xi32>) {
  // CHECK: stablehlo.convert %arg0 : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  // CHECK: stablehlo.convert %arg1 : (tensor<4xf16>) -> tensor<4xi32>
  // CHECK-NOT: stablehlo.convert
  %0 = stablehlo.convert %arg0 : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  %1 = stablehlo.convert %arg1 : (tensor<4xf16>) -> tensor<4xi32>
  return %0, %1 : tensor<4xf32>, tensor<4xi32>
}
