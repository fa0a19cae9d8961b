// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-remove-fusion-fences)' | FileCheck %s

// CHECK-NOT: shlo_fusion_fence
// CHECK: func.func private @other(tensor<4xf32>)
func.func private @shlo_fusion_fence_0(tensor<4xf32>)
func.func private @other(tensor<4xf32>)

// CHECK-LABEL: func @fenced
func.func @fenced(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: @shlo_fusion_fence_0
  // CHECK: call @other(%arg0)
  // CHECK-NEXT: return %arg0
  func.call @shlo_fusion_fence_0(%a) : (tensor<4xf32>) -> ()
  func.call @other(%a) : (tensor<4xf32>) -> ()
  return %a : tensor<4xf32>
}
