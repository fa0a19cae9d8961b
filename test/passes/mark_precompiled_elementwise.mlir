// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-mark-precompiled-elementwise)' | FileCheck %s

#rows = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// 0.5 - tanh(x + b) * (x + b), b broadcast over the rows: a call on x and b (and x
// again, for the kernel's unused inputs) and the program. Its words: rank 2, 2
// inputs, 1 constant, 1 slot, 2 chains, the result in operand 3 (slot 0); sizes 4 x
// 40; x's strides 40, 1 and b's 0, 1; 0.5's bits. Chain 1 writes slot 0: x, one
// step, add input 1. s = x + b is read twice, so chain 2 starts from slot 0: tanh,
// times slot 0, then subtracted from constant 2 (reversed) into slot 0.
// CHECK-LABEL: func.func @gelu_like
// CHECK-SAME: (%[[X:.+]]: tensor<4x40xf32>, %[[B:.+]]: tensor<40xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[P:.+]] = arith.constant dense<[2, 2, 1, 1, 2, 3, 4, 40, 40, 1, 0, 1, 1056964608, 0, 0, 1, 0, 1, 0, 0, 3, 3, 11, -1, 0, 2, 3, 0, 1, 2, 1]> : tensor<31xi64>
// CHECK: %[[Y:.+]] = call @shlo_precompiled_0(%[[X]], %[[B]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[P]]) {shlo.kernel = "shlo_elementwise_f32", shlo.kernel_arguments = array<i64>}
// CHECK: return %[[Y]]
func.func @gelu_like(%x: tensor<4x40xf32>, %b: tensor<40xf32>) -> tensor<4x40xf32> {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<4x40xf32>
  %y = linalg.generic {indexing_maps = [#rows, #bias, #rows], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x40xf32>, tensor<40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %t = math.tanh %s : f32
    %u = arith.mulf %t, %s : f32
    %v = arith.subf %half, %u : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  return %y : tensor<4x40xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>

// Read transposed, compared, or accumulated into the output: left to the generated code.
// CHECK-LABEL: func.func @left
// CHECK-NOT: call
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: call
func.func @left(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %t = linalg.generic {indexing_maps = [#transposed, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  %s = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.cmpf ogt, %in, %zero : f32
    %v = arith.select %c, %in, %zero : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  %a = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%x : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %out : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  return %t, %s, %a : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
