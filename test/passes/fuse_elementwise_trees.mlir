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

// -----

// The reshapes around a named contraction are fenced: upstream fusion would
// otherwise fold them into it, making it a linalg.generic again.
// CHECK: func.func private @shlo_fusion_fence_0(tensor<32x512xf32>)
// CHECK: func.func private @shlo_fusion_fence_1(tensor<32x128xf32>)
// CHECK-LABEL: func @contraction_reshapes
func.func @contraction_reshapes(%x: tensor<2x16x512xf32>, %w: tensor<512x128xf32>) -> tensor<2x16x128xf32> {
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[C:.+]] = tensor.collapse_shape
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x16x512xf32> into tensor<32x512xf32>
  %e = tensor.empty() : tensor<32x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x128xf32>) -> tensor<32x128xf32>
  // CHECK: call @shlo_fusion_fence_0(%[[C]]) : (tensor<32x512xf32>) -> ()
  // CHECK-NEXT: %[[M:.+]] = linalg.matmul
  %m = linalg.matmul ins(%c, %w : tensor<32x512xf32>, tensor<512x128xf32>) outs(%f : tensor<32x128xf32>) -> tensor<32x128xf32>
  // CHECK-NEXT: call @shlo_fusion_fence_1(%[[M]]) : (tensor<32x128xf32>) -> ()
  // CHECK-NEXT: tensor.expand_shape %[[M]]
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 16, 128] : tensor<32x128xf32> into tensor<2x16x128xf32>
  return %r : tensor<2x16x128xf32>
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#bcast = affine_map<(d0, d1, d2) -> (d0, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#red = affine_map<(d0, d1, d2) -> (d0, d1)>
// A producer read once per element by a reduction is not fenced; a cheap one
// reread by a reduction is; one reread by a parallel op only when expensive.
// CHECK-LABEL: func @rereading_consumers
func.func @rereading_consumers(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4xf32>) -> (tensor<4x3xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e2 = tensor.empty() : tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x3xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  // CHECK: %[[CHEAP:.+]] = linalg.generic
  %cheap = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // CHECK: call @shlo_fusion_fence_{{[0-9]+}}(%[[CHEAP]])
  // CHECK-NEXT: linalg.generic
  %sum3 = linalg.generic {indexing_maps = [#bcast, #red], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%cheap : tensor<4x8xf32>) outs(%e3 : tensor<4x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  // CHECK: %[[ONCE:.+]] = linalg.generic
  %once = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // CHECK-NOT: call
  // CHECK: linalg.generic {{.*}} ins(%[[ONCE]]
  %rowsum = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%once : tensor<4x8xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // CHECK: %[[CHEAP1:.+]] = linalg.generic
  %cheap1 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%c : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // CHECK-NOT: call
  // CHECK: linalg.generic {{.*}} ins(%[[CHEAP1]]
  %bc1 = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%cheap1 : tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[EXP:.+]] = linalg.generic
  %exp = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%c : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // CHECK: call @shlo_fusion_fence_{{[0-9]+}}(%[[EXP]])
  // CHECK-NEXT: linalg.generic
  %bc2 = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%exp : tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x8xf32>
  return %sum3, %rowsum, %bc1, %bc2 : tensor<4x3xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
#col = affine_map<(d0, d1) -> (d0)>
#m = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (d0, 0)>
// Upstream would fuse the exp into the cheap broadcast to 4x1, then that into
// the rereading broadcast to 4x8: the cheap op is fenced, as expensive once fused.
// CHECK-LABEL: func @expensive_through_cheap
func.func @expensive_through_cheap(%a: tensor<4xf32>) -> tensor<4x8xf32> {
  %e1 = tensor.empty() : tensor<4xf32>
  %e41 = tensor.empty() : tensor<4x1xf32>
  %e48 = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[EXP:.+]] = linalg.generic
  // CHECK-NOT: call
  // CHECK: %[[COL:.+]] = linalg.generic {{.*}} ins(%[[EXP]]
  // CHECK: call @shlo_fusion_fence_0(%[[COL]]) : (tensor<4x1xf32>) -> ()
  // CHECK-NEXT: linalg.generic {{.*}} ins(%[[COL]]
  %exp = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %col = linalg.generic {indexing_maps = [#col, #m], iterator_types = ["parallel", "parallel"]}
      ins(%exp : tensor<4xf32>) outs(%e41 : tensor<4x1xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x1xf32>
  %wide = linalg.generic {indexing_maps = [#first, #m], iterator_types = ["parallel", "parallel"]}
      ins(%col : tensor<4x1xf32>) outs(%e48 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x8xf32>
  return %wide : tensor<4x8xf32>
}

// -----

#m = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (d0)>
// A broadcast read by several generics gets a copy per reader that will fuse
// it (a parallel op, here by this pass; a reduction reading it once per
// element, by upstream), so none materializes it; other uses (here the
// return) keep the original.
// CHECK-LABEL: func @broadcast_copied_per_reader
func.func @broadcast_copied_per_reader(%mean: tensor<4x1xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %e48 = tensor.empty() : tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  // CHECK: %[[ORIGINAL:.+]] = linalg.generic {{.*}} ins(%arg0 :
  %wide = linalg.generic {indexing_maps = [#first, #m], iterator_types = ["parallel", "parallel"]}
      ins(%mean : tensor<4x1xf32>) outs(%e48 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[CENTERED:.+]] = linalg.generic {{.*}} ins(%arg0, %arg1 :
  %centered = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%x, %wide : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e48 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[COPY:.+]] = linalg.generic {{.*}} ins(%arg0 :
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: linalg.yield
  // CHECK-NEXT: }
  // CHECK-NEXT: linalg.generic {{.*}} ins(%arg1, %[[COPY]] :
  %var = linalg.generic {indexing_maps = [#m, #m, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %wide : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %s = arith.mulf %d, %d : f32
    %t = arith.addf %o, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  // CHECK: return %[[CENTERED]], %{{.+}}, %[[ORIGINAL]]
  return %centered, %var, %wide : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>
}
