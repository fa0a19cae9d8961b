// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-outline-contractions)' | FileCheck %s

// Two matmuls of the same shapes share one function, which takes the fill of
// their init with it; a matmul of other shapes gets its own; a fill that
// something else also reads stays where it is.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8x16xf32>, %[[C:.+]]: tensor<16x2xf32>)
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16x2xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[M0:.+]] = call @shlo_contraction_0(%[[A]], %[[B]]) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %m0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[M1:.+]] = call @shlo_contraction_0(%[[A]], %[[B]])
  %m1 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[M2:.+]] = call @shlo_contraction_1(%[[M0]], %[[C]])
  %e2 = tensor.empty() : tensor<4x2xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %m2 = linalg.matmul ins(%m0, %c : tensor<4x16xf32>, tensor<16x2xf32>) outs(%f2 : tensor<4x2xf32>) -> tensor<4x2xf32>
  // CHECK: %[[F3:.+]] = linalg.fill
  // CHECK: %[[M3:.+]] = call @shlo_contraction_2(%[[M1]], %[[C]], %[[F3]])
  %e3 = tensor.empty() : tensor<4x2xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %m3 = linalg.matmul ins(%m1, %c : tensor<4x16xf32>, tensor<16x2xf32>) outs(%f3 : tensor<4x2xf32>) -> tensor<4x2xf32>
  // CHECK: return %[[M0]], %[[M1]], %[[M2]], %[[M3]], %[[F3]]
  return %m0, %m1, %m2, %m3, %f3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
// CHECK-LABEL: func.func private @shlo_contraction_0
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[F:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x16xf32>)
// CHECK: %[[M:.+]] = linalg.matmul ins(%[[X]], %[[Y]] : {{.*}}) outs(%[[F]] : tensor<4x16xf32>)
// CHECK: return %[[M]]
// CHECK-LABEL: func.func private @shlo_contraction_1
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @shlo_contraction_2
// CHECK-SAME: (%{{.+}}: tensor<4x16xf32>, %{{.+}}: tensor<16x2xf32>, %[[INIT:.+]]: tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.matmul {{.*}} outs(%[[INIT]] : tensor<4x2xf32>)
// CHECK-NOT: func.func private @shlo_contraction_3

// -----

// A transpose that only the matmul reads goes into its function, tagged for
// the recipe to compute block by block; one that something else also reads
// stays. (With up to 8 rows, see @dot_rows.)
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @transposed
func.func @transposed(%a: tensor<12x8xf32>, %w: tensor<16x8xf32>) -> (tensor<12x16xf32>, tensor<12x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x16xf32>
  %wt = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x16xf32>
  %e0 = tensor.empty() : tensor<12x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  // CHECK: call @shlo_contraction_0(%{{.+}}, %{{.+}}) : (tensor<16x8xf32>, tensor<12x8xf32>) -> tensor<12x16xf32>
  %m0 = linalg.matmul ins(%a, %wt : tensor<12x8xf32>, tensor<8x16xf32>) outs(%f0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  // CHECK: %[[SHARED:.+]] = linalg.generic
  // CHECK-NOT: shlo.fused_block
  // CHECK: call @shlo_contraction_1(%{{.+}}, %[[SHARED]]) : (tensor<12x8xf32>, tensor<8x16xf32>)
  %et1 = tensor.empty() : tensor<8x16xf32>
  %wt1 = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x8xf32>) outs(%et1 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<12x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %m1 = linalg.matmul ins(%a, %wt1 : tensor<12x8xf32>, tensor<8x16xf32>) outs(%f1 : tensor<12x16xf32>) -> tensor<12x16xf32>
  return %m0, %m1, %wt1 : tensor<12x16xf32>, tensor<12x16xf32>, tensor<8x16xf32>
}
// CHECK-LABEL: func.func private @shlo_contraction_0
// CHECK-SAME: (%[[W:.+]]: tensor<16x8xf32>, %[[X:.+]]: tensor<12x8xf32>)
// CHECK: %[[T:.+]] = linalg.generic {{.*}} ins(%[[W]] : tensor<16x8xf32>) {{.*}} attrs = {shlo.fused_block}
// CHECK: linalg.matmul ins(%[[X]], %[[T]] : tensor<12x8xf32>, tensor<8x16xf32>)
// CHECK-LABEL: func.func private @shlo_contraction_1
// CHECK-NOT: shlo.fused_block
// CHECK: linalg.matmul

// -----

// A matmul of at most 8 rows whose f32 rhs is a transpose only it reads
// becomes dot products of the weight's rows, reading the weight itself; with
// a transpose that something else reads, or i32, it stays a matmul and its
// transpose is not fused (the narrow recipe splits the columns over threads).
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @dot_rows
func.func @dot_rows(%a: tensor<8x4xf32>, %w: tensor<16x4xf32>, %ai: tensor<8x4xi32>, %wi: tensor<16x4xi32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x16xi32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<4x16xf32>
  %wt = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x4xf32>) outs(%et : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x16xf32>
  %e0 = tensor.empty() : tensor<8x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: call @shlo_contraction_0(%{{.+}}, %{{.+}}) : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %m0 = linalg.matmul ins(%a, %wt : tensor<8x4xf32>, tensor<4x16xf32>) outs(%f0 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[SHARED:.+]] = linalg.generic
  // CHECK: call @shlo_contraction_1(%{{.+}}, %[[SHARED]]) : (tensor<8x4xf32>, tensor<4x16xf32>)
  %et1 = tensor.empty() : tensor<4x16xf32>
  %wt1 = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x4xf32>) outs(%et1 : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<8x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m1 = linalg.matmul ins(%a, %wt1 : tensor<8x4xf32>, tensor<4x16xf32>) outs(%f1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[WTI:.+]] = linalg.generic
  // CHECK: call @shlo_contraction_2(%{{.+}}, %[[WTI]]) : (tensor<8x4xi32>, tensor<4x16xi32>)
  %zi = arith.constant 0 : i32
  %eti = tensor.empty() : tensor<4x16xi32>
  %wti = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%wi : tensor<16x4xi32>) outs(%eti : tensor<4x16xi32>) {
  ^bb0(%in: i32, %out: i32):
    linalg.yield %in : i32
  } -> tensor<4x16xi32>
  %ei = tensor.empty() : tensor<8x16xi32>
  %fi = linalg.fill ins(%zi : i32) outs(%ei : tensor<8x16xi32>) -> tensor<8x16xi32>
  %mi = linalg.matmul ins(%ai, %wti : tensor<8x4xi32>, tensor<4x16xi32>) outs(%fi : tensor<8x16xi32>) -> tensor<8x16xi32>
  return %m0, %m1, %wt1, %mi : tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x16xi32>
}
// CHECK-LABEL: func.func private @shlo_contraction_0
// CHECK-SAME: (%[[X:.+]]: tensor<8x4xf32>, %[[W:.+]]: tensor<16x4xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: %[[F:.+]] = linalg.fill
// CHECK: linalg.generic {{{.*}} iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[W]] : tensor<8x4xf32>, tensor<16x4xf32>) outs(%[[F]] : tensor<8x16xf32>)
// CHECK-SAME: shlo.dot_rows
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-LABEL: func.func private @shlo_contraction_1
// CHECK-NOT: shlo.dot_rows
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @shlo_contraction_2
// CHECK-NOT: shlo.fused_block
// CHECK: linalg.matmul

