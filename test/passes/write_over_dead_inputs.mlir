// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-write-over-dead-inputs)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The quotient is written over the exponentials, which die at the divide; the
// body reads them through the output's argument.
// CHECK-LABEL: func @divide_over_dead_exponentials
// CHECK: %[[E:.+]] = linalg.generic
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%{{.+}} : tensor<4xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %[[A:.+]]: f32):
// CHECK-NEXT: arith.divf %[[A]], %[[S]] : f32
// CHECK: return %[[R]]
func.func @divide_over_dead_exponentials(%x: tensor<4x8xf32>, %s: tensor<4xf32>) -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %empty2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%empty2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.divf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Left alone: a function argument (bufferization would copy it), a value
// read after the op, and one also read through another map.
// CHECK-LABEL: func @untouched
// CHECK: %[[E0:.+]] = tensor.empty
// CHECK: ins(%{{.+}} : tensor<8x8xf32>) outs(%[[E0]] : tensor<8x8xf32>)
// CHECK: %[[E1:.+]] = tensor.empty
// CHECK: ins(%{{.+}} : tensor<8x8xf32>) outs(%[[E1]] : tensor<8x8xf32>)
// CHECK: %[[E2:.+]] = tensor.empty
// CHECK: ins(%[[K:.+]], %[[K]] : tensor<8x8xf32>, tensor<8x8xf32>) outs(%[[E2]] : tensor<8x8xf32>)
func.func @untouched(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %empty = tensor.empty() : tensor<8x8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%empty : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %kept = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%neg : tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %both = linalg.generic {indexing_maps = [#id, #t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%kept, %kept : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<8x8xf32>
  return %neg, %both, %x : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Made outside the loop the op runs in: every iteration reads it again. (Its
// other user, after the loop, once crashed the liveness walk.)
// CHECK-LABEL: func @made_outside_a_loop
// CHECK: scf.for
// CHECK: %[[E:.+]] = tensor.empty
// CHECK: ins(%{{.+}}, %{{.+}} : tensor<8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
func.func @made_outside_a_loop(%x: tensor<8xf32>, %n: index) -> (tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %empty = tensor.empty() : tensor<8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<8xf32>) {
    %e2 = tensor.empty() : tensor<8xf32>
    %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%e, %acc : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %0 = arith.addf %a, %b : f32
      linalg.yield %0 : f32
    } -> tensor<8xf32>
    scf.yield %d : tensor<8xf32>
  }
  %e3 = tensor.empty() : tensor<8xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<8xf32>) outs(%e3 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  return %r, %z : tensor<8xf32>, tensor<8xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Through a reshape of a value nothing else reads (a matmul's product, then
// its bias add) when the op's result is not returned; a returned result
// written into a view would have to be copied into the caller's buffer.
// CHECK-LABEL: func @through_reshapes
// CHECK: %[[M:.+]] = linalg.generic
// CHECK: %[[V:.+]] = tensor.expand_shape %[[M]]
// CHECK: %[[A:.+]] = linalg.generic {{.+}} outs(%[[V]] : tensor<1x4x8xf32>)
// CHECK: %[[N:.+]] = linalg.generic
// CHECK: %[[W:.+]] = tensor.expand_shape %[[N]]
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x4x8xf32>
// CHECK: linalg.generic {{.+}} ins(%[[A]], %[[W]] : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%[[E]] : tensor<1x4x8xf32>)
func.func @through_reshapes(%x: tensor<4x8xf32>) -> tensor<1x4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %v = tensor.expand_shape %m [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e1 = tensor.empty() : tensor<1x4x8xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<1x4x8xf32>) outs(%e1 : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x8xf32>
  %empty2 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%empty2 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.sin %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %w = tensor.expand_shape %n [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e2 = tensor.empty() : tensor<1x4x8xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %w : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%e2 : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.addf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The body also reads the input at other indices (tensor.extract, as gathers
// do): those elements may be written already.
// CHECK-LABEL: func @read_elsewhere_in_the_body
// CHECK: %[[E:.+]] = tensor.empty() : tensor<8xf32>
// CHECK: ins(%{{.+}} : tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
func.func @read_elsewhere_in_the_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c7 = arith.constant 7 : index
  %empty = tensor.empty() : tensor<8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  %empty2 = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<8xf32>) outs(%empty2 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %last = tensor.extract %e[%c7] : tensor<8xf32>
    %0 = arith.addf %in, %last : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A sum with a term of the column index (jnp.arange) keeps its own buffer:
// reading its init and an index, it would not be vectorized.
// CHECK-LABEL: func @index_term
// CHECK: math.exp
// CHECK: %[[E:.+]] = tensor.empty
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[E]] : tensor<4x8xf32>)
// CHECK: linalg.index 1
func.func @index_term(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %empty2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<4x8xf32>) outs(%empty2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %j = linalg.index 1 : index
    %i = arith.index_cast %j : index to i32
    %f = arith.sitofp %i : i32 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
