// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-sink-slices)' | FileCheck %s

// A causal mask built large and sliced small: the slices move to the
// broadcasts' inputs (an expanded dimension takes its one element).
// CHECK-LABEL: func @mask
func.func @mask(%rows: tensor<64x1xi32>, %cols: tensor<1x64xi32>) -> tensor<8x16xi1> {
  // CHECK-DAG: %[[R:.+]] = stablehlo.slice %arg0 [0:8, 0:1] : (tensor<64x1xi32>) -> tensor<8x1xi32>
  // CHECK-DAG: %[[C:.+]] = stablehlo.slice %arg1 [0:1, 4:20] : (tensor<1x64xi32>) -> tensor<1x16xi32>
  // CHECK-DAG: %[[RB:.+]] = stablehlo.broadcast_in_dim %[[R]], dims = [0, 1] : (tensor<8x1xi32>) -> tensor<8x16xi32>
  // CHECK-DAG: %[[CB:.+]] = stablehlo.broadcast_in_dim %[[C]], dims = [0, 1] : (tensor<1x16xi32>) -> tensor<8x16xi32>
  // CHECK: %[[M:.+]] = stablehlo.compare GE, %[[RB]], %[[CB]], SIGNED : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi1>
  // CHECK: return %[[M]]
  %0 = stablehlo.broadcast_in_dim %rows, dims = [0, 1] : (tensor<64x1xi32>) -> tensor<64x64xi32>
  %1 = stablehlo.broadcast_in_dim %cols, dims = [0, 1] : (tensor<1x64xi32>) -> tensor<64x64xi32>
  %2 = stablehlo.compare GE, %0, %1, SIGNED : (tensor<64x64xi32>, tensor<64x64xi32>) -> tensor<64x64xi1>
  %3 = stablehlo.slice %2 [0:8, 4:20] : (tensor<64x64xi1>) -> tensor<8x16xi1>
  return %3 : tensor<8x16xi1>
}

// -----

// Strides, a broadcast that also permutes, a convert and a clamp with scalar
// bounds (kept whole).
// CHECK-LABEL: func @strided
func.func @strided(%x: tensor<10x6xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<3x3xf16> {
  // CHECK: %[[X:.+]] = stablehlo.slice %arg0 [1:6:2, 0:6:2] : (tensor<10x6xf32>) -> tensor<3x3xf32>
  // CHECK-NOT: stablehlo.slice
  // CHECK: %[[C:.+]] = stablehlo.clamp %arg1, %[[X]], %arg2 : (tensor<f32>, tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  // CHECK: %[[H:.+]] = stablehlo.convert %[[C]] : (tensor<3x3xf32>) -> tensor<3x3xf16>
  // CHECK: %[[B:.+]] = stablehlo.broadcast_in_dim %[[H]], dims = [1, 0] : (tensor<3x3xf16>) -> tensor<3x3xf16>
  // CHECK: return %[[B]]
  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<10x6xf32>, tensor<f32>) -> tensor<10x6xf32>
  %1 = stablehlo.convert %0 : (tensor<10x6xf32>) -> tensor<10x6xf16>
  %2 = stablehlo.broadcast_in_dim %1, dims = [1, 0] : (tensor<10x6xf16>) -> tensor<6x10xf16>
  %3 = stablehlo.slice %2 [0:6:2, 1:6:2] : (tensor<6x10xf16>) -> tensor<3x3xf16>
  return %3 : tensor<3x3xf16>
}

// -----

// An op that something else also reads, or that is no broadcast or
// elementwise op, keeps its slice.
// CHECK-LABEL: func @kept
func.func @kept(%x: tensor<8x8xf32>) -> (tensor<2x2xf32>, tensor<8x8xf32>, tensor<2x2xf32>) {
  // CHECK: %[[E:.+]] = stablehlo.exponential %arg0 : tensor<8x8xf32>
  // CHECK: stablehlo.slice %[[E]] [0:2, 0:2]
  // CHECK: %[[T:.+]] = stablehlo.transpose
  // CHECK: stablehlo.slice %[[T]] [0:2, 0:2]
  %0 = stablehlo.exponential %x : tensor<8x8xf32>
  %1 = stablehlo.slice %0 [0:2, 0:2] : (tensor<8x8xf32>) -> tensor<2x2xf32>
  %2 = stablehlo.transpose %x, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %3 = stablehlo.slice %2 [0:2, 0:2] : (tensor<8x8xf32>) -> tensor<2x2xf32>
  return %1, %0, %3 : tensor<2x2xf32>, tensor<8x8xf32>, tensor<2x2xf32>
}