// -----

// An f32 matmul of 32 rows or more copies its rhs, a block at a time in the
// recipe (tagged shlo.fused_block), unless the rhs is a fused transpose;
// below 32 rows, and i32 matmuls, read the rhs itself. The rhs stays an
// argument: another user (%m1, %m2) reads it unchanged.
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @packed
func.func @packed(%a: tensor<32x8xf32>, %b: tensor<8x16xf32>, %small: tensor<31x8xf32>, %w: tensor<16x8xf32>, %ai: tensor<32x8xi32>, %bi: tensor<8x16xi32>)
    -> (tensor<32x16xf32>, tensor<31x16xf32>, tensor<32x16xf32>, tensor<32x16xi32>) {
  %zero = arith.constant 0.0 : f32
  // CHECK: call @shlo_contraction_0(%{{.+}}, %{{.+}}) : (tensor<8x16xf32>, tensor<32x8xf32>) -> tensor<32x16xf32>
  %e0 = tensor.empty() : tensor<32x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %m0 = linalg.matmul ins(%a, %b : tensor<32x8xf32>, tensor<8x16xf32>) outs(%f0 : tensor<32x16xf32>) -> tensor<32x16xf32>
  // CHECK: call @shlo_contraction_1(%{{.+}}, %{{.+}}) : (tensor<31x8xf32>, tensor<8x16xf32>) -> tensor<31x16xf32>
  %e1 = tensor.empty() : tensor<31x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<31x16xf32>) -> tensor<31x16xf32>
  %m1 = linalg.matmul ins(%small, %b : tensor<31x8xf32>, tensor<8x16xf32>) outs(%f1 : tensor<31x16xf32>) -> tensor<31x16xf32>
  // CHECK: call @shlo_contraction_2(%{{.+}}, %{{.+}}) : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<32x16xf32>
  %et = tensor.empty() : tensor<8x16xf32>
  %wt = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %m2 = linalg.matmul ins(%a, %wt : tensor<32x8xf32>, tensor<8x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  // CHECK: call @shlo_contraction_3(%{{.+}}, %{{.+}}) : (tensor<32x8xi32>, tensor<8x16xi32>) -> tensor<32x16xi32>
  %zi = arith.constant 0 : i32
  %ei = tensor.empty() : tensor<32x16xi32>
  %fi = linalg.fill ins(%zi : i32) outs(%ei : tensor<32x16xi32>) -> tensor<32x16xi32>
  %mi = linalg.matmul ins(%ai, %bi : tensor<32x8xi32>, tensor<8x16xi32>) outs(%fi : tensor<32x16xi32>) -> tensor<32x16xi32>
  return %m0, %m1, %m2, %mi : tensor<32x16xf32>, tensor<31x16xf32>, tensor<32x16xf32>, tensor<32x16xi32>
}
// CHECK-LABEL: func.func private @shlo_contraction_0
// CHECK-SAME: (%[[B:.+]]: tensor<8x16xf32>, %[[X:.+]]: tensor<32x8xf32>)
// CHECK: %[[E:.+]] = tensor.empty() : tensor<8x16xf32>
// CHECK: %[[P:.+]] = linalg.copy {shlo.fused_block} ins(%[[B]] : tensor<8x16xf32>) outs(%[[E]] : tensor<8x16xf32>)
// CHECK: linalg.matmul ins(%[[X]], %[[P]] : tensor<32x8xf32>, tensor<8x16xf32>)
// CHECK-LABEL: func.func private @shlo_contraction_1
// CHECK-NOT: linalg.copy
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @shlo_contraction_2
// CHECK-NOT: linalg.copy
// CHECK: linalg.generic {{.*}} attrs = {shlo.fused_block}
// CHECK-NOT: linalg.copy
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @shlo_contraction_3
// CHECK-NOT: linalg.copy
// CHECK: linalg.matmul
