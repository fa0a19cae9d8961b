// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-outline-tensor-kernels)' | FileCheck %s

// Two identical kernels share one function, which takes the tensor.empty of
// their output with it. A kernel with the same signature but another body
// gets a function of its own at first; as it is called once, its body goes
// back in place. A kernel whose signature is unique is never outlined.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>, %[[C:.+]]: tensor<8xi32>)
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xi32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  // CHECK: %[[X:.+]] = call @shlo_tensor_kernel_0(%[[A]]) : (tensor<8xf32>) -> tensor<8xf32>
  %x = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  // CHECK: %[[Y:.+]] = call @shlo_tensor_kernel_0(%[[B]]) : (tensor<8xf32>) -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%b : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  // CHECK: %[[E2:.+]] = tensor.empty() : tensor<8xf32>
  // CHECK: %[[Z:.+]] = linalg.generic {{.*}} ins(%[[A]] : tensor<8xf32>) outs(%[[E2]] : tensor<8xf32>)
  // CHECK: math.exp
  %e2 = tensor.empty() : tensor<8xf32>
  %z = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.exp %in : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  // CHECK: %[[E3:.+]] = tensor.empty() : tensor<8xi32>
  // CHECK: %[[W:.+]] = linalg.generic {{.*}} ins(%[[C]] : tensor<8xi32>) outs(%[[E3]] : tensor<8xi32>)
  %e3 = tensor.empty() : tensor<8xi32>
  %w = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%c : tensor<8xi32>) outs(%e3 : tensor<8xi32>) {
  ^bb0(%in: i32, %out: i32):
    %t = arith.addi %in, %in : i32
    linalg.yield %t : i32
  } -> tensor<8xi32>
  // CHECK: return %[[X]], %[[Y]], %[[Z]], %[[W]]
  return %x, %y, %z, %w : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>
}
// CHECK-LABEL: func.func private @shlo_tensor_kernel_0
// CHECK-SAME: (%[[IN:.+]]: tensor<8xf32>) -> tensor<8xf32>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[R:.+]] = linalg.generic {{.*}} ins(%[[IN]] : tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
// CHECK: math.tanh
// CHECK: return %[[R]]
// CHECK-NOT: func.func
