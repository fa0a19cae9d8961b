// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-reverse{min-elements=8})' | FileCheck %s

// The reversed dimensions are read at (size - 1 - index); the others as they are.
// CHECK-LABEL: func @reverse
func.func @reverse(%x: tensor<4x8x3xf32>) -> tensor<4x8x3xf32> {
  // CHECK: linalg.generic {indexing_maps = [#{{.+}}], iterator_types = ["parallel", "parallel", "parallel"]} outs(%{{.+}} : tensor<4x8x3xf32>)
  // CHECK: %[[I:.+]] = linalg.index 0 : index
  // CHECK: %[[J:.+]] = linalg.index 1 : index
  // CHECK: %[[C7:.+]] = arith.constant 7 : index
  // CHECK: %[[JR:.+]] = arith.subi %[[C7]], %[[J]] : index
  // CHECK: %[[K:.+]] = linalg.index 2 : index
  // CHECK: %[[C2:.+]] = arith.constant 2 : index
  // CHECK: %[[KR:.+]] = arith.subi %[[C2]], %[[K]] : index
  // CHECK: %[[V:.+]] = tensor.extract %arg0[%[[I]], %[[JR]], %[[KR]]] : tensor<4x8x3xf32>
  // CHECK: linalg.yield %[[V]] : f32
  // CHECK-NOT: stablehlo.reverse
  %r = stablehlo.reverse %x, dims = [1, 2] : tensor<4x8x3xf32>
  return %r : tensor<4x8x3xf32>
}

// -----

// Below min-elements: upstream's lowering, which fuses with its neighbours.
// CHECK-LABEL: func @small
func.func @small(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: stablehlo.reverse
  %r = stablehlo.reverse %x, dims = [0] : tensor<4xf32>
  return %r : tensor<4xf32>
}
