// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-split-grouped-convolutions)' | FileCheck %s

// Two groups: each takes its half of the input's features (f, last) and of
// the kernel's output features (o, last); the results are concatenated.
// CHECK-LABEL: func @two_groups
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x8x4xf32>, %[[W:.+]]: tensor<3x3x2x6xf32>)
func.func @two_groups(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x2x6xf32>) -> tensor<1x8x8x6xf32> {
  // CHECK: %[[X0:.+]] = stablehlo.slice %[[X]] [0:1, 0:8, 0:8, 0:2]
  // CHECK: %[[W0:.+]] = stablehlo.slice %[[W]] [0:3, 0:3, 0:2, 0:3]
  // CHECK: %[[C0:.+]] = stablehlo.convolution(%[[X0]], %[[W0]]) {{.*}} window = {stride = [1, 1], pad = {{\[\[}}1, 1], [1, 1]]}
  // CHECK-SAME: feature_group_count = 1
  // CHECK-SAME: -> tensor<1x8x8x3xf32>
  // CHECK: %[[X1:.+]] = stablehlo.slice %[[X]] [0:1, 0:8, 0:8, 2:4]
  // CHECK: %[[W1:.+]] = stablehlo.slice %[[W]] [0:3, 0:3, 0:2, 3:6]
  // CHECK: %[[C1:.+]] = stablehlo.convolution(%[[X1]], %[[W1]])
  // CHECK: %[[ALL:.+]] = stablehlo.concatenate %[[C0]], %[[C1]], dim = 3
  // CHECK: return %[[ALL]]
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x2x6xf32>) -> tensor<1x8x8x6xf32>
  return %0 : tensor<1x8x8x6xf32>
}

// -----

// NCHW and OIHW: the feature dimensions are found from the dimension numbers.
// CHECK-LABEL: func @nchw
func.func @nchw(%x: tensor<2x6x5x5xf32>, %w: tensor<9x2x3x3xf32>) -> tensor<2x9x3x3xf32> {
  // CHECK: stablehlo.slice %arg0 [0:2, 0:2, 0:5, 0:5]
  // CHECK: stablehlo.slice %arg1 [0:3, 0:2, 0:3, 0:3]
  // CHECK: stablehlo.convolution
  // CHECK-SAME: -> tensor<2x3x3x3xf32>
  // CHECK: stablehlo.slice %arg0 [0:2, 2:4, 0:5, 0:5]
  // CHECK: stablehlo.slice %arg1 [3:6, 0:2, 0:3, 0:3]
  // CHECK: stablehlo.slice %arg0 [0:2, 4:6, 0:5, 0:5]
  // CHECK: stablehlo.slice %arg1 [6:9, 0:2, 0:3, 0:3]
  // CHECK: stablehlo.concatenate {{.*}}, dim = 1 : {{.*}} -> tensor<2x9x3x3xf32>
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} {batch_group_count = 1 : i64, feature_group_count = 3 : i64} : (tensor<2x6x5x5xf32>, tensor<9x2x3x3xf32>) -> tensor<2x9x3x3xf32>
  return %0 : tensor<2x9x3x3xf32>
}

// -----

// Depthwise (one input feature per group) and ungrouped convolutions stay
// as they are.
// CHECK-LABEL: func @unchanged
func.func @unchanged(%x: tensor<1x8x8x4xf32>, %dw: tensor<3x3x1x8xf32>, %w: tensor<3x3x4x4xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x6x6x4xf32>) {
  // CHECK-NOT: stablehlo.slice
  // CHECK: feature_group_count = 4
  // CHECK: stablehlo.convolution
  // CHECK: feature_group_count = 1
  // CHECK-NOT: stablehlo.concatenate
  %0 = stablehlo.convolution(%x, %dw) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x1x8xf32>) -> tensor<1x6x6x8xf32>
  %1 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
  return %0, %1 : tensor<1x6x6x8xf32>, tensor<1x6x6x4xf32>
}
