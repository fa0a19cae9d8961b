// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-plan-vector-codegen{threads=1})' | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// Elementwise work: tiles of 4 vector registers (64 f32), also for long
// chains of exp and tanh (8 cost LLVM 25% more time for at most 4% speed).
// CHECK-LABEL: module
// CHECK: tile_using_for %{{.*}} tile_sizes [64]
// CHECK-NOT: tile_sizes [128]
func.func @cheap(%p: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = tensor.empty() : tensor<4096xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<4096xf32>) outs(%e : tensor<4096xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>

// A sum of exps keeps partial sums of 4 registers: more accumulators did
// not make softmax faster.
// CHECK-LABEL: module
// CHECK: tile_reduction_using_for %{{.*}} by tile_sizes = [64]
func.func @reduction(%p: tensor<4096xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%p : tensor<4096xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %x = math.exp %in : f32
    %s = arith.addf %x, %out : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>

// A transpose whose result stays in cache (a matmul's block of a transposed
// weight: 256 x 128 f32, 128 KB) walks its input's rows in the inner loop:
// the input's contiguous loop (d0) goes last.
// CHECK-LABEL: module
// CHECK: tile_using_for %{{.*}} tile_sizes [16, 16] interchange = [1, 0]
func.func @cached_transpose(%w: tensor<128x256xf32>) -> tensor<256x128xf32> {
  %e = tensor.empty() : tensor<256x128xf32>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<128x256xf32>) outs(%e : tensor<256x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<256x128xf32>
  return %r : tensor<256x128xf32>
}

// -----

#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>

// A larger one (1 MB) keeps the loops in order: its writes follow the
// output's rows.
// CHECK-LABEL: module
// CHECK: tile_using_for %{{.*}} tile_sizes [16, 16] :
// CHECK-NOT: interchange
func.func @large_transpose(%w: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %e = tensor.empty() : tensor<512x512xf32>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<512x512xf32>) outs(%e : tensor<512x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<512x512xf32>
  return %r : tensor<512x512xf32>
}

// -----

#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>

// Two inputs contiguous along d0, the output along d1: the loops are swapped
// first, so that the tile's minor dimension is d0 and only the output goes
// through a transpose in registers (a rotary embedding fused with the
// transpose of its keys read four operands transposed). The partial tiles
// (40 = 2 x 16 + 8, 24 = 16 + 8) are peeled off and marked with another
// value, which the vectorization skips: their transposes would be element by
// element.
// CHECK-LABEL: module
// CHECK: transform.structured.interchange %{{.*}} iterator_interchange = [1, 0]
// CHECK-NEXT: tile_using_for %{{.*}} tile_sizes [16, 16] :
// CHECK-NEXT: annotate %[[TILE:.*]] "shlo.vectorize" : !transform.any_op
// CHECK: %{{.*}}, %[[PARTIAL:.*]] = transform.loop.peel
// CHECK-NEXT: foreach %[[PARTIAL]]
// CHECK: %[[ZERO:.*]] = transform.param.constant 0 : i64
// CHECK-NEXT: transform.annotate %{{.*}} "shlo.vectorize" = %[[ZERO]]
// CHECK: %{{.*}}, %[[PARTIAL2:.*]] = transform.loop.peel
// CHECK-NEXT: foreach %[[PARTIAL2]]
// CHECK: transform.structured.match attributes {shlo.vectorize} in
func.func @inputs_along_the_other_loop(%a: tensor<40x24xf32>, %b: tensor<40x24xf32>) -> tensor<24x40xf32> {
  %e = tensor.empty() : tensor<24x40xf32>
  %r = linalg.generic {indexing_maps = [#in, #in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<40x24xf32>, tensor<40x24xf32>) outs(%e : tensor<24x40xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<24x40xf32>
  return %r : tensor<24x40xf32>
}
