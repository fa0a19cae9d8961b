// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-fuse-rows{threads=2 min-bytes=1048576},transform-interpreter,shlo-erase-codegen-recipes)' | FileCheck %s

#rows = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Softmax: max, exp(x - max), sum and the division run in one loop over
// blocks of 2 rows (12 KB a row, of x, exp and the result: 24 of the 32 KB a
// block may take; 256 blocks); the bias (#col) is read whole by every block.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.generic
// CHECK: scf.forall (%{{.+}}) in (256) shared_outs
// CHECK: linalg.fill {{.*}} -> tensor<2xf32>
// CHECK: linalg.generic {{.*}}"reduction"{{.*}} ins(%{{.+}} : tensor<2x1024xf32>)
// CHECK: math.exp
// CHECK: -> tensor<2x1024xf32>
// CHECK: linalg.fill {{.*}} -> tensor<2xf32>
// CHECK: arith.addf
// CHECK: -> tensor<2xf32>
// CHECK: arith.divf
// CHECK: -> tensor<2x1024xf32>
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: tensor<512x1024xf32>, %bias: tensor<1024xf32>) -> tensor<512x1024xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512xf32>
  %f0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<512xf32>) -> tensor<512xf32>
  %max = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<512x1024xf32>) outs(%f0 : tensor<512xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  } -> tensor<512xf32>
  %e2 = tensor.empty() : tensor<512x1024xf32>
  %exp = linalg.generic {indexing_maps = [#rows, #id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%max, %x, %bias : tensor<512xf32>, tensor<512x1024xf32>, tensor<1024xf32>) outs(%e2 : tensor<512x1024xf32>) {
  ^bb0(%m: f32, %in: f32, %b: f32, %out: f32):
    %s = arith.subf %in, %m : f32
    %t = arith.addf %s, %b : f32
    %r = math.exp %t : f32
    linalg.yield %r : f32
  } -> tensor<512x1024xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<512xf32>) -> tensor<512xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<512x1024xf32>) outs(%f1 : tensor<512xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  } -> tensor<512xf32>
  %e3 = tensor.empty() : tensor<512x1024xf32>
  %y = linalg.generic {indexing_maps = [#rows, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %exp : tensor<512xf32>, tensor<512x1024xf32>) outs(%e3 : tensor<512x1024xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<512x1024xf32>
  return %y : tensor<512x1024xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The row sums are also returned: the sum stays outside, and what is left
// (one op walking whole rows) is not worth a loop.
// CHECK-LABEL: func.func @sum_used_outside
// CHECK-NOT: scf.forall
// CHECK: return
func.func @sum_used_outside(%x: tensor<512x1024xf32>) -> (tensor<512x1024xf32>, tensor<512xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<512xf32>) -> tensor<512xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<512x1024xf32>) outs(%f : tensor<512xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  } -> tensor<512xf32>
  %e2 = tensor.empty() : tensor<512x1024xf32>
  %y = linalg.generic {indexing_maps = [#rows, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %x : tensor<512xf32>, tensor<512x1024xf32>) outs(%e2 : tensor<512x1024xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<512x1024xf32>
  return %y, %sum : tensor<512x1024xf32>, tensor<512xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#cols = affine_map<(d0, d1) -> (d1)>

// A consumer that reads the reduction's result across its rows (a transpose)
// needs all of it at once: no group.
// CHECK-LABEL: func.func @transposed_reader
// CHECK-NOT: scf.forall
func.func @transposed_reader(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024xf32>) -> tensor<1024xf32>
  %sum = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1024x1024xf32>) outs(%f : tensor<1024xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  } -> tensor<1024xf32>
  %e2 = tensor.empty() : tensor<1024x1024xf32>
  %y = linalg.generic {indexing_maps = [#cols, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %x : tensor<1024xf32>, tensor<1024x1024xf32>) outs(%e2 : tensor<1024x1024xf32>) {
  ^bb0(%s: f32, %in: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<1024x1024xf32>
  return %y : tensor<1024x1024xf32>
}
