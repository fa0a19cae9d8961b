// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-plan-vector-codegen{threads=1})' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// Reading its init and a dimension's index, an elementwise op is left to
// scalar loops: upstream's vectorizer took the add of the init for a
// reduction and dropped the init once the op was tiled to rows.
// CHECK-LABEL: func @init_and_index
// CHECK: linalg.generic
// CHECK-NOT: shlo.codegen_op
// CHECK: linalg.index 1
func.func @init_and_index(%p: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%p : tensor<8x16xf32>) {
  ^bb0(%out: f32):
    %j = linalg.index 1 : index
    %i = arith.index_cast %j : index to i32
    %f = arith.sitofp %i : i32 to f32
    %s = arith.addf %out, %f : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The same sum with the index read from an input, or the init with no index:
// vectorized.
// CHECK-LABEL: func @init_or_index
// CHECK: linalg.generic
// CHECK-SAME: shlo.codegen_op
// CHECK: linalg.generic
// CHECK-SAME: shlo.codegen_op
func.func @init_or_index(%p: tensor<8x16xf32>, %q: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 1 : index
    %i = arith.index_cast %j : index to i32
    %f = arith.sitofp %i : i32 to f32
    %s = arith.addf %in, %f : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %t = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%q : tensor<8x16xf32>) {
  ^bb0(%out: f32):
    %s = arith.addf %out, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r, %t : tensor<8x16xf32>, tensor<8x16xf32>
}
