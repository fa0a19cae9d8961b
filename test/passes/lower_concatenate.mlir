// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-concatenate)' | FileCheck %s

// A returned concatenation: each operand inserted into its slice; an empty
// operand is skipped.
// CHECK-LABEL: func @returned
func.func @returned(%a: tensor<4x3xf32>, %b: tensor<4x0xf32>, %c: tensor<4x5xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[E:.+]] = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[R0:.+]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x8xf32>
  // CHECK: %[[R1:.+]] = tensor.insert_slice %arg2 into %[[R0]][0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
  // CHECK: return %[[R1]]
  // CHECK-NOT: stablehlo.concatenate
  %r = stablehlo.concatenate %a, %b, %c, dim = 1 : (tensor<4x3xf32>, tensor<4x0xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Read by an elementwise op, which upstream's lowering fuses it into: left alone.
// CHECK-LABEL: func @fused
func.func @fused(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x8xf32> {
  // CHECK: stablehlo.concatenate
  %r = stablehlo.concatenate %a, %b, dim = 1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  %s = stablehlo.multiply %r, %r : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// An empty result: slices of it would not verify; upstream's lowering.
// CHECK-LABEL: func @empty
func.func @empty(%a: tensor<0x3xf32>, %b: tensor<0x5xf32>) -> tensor<0x8xf32> {
  // CHECK: stablehlo.concatenate
  %r = stablehlo.concatenate %a, %b, dim = 1 : (tensor<0x3xf32>, tensor<0x5xf32>) -> tensor<0x8xf32>
  return %r : tensor<0x8xf32>
}
