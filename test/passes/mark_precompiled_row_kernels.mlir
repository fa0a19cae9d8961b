// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-mark-precompiled-row-kernels)' | FileCheck %s

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A softmax over the last dimension as elementwise fusion leaves it: max, exp of
// the difference, sum, division. It becomes one call on x (and x again, where a
// bias would be): 4 rows of 40, unscaled (0), the factor 1.0's bits, no bias (0),
// the rows as sizes 1 x 1 x 4 with the bias's strides (0, 0, 0) and the result's
// (0, 0, 40), and the result's stride along a row, 1. The four ops and their
// fills go.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<4x40xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[Y:.+]] = call @shlo_precompiled_0(%[[X]], %[[X]]) {shlo.kernel = "shlo_softmax_f32", shlo.kernel_arguments = array<i64: 4, 40, 0, 1065353216, 0, 1, 1, 4, 0, 0, 0, 0, 0, 40, 1>}
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
func.func @softmax(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %zero = arith.constant 0.0 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%minus_inf : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x40xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x40xf32>
  %exp = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%max, %x : tensor<4xf32>, tensor<4x40xf32>) outs(%e1 : tensor<4x40xf32>) {
  ^bb0(%m: f32, %in: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<4x40xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x40xf32>
  %y = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%sum, %exp : tensor<4xf32>, tensor<4x40xf32>) outs(%e3 : tensor<4x40xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x40xf32>
  return %y : tensor<4x40xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Attention's scaling, z = x / 8 computed once and read by the max and the exp
// only: the kernel divides (2) by 8.0 (bits 1090519040) itself.
// CHECK-LABEL: func.func @scaled_once
// CHECK-SAME: (%[[X:.+]]: tensor<4x40xf32>)
// CHECK-NOT: linalg.
// CHECK: call @shlo_precompiled_0(%[[X]], %[[X]]) {shlo.kernel = "shlo_softmax_f32", shlo.kernel_arguments = array<i64: 4, 40, 2, 1090519040, 0, 1, 1, 4, 0, 0, 0, 0, 0, 40, 1>}
// CHECK-NOT: linalg.
func.func @scaled_once(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %zero = arith.constant 0.0 : f32
  %eight = arith.constant 8.0 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<4x40xf32>
  %z = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x40xf32>) outs(%es : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.divf %in, %eight : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%minus_inf : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%z : tensor<4x40xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x40xf32>
  %exp = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%max, %z : tensor<4xf32>, tensor<4x40xf32>) outs(%e1 : tensor<4x40xf32>) {
  ^bb0(%m: f32, %in: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<4x40xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x40xf32>
  %y = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%sum, %exp : tensor<4xf32>, tensor<4x40xf32>) outs(%e3 : tensor<4x40xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x40xf32>
  return %y : tensor<4x40xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The scaling fused into both readers (0.3 * x in each body): multiplied (1)
// by 0.3 (bits 1050253722).
// CHECK-LABEL: func.func @scaled_in_each_body
// CHECK: call @shlo_precompiled_0(%{{.+}}, %{{.+}}) {shlo.kernel = "shlo_softmax_f32", shlo.kernel_arguments = array<i64: 4, 40, 1, 1050253722, 0, 1, 1, 4, 0, 0, 0, 0, 0, 40, 1>}
// CHECK-NOT: linalg.
func.func @scaled_in_each_body(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.3 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%minus_inf : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x40xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.mulf %c, %in : f32
    %m = arith.maximumf %out, %z : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x40xf32>
  %exp = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<4x40xf32>, tensor<4xf32>) outs(%e1 : tensor<4x40xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %z = arith.mulf %in, %c : f32
    %d = arith.subf %z, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<4x40xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x40xf32>
  %y = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%sum, %exp : tensor<4xf32>, tensor<4x40xf32>) outs(%e3 : tensor<4x40xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x40xf32>
  return %y : tensor<4x40xf32>
}

// -----

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bias = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#transposed = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
#transposed_rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>

// GPT-2's: logits [2, 3, 5, 40] plus a mask's bias [2, 1, 5, 40] (read through a
// broadcast over the heads) in both the max and the exp, and a division whose
// result is the softmax transposed, [2, 3, 40, 5]. Biased (1); rows 2 x 3 x 5;
// the bias's strides 200, 0, 40; the result's 600, 200, 1, and 5 along a row.
// CHECK-LABEL: func.func @biased_and_transposed
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x5x40xf32>, %[[B:.+]]: tensor<2x1x5x40xf32>)
// CHECK-NOT: linalg.
// CHECK: call @shlo_precompiled_0(%[[X]], %[[B]]) {shlo.kernel = "shlo_softmax_f32", shlo.kernel_arguments = array<i64: 30, 40, 0, 1065353216, 1, 2, 3, 5, 200, 0, 40, 600, 200, 1, 5>} : (tensor<2x3x5x40xf32>, tensor<2x1x5x40xf32>) -> tensor<2x3x40x5xf32>
// CHECK-NOT: linalg.
func.func @biased_and_transposed(%x: tensor<2x3x5x40xf32>, %b: tensor<2x1x5x40xf32>) -> tensor<2x3x40x5xf32> {
  %zero = arith.constant 0.0 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<2x3x5xf32>
  %f0 = linalg.fill ins(%minus_inf : f32) outs(%e0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %max = linalg.generic {indexing_maps = [#bias, #x, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%b, %x : tensor<2x1x5x40xf32>, tensor<2x3x5x40xf32>) outs(%f0 : tensor<2x3x5xf32>) {
  ^bb0(%bias: f32, %in: f32, %out: f32):
    %z = arith.addf %in, %bias : f32
    %m = arith.maximumf %out, %z : f32
    linalg.yield %m : f32
  } -> tensor<2x3x5xf32>
  %e1 = tensor.empty() : tensor<2x3x5x40xf32>
  %exp = linalg.generic {indexing_maps = [#bias, #x, #rows, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b, %x, %max : tensor<2x1x5x40xf32>, tensor<2x3x5x40xf32>, tensor<2x3x5xf32>) outs(%e1 : tensor<2x3x5x40xf32>) {
  ^bb0(%bias: f32, %in: f32, %m: f32, %out: f32):
    %z = arith.addf %in, %bias : f32
    %d = arith.subf %z, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<2x3x5x40xf32>
  %e2 = tensor.empty() : tensor<2x3x5xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %sum = linalg.generic {indexing_maps = [#x, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%exp : tensor<2x3x5x40xf32>) outs(%f2 : tensor<2x3x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<2x3x5xf32>
  %e3 = tensor.empty() : tensor<2x3x40x5xf32>
  %y = linalg.generic {indexing_maps = [#transposed_rows, #transposed, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum, %exp : tensor<2x3x5xf32>, tensor<2x3x5x40xf32>) outs(%e3 : tensor<2x3x40x5xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<2x3x40x5xf32>
  return %y : tensor<2x3x40x5xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The max is a result too: the kernel would not give it, so nothing changes;
// nor does a max that starts from 0 rather than -inf (a different op).
// CHECK-LABEL: func.func @max_used_elsewhere
// CHECK-NOT: call
// CHECK: return
// CHECK-LABEL: func.func @max_from_zero
// CHECK-NOT: call
// CHECK: return
func.func @max_used_elsewhere(%x: tensor<4x40xf32>) -> (tensor<4x40xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%minus_inf : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x40xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x40xf32>
  %exp = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%max, %x : tensor<4xf32>, tensor<4x40xf32>) outs(%e1 : tensor<4x40xf32>) {
  ^bb0(%m: f32, %in: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<4x40xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x40xf32>
  %y = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%sum, %exp : tensor<4xf32>, tensor<4x40xf32>) outs(%e3 : tensor<4x40xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x40xf32>
  return %y, %max : tensor<4x40xf32>, tensor<4xf32>
}
func.func @max_from_zero(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x40xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x40xf32>
  %exp = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%max, %x : tensor<4xf32>, tensor<4x40xf32>) outs(%e1 : tensor<4x40xf32>) {
  ^bb0(%m: f32, %in: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<4x40xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x40xf32>
  %y = linalg.generic {indexing_maps = [#row, #rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%sum, %exp : tensor<4xf32>, tensor<4x40xf32>) outs(%e3 : tensor<4x40xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x40xf32>
  return %y : tensor<4x40xf32>
}

// -----

// Reductions: a sum of rows from 0.5 (outer 6, reduced 40, inner 1, sum 0,
// 0.5's bits); a max over the first dimension, read through a transposed map
// (outer 1, reduced 30, inner 20, max 1, -inf's bits); a min over the middle
// one (outer 2, reduced 17, inner 16, min 2, +0.0).
// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.+]]: tensor<6x40xf32>, %[[Y:.+]]: tensor<30x20xf32>, %[[Z:.+]]: tensor<2x17x16xf32>)
// CHECK-NOT: linalg.
// CHECK-DAG: call @shlo_precompiled_{{[0-9]+}}(%[[X]]) {shlo.kernel = "shlo_reduce_f32", shlo.kernel_arguments = array<i64: 6, 40, 1, 0, 1056964608>}
// CHECK-DAG: call @shlo_precompiled_{{[0-9]+}}(%[[Y]]) {shlo.kernel = "shlo_reduce_f32", shlo.kernel_arguments = array<i64: 1, 30, 20, 1, 4286578688>}
// CHECK-DAG: call @shlo_precompiled_{{[0-9]+}}(%[[Z]]) {shlo.kernel = "shlo_reduce_f32", shlo.kernel_arguments = array<i64: 2, 17, 16, 2, 0>}
// CHECK: return
func.func @reductions(%x: tensor<6x40xf32>, %y: tensor<30x20xf32>, %z: tensor<2x17x16xf32>) -> (tensor<6xf32>, tensor<20xf32>, tensor<2x16xf32>) {
  %half = arith.constant 0.5 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<6xf32>
  %f0 = linalg.fill ins(%half : f32) outs(%e0 : tensor<6xf32>) -> tensor<6xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%f0 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %e1 = tensor.empty() : tensor<20xf32>
  %f1 = linalg.fill ins(%minus_inf : f32) outs(%e1 : tensor<20xf32>) -> tensor<20xf32>
  %max = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<30x20xf32>) outs(%f1 : tensor<20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<20xf32>
  %e2 = tensor.empty() : tensor<2x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x16xf32>) -> tensor<2x16xf32>
  %min = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%z : tensor<2x17x16xf32>) outs(%f2 : tensor<2x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.minimumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x16xf32>
  return %sum, %max, %min : tensor<6xf32>, tensor<20xf32>, tensor<2x16xf32>
}

// -----

// Left to the generated code: rows shorter than a vector; an input that
// another op reads too (its rows are shlo-fuse-rows' to share); an f64 sum; a
// reduction whose body computes more than the combination.
// CHECK-LABEL: func.func @not_kernels
// CHECK-NOT: call
// CHECK: return
func.func @not_kernels(%x: tensor<6x8xf32>, %y: tensor<6x40xf32>, %z: tensor<6x40xf64>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6x40xf32>, tensor<6xf64>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %zero64 = arith.constant 0.0 : f64
  %e0 = tensor.empty() : tensor<6xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<6xf32>) -> tensor<6xf32>
  %short = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x8xf32>) outs(%f0 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %shared = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<6x40xf32>) outs(%f0 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %e1 = tensor.empty() : tensor<6x40xf32>
  %twice = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<6x40xf32>) outs(%e1 : tensor<6x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<6x40xf32>
  %e2 = tensor.empty() : tensor<6xf64>
  %f2 = linalg.fill ins(%zero64 : f64) outs(%e2 : tensor<6xf64>) -> tensor<6xf64>
  %wide = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%z : tensor<6x40xf64>) outs(%f2 : tensor<6xf64>) {
  ^bb0(%in: f64, %out: f64):
    %s = arith.addf %out, %in : f64
    linalg.yield %s : f64
  } -> tensor<6xf64>
  %squares = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%e1 : tensor<6x40xf32>) outs(%f0 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  return %short, %shared, %twice, %wide, %squares : tensor<6xf32>, tensor<6xf32>, tensor<6x40xf32>, tensor<6xf64>, tensor<6xf32>
}
