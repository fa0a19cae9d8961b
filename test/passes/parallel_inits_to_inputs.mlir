// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-parallel-inits-to-inputs)' | FileCheck %s

// A dot_general without contracting dimensions, as stablehlo-legalize-to-linalg writes it.
#a = affine_map<(d0, d1) -> (d0)>
#b = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @outer_product
// CHECK-SAME: (%[[X:.+]]: tensor<2xf32>, %[[Y:.+]]: tensor<3xf32>)
func.func @outer_product(%x: tensor<2xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x3xf32>
  // CHECK: %[[ZEROS:.+]] = linalg.fill
  %zeros = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: %[[FRESH:.+]] = tensor.empty() : tensor<2x3xf32>
  // CHECK: linalg.generic
  // CHECK-SAME: ins(%[[X]], %[[Y]], %[[ZEROS]] : tensor<2xf32>, tensor<3xf32>, tensor<2x3xf32>)
  // CHECK-SAME: outs(%[[FRESH]] : tensor<2x3xf32>)
  // CHECK: ^bb0(%[[IN:.+]]: f32, %[[IN0:.+]]: f32, %[[INIT:.+]]: f32, %{{.+}}: f32):
  // CHECK: %[[P:.+]] = arith.mulf %[[IN]], %[[IN0]]
  // CHECK: arith.addf %[[INIT]], %[[P]]
  %r = linalg.generic {indexing_maps = [#a, #b, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<2xf32>, tensor<3xf32>) outs(%zeros : tensor<2x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// A reduction keeps its accumulator as the init.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @row_sum
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>, %[[ACC:.+]]: tensor<2xf32>)
func.func @row_sum(%x: tensor<2x3xf32>, %acc: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK-NOT: tensor.empty
  // CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<2x3xf32>) outs(%[[ACC]] : tensor<2xf32>)
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%acc : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// An elementwise op that ignores its init is left alone.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @pure
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[OUT:.+]]: tensor<4xf32>)
func.func @pure(%x: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<4xf32>) outs(%[[OUT]] : tensor<4xf32>)
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%out : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
