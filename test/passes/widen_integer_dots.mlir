// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-widen-integer-dots)' | FileCheck %s

// Narrow integer operands of a dot into i32 are converted to i32 first.
// CHECK-LABEL: func @int8
func.func @int8(%a: tensor<4x3xi8>, %b: tensor<3x6xui8>) -> tensor<4x6xi32> {
  // CHECK: %[[A:.+]] = stablehlo.convert %arg0 : (tensor<4x3xi8>) -> tensor<4x3xi32>
  // CHECK: %[[B:.+]] = stablehlo.convert %arg1 : (tensor<3x6xui8>) -> tensor<3x6xi32>
  // CHECK: stablehlo.dot_general %[[A]], %[[B]], contracting_dims = [1] x [0] : (tensor<4x3xi32>, tensor<3x6xi32>) -> tensor<4x6xi32>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi8>, tensor<3x6xui8>) -> tensor<4x6xi32>
  return %0 : tensor<4x6xi32>
}

// -----

// Results narrower or wider than 32 bits, and float dots, are left alone.
// CHECK-LABEL: func @left_alone
func.func @left_alone(%a: tensor<4x3xi8>, %b: tensor<3x6xi8>, %c: tensor<4x3xf32>, %d: tensor<3x6xf32>) -> (tensor<4x6xi8>, tensor<4x6xi64>, tensor<4x6xf32>) {
  // CHECK-NOT: stablehlo.convert
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi8>, tensor<3x6xi8>) -> tensor<4x6xi8>
  %1 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi8>, tensor<3x6xi8>) -> tensor<4x6xi64>
  %2 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<4x6xi8>, tensor<4x6xi64>, tensor<4x6xf32>
}
