// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-collapse-transposed-loops)' | FileCheck %s

// GPT-2's keys transposed for q @ k^T: heads and head dimension move as one
// block of 768, so the transpose is one of [128, 768].
// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @keys
func.func @keys(%k: tensor<128x12x64xf32>) -> tensor<12x64x128xf32> {
  // CHECK: %[[E:.+]] = tensor.empty() : tensor<12x64x128xf32>
  // CHECK: %[[K:.+]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2]] : tensor<128x12x64xf32> into tensor<128x768xf32>
  // CHECK: %[[O:.+]] = tensor.collapse_shape %[[E]] {{\[}}[0, 1], [2]] : tensor<12x64x128xf32> into tensor<768x128xf32>
  // CHECK: %[[T:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "parallel"]} ins(%[[K]] : tensor<128x768xf32>) outs(%[[O]] : tensor<768x128xf32>) attrs = {keep = 1 : i64}
  // CHECK: tensor.expand_shape %[[T]] {{\[}}[0, 1], [2]] output_shape [12, 64, 128] : tensor<768x128xf32> into tensor<12x64x128xf32>
  %e = tensor.empty() : tensor<12x64x128xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(h, d, s) -> (s, h, d)>, affine_map<(h, d, s) -> (h, d, s)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k : tensor<128x12x64xf32>) outs(%e : tensor<12x64x128xf32>) attrs = {keep = 1} {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<12x64x128xf32>
  return %t : tensor<12x64x128xf32>
}

// -----

// Two groups of loops swap places; a bias read along the last loop alone
// keeps that loop apart, and the body's ops move over unchanged.
// CHECK-DAG: #[[$X:.+]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-DAG: #[[$B:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[$O:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func @with_bias
func.func @with_bias(%x: tensor<4x8x2x2x16xf32>, %b: tensor<8xf32>) -> tensor<2x2x16x4x8xf32> {
  // CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3, 4]] : tensor<4x8x2x2x16xf32> into tensor<4x8x64xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$X]], #[[$B]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel"]}
  // CHECK-SAME: ins(%{{.+}}, %arg1 : tensor<4x8x64xf32>, tensor<8xf32>) outs(%{{.+}} : tensor<64x4x8xf32>)
  // CHECK: arith.addf
  // CHECK: tensor.expand_shape %{{.+}} {{\[}}[0, 1, 2], [3], [4]] output_shape [2, 2, 16, 4, 8]
  %e = tensor.empty() : tensor<2x2x16x4x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(a, b, c, d, f) -> (d, f, a, b, c)>, affine_map<(a, b, c, d, f) -> (f)>, affine_map<(a, b, c, d, f) -> (a, b, c, d, f)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x, %b : tensor<4x8x2x2x16xf32>, tensor<8xf32>) outs(%e : tensor<2x2x16x4x8xf32>) {
  ^bb0(%v: f32, %w: f32, %y: f32):
    %s = arith.addf %v, %w : f32
    linalg.yield %s : f32
  } -> tensor<2x2x16x4x8xf32>
  return %t : tensor<2x2x16x4x8xf32>
}

// -----

// Left as they are: no transpose, a plain 2-D transpose (nothing moves
// together), a body that reads its loop indices, and a map with a constant.
// CHECK-LABEL: func @left_alone
func.func @left_alone(%x: tensor<4x8x16xf32>, %y: tensor<8x16xf32>, %z: tensor<1x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<16x8xf32>, tensor<16x4x8xf32>, tensor<16x8xf32>) {
  // CHECK-NOT: tensor.collapse_shape
  // CHECK-NOT: tensor.expand_shape
  %e0 = tensor.empty() : tensor<4x8x16xf32>
  %same = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x8x16xf32>) outs(%e0 : tensor<4x8x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x8x16xf32>
  %e1 = tensor.empty() : tensor<16x8xf32>
  %plain = linalg.generic {indexing_maps = [affine_map<(a, b) -> (b, a)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  %e2 = tensor.empty() : tensor<16x4x8xf32>
  %indexed = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (b, c, a)>, affine_map<(a, b, c) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x8x16xf32>) outs(%e2 : tensor<16x4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %i = linalg.index 0 : index
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    %s = arith.addf %v, %f : f32
    linalg.yield %s : f32
  } -> tensor<16x4x8xf32>
  %constant = linalg.generic {indexing_maps = [affine_map<(a, b) -> (0, b, a)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<1x8x16xf32>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  return %same, %plain, %indexed, %constant : tensor<4x8x16xf32>, tensor<16x8xf32>, tensor<16x4x8xf32>, tensor<16x8xf32>
}
