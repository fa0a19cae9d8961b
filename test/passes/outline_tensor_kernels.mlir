// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-outline-tensor-kernels)' | FileCheck %s

// Two identical kernels share one function, which takes the destination
// (the tensor.empty stays with the caller). A kernel with the same signature
// but another body gets a function of its own at first; as it is called once,
// its body goes back in place. A kernel whose signature is unique is never
// outlined. Two reductions over a slice of their input share a function that
// takes the whole input: the slice moves in.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>, %[[C:.+]]: tensor<8xi32>, %[[D:.+]]: tensor<2x8xf32>, %[[D2:.+]]: tensor<2x8xf32>)
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xi32>, %d: tensor<2x8xf32>, %d2: tensor<2x8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[E0:.+]] = tensor.empty() : tensor<8xf32>
  // CHECK: %[[X:.+]] = call @shlo_tensor_kernel_0(%[[A]], %[[E0]]) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %e0 = tensor.empty() : tensor<8xf32>
  %x = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  // CHECK: %[[E1:.+]] = tensor.empty() : tensor<8xf32>
  // CHECK: %[[Y:.+]] = call @shlo_tensor_kernel_0(%[[B]], %[[E1]]) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
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
  // CHECK: %[[I0:.+]] = tensor.empty() : tensor<f32>
  // CHECK: %[[S0:.+]] = call @shlo_tensor_kernel_2(%[[D]], %[[I0]]) : (tensor<2x8xf32>, tensor<f32>) -> tensor<f32>
  %row0 = tensor.extract_slice %d[0, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<8xf32>
  %i0 = tensor.empty() : tensor<f32>
  %s0 = linalg.generic {indexing_maps = [#map, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%row0 : tensor<8xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %t = arith.addf %in, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  // CHECK: %[[I1:.+]] = tensor.empty() : tensor<f32>
  // CHECK: %[[S1:.+]] = call @shlo_tensor_kernel_2(%[[D2]], %[[I1]]) : (tensor<2x8xf32>, tensor<f32>) -> tensor<f32>
  %row1 = tensor.extract_slice %d2[0, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<8xf32>
  %i1 = tensor.empty() : tensor<f32>
  %s1 = linalg.generic {indexing_maps = [#map, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%row1 : tensor<8xf32>) outs(%i1 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %t = arith.addf %in, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  // CHECK: return %[[X]], %[[Y]], %[[Z]], %[[W]], %[[S0]], %[[S1]]
  return %x, %y, %z, %w, %s0, %s1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<f32>, tensor<f32>
}
// CHECK-LABEL: func.func private @shlo_tensor_kernel_0
// CHECK-SAME: (%[[IN:.+]]: tensor<8xf32>, %[[OUT:.+]]: tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT: tensor.empty
// CHECK: %[[R:.+]] = linalg.generic {{.*}} ins(%[[IN]] : tensor<8xf32>) outs(%[[OUT]] : tensor<8xf32>)
// CHECK: math.tanh
// CHECK: return %[[R]]
// CHECK-LABEL: func.func private @shlo_tensor_kernel_2
// CHECK-SAME: (%[[SRC:.+]]: tensor<2x8xf32>, %[[INIT:.+]]: tensor<f32>) -> tensor<f32>
// CHECK: %[[ROW:.+]] = tensor.extract_slice %[[SRC]][0, 0] [1, 8] [1, 1]
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[ROW]] : tensor<8xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK: return %[[SUM]]
// CHECK-NOT: func.func
