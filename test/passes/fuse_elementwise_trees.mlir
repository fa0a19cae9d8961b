// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-fuse-elementwise-trees)' | FileCheck %s

#id = affine_map<(d0) -> (d0)>
// A chain and a side branch fuse into the last op, in one generic; %a is passed once.
// CHECK-LABEL: func @tree
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>)
func.func @tree(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // CHECK: %[[R:.+]] = linalg.generic
  // CHECK-SAME: ins(%[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>)
  // CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
  // CHECK-NEXT: %[[S:.+]] = arith.addf %[[X]], %[[Y]]
  // CHECK-NEXT: %[[E:.+]] = math.exp %[[X]]
  // CHECK-NEXT: %[[M:.+]] = arith.mulf %[[S]], %[[E]]
  // CHECK-NEXT: linalg.yield %[[M]]
  // CHECK-NOT: linalg.generic
  // CHECK: return %[[R]]
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%0, %1 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
// Not fused here: a producer with two uses, a transposed read, and a reduction.
// CHECK-LABEL: func @left_to_upstream
func.func @left_to_upstream(%a: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3xf32>) {
  %e = tensor.empty() : tensor<3x3xf32>
  %r = tensor.empty() : tensor<3xf32>
  // CHECK-COUNT-4: linalg.generic
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x3xf32>) outs(%e : tensor<3x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<3x3xf32>
  %1 = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<3x3xf32>) outs(%e : tensor<3x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  } -> tensor<3x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x3xf32>) outs(%e : tensor<3x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.tanh %x : f32
    linalg.yield %s : f32
  } -> tensor<3x3xf32>
  %3 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%2 : tensor<3x3xf32>) outs(%r : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %0, %1, %3 : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3xf32>
}
