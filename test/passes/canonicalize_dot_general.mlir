// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-canonicalize-dot-general)' | FileCheck %s

// Free lhs dims collapse into M; no transpose is needed.
// CHECK-LABEL: func @rank3_times_matrix
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x512xf32>, %[[W:.+]]: tensor<512x128xf32>)
func.func @rank3_times_matrix(%x: tensor<2x16x512xf32>, %w: tensor<512x128xf32>) -> tensor<2x16x128xf32> {
  // CHECK-NOT: stablehlo.transpose
  // CHECK: %[[L:.+]] = stablehlo.reshape %[[X]] : (tensor<2x16x512xf32>) -> tensor<32x512xf32>
  // CHECK: %[[D:.+]] = stablehlo.dot_general %[[L]], %[[W]], contracting_dims = [1] x [0], precision = [DEFAULT, HIGHEST] : (tensor<32x512xf32>, tensor<512x128xf32>) -> tensor<32x128xf32>
  // CHECK: %[[R:.+]] = stablehlo.reshape %[[D]] : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
  // CHECK: return %[[R]]
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [2] x [0], precision = [DEFAULT, HIGHEST] : (tensor<2x16x512xf32>, tensor<512x128xf32>) -> tensor<2x16x128xf32>
  return %0 : tensor<2x16x128xf32>
}

// -----

// Attention's bqhd,bkhd->bhqk: batch dims b, h to the front, one batch dim.
// CHECK-LABEL: func @attention
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x4x16xf32>, %[[K:.+]]: tensor<2x6x4x16xf32>)
func.func @attention(%q: tensor<2x8x4x16xf32>, %k: tensor<2x6x4x16xf32>) -> tensor<2x4x8x6xf32> {
  // CHECK: %[[QT:.+]] = stablehlo.transpose %[[Q]], dims = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: %[[QR:.+]] = stablehlo.reshape %[[QT]] : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  // CHECK: %[[KT:.+]] = stablehlo.transpose %[[K]], dims = [0, 2, 3, 1] : (tensor<2x6x4x16xf32>) -> tensor<2x4x16x6xf32>
  // CHECK: %[[KR:.+]] = stablehlo.reshape %[[KT]] : (tensor<2x4x16x6xf32>) -> tensor<8x16x6xf32>
  // CHECK: %[[D:.+]] = stablehlo.dot_general %[[QR]], %[[KR]], batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x8x16xf32>, tensor<8x16x6xf32>) -> tensor<8x8x6xf32>
  // CHECK: %[[R:.+]] = stablehlo.reshape %[[D]] : (tensor<8x8x6xf32>) -> tensor<2x4x8x6xf32>
  // CHECK: return %[[R]]
  %0 = stablehlo.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<2x8x4x16xf32>, tensor<2x6x4x16xf32>) -> tensor<2x4x8x6xf32>
  return %0 : tensor<2x4x8x6xf32>
}

// -----

// Two contracting dims, in a different order on each side; the types are kept.
// CHECK-LABEL: func @two_contracting
// CHECK-SAME: (%[[A:.+]]: tensor<3x4x5xi8>, %[[B:.+]]: tensor<5x6x4xi8>)
func.func @two_contracting(%a: tensor<3x4x5xi8>, %b: tensor<5x6x4xi8>) -> tensor<3x6xi32> {
  // CHECK: %[[AR:.+]] = stablehlo.reshape %[[A]] : (tensor<3x4x5xi8>) -> tensor<3x20xi8>
  // CHECK: %[[BT:.+]] = stablehlo.transpose %[[B]], dims = [2, 0, 1] : (tensor<5x6x4xi8>) -> tensor<4x5x6xi8>
  // CHECK: %[[BR:.+]] = stablehlo.reshape %[[BT]] : (tensor<4x5x6xi8>) -> tensor<20x6xi8>
  // CHECK: %[[D:.+]] = stablehlo.dot_general %[[AR]], %[[BR]], contracting_dims = [1] x [0] : (tensor<3x20xi8>, tensor<20x6xi8>) -> tensor<3x6xi32>
  // CHECK: return %[[D]]
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1, 2] x [2, 0] : (tensor<3x4x5xi8>, tensor<5x6x4xi8>) -> tensor<3x6xi32>
  return %0 : tensor<3x6xi32>
}

// -----

// No free dims: M = N = 1.
// CHECK-LABEL: func @vector_dot
func.func @vector_dot(%a: tensor<4xcomplex<f32>>, %b: tensor<4xcomplex<f32>>) -> tensor<complex<f32>> {
  // CHECK: stablehlo.reshape %arg0 : (tensor<4xcomplex<f32>>) -> tensor<1x4xcomplex<f32>>
  // CHECK: stablehlo.reshape %arg1 : (tensor<4xcomplex<f32>>) -> tensor<4x1xcomplex<f32>>
  // CHECK: stablehlo.dot_general {{.*}} : (tensor<1x4xcomplex<f32>>, tensor<4x1xcomplex<f32>>) -> tensor<1x1xcomplex<f32>>
  // CHECK: stablehlo.reshape {{.*}} : (tensor<1x1xcomplex<f32>>) -> tensor<complex<f32>>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<complex<f32>>
  return %0 : tensor<complex<f32>>
}

// -----

// Already a matmul or batch matmul, an outer product or dynamic: unchanged.
// CHECK-LABEL: func @unchanged
func.func @unchanged(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<2x3x4xf32>, %d: tensor<2x4x5xf32>,
                     %u: tensor<3xf32>, %v: tensor<5xf32>, %x: tensor<?x4xf32>) -> (tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<3x5xf32>, tensor<?x5xf32>) {
  // CHECK-NOT: stablehlo.reshape
  // CHECK-NOT: stablehlo.transpose
  // CHECK: stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0]
  // CHECK: stablehlo.dot_general %arg2, %arg3, batching_dims = [0] x [0], contracting_dims = [2] x [1]
  // CHECK: stablehlo.dot_general %arg4, %arg5, contracting_dims = [] x []
  // CHECK: stablehlo.dot_general %arg6, %arg1, contracting_dims = [1] x [0]
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = stablehlo.dot_general %c, %d, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %2 = stablehlo.dot_general %u, %v, contracting_dims = [] x [] : (tensor<3xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %3 = stablehlo.dot_general %x, %b, contracting_dims = [1] x [0] : (tensor<?x4xf32>, tensor<4x5xf32>) -> tensor<?x5xf32>
  return %0, %1, %2, %3 : tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<3x5xf32>, tensor<?x5xf32>
}
