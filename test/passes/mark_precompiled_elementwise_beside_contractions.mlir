// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-mark-precompiled-elementwise{beside-contractions=1024})' | FileCheck %s

// The default strategy's choice: generics computing tanh or exp call the kernel only
// where the precompiled matmuls and convolutions do at least 1024 flops per value they
// compute, and only where nothing else would be generated code: the program is then
// glue, which LLVM compiles without its optimizing pipeline. Here a 64 x 64 x 64
// matmul (2 * 64^3 = 524288 flops) beside 4 x 40 = 160 values (163840 needed).
#rows = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @tanh_beside_a_large_matmul
// CHECK: call @shlo_precompiled_0({{.*}}) {shlo.kernel = "shlo_matmul_f32"
// CHECK: call @shlo_precompiled_1({{.*}}) {shlo.kernel = "shlo_elementwise_f32"
// CHECK-NOT: linalg.generic
func.func private @shlo_precompiled_0(tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
func.func @tanh_beside_a_large_matmul(%a: tensor<64x64xf32>, %x: tensor<4x40xf32>) -> (tensor<64x64xf32>, tensor<4x40xf32>) {
  %m = call @shlo_precompiled_0(%a, %a) {shlo.kernel = "shlo_matmul_f32", shlo.kernel_arguments = array<i64: 1, 64, 64, 64, 0, 64, 1, 0, 64, 1>} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = tensor.empty() : tensor<4x40xf32>
  %t = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.tanh %in : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  return %m, %t : tensor<64x64xf32>, tensor<4x40xf32>
}

// -----

// The same beside a generic without exp or tanh, which stays generated code: the
// tanh does too.
#rows = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @tanh_beside_other_generated_code
// CHECK-NOT: shlo_elementwise_f32
// CHECK: math.tanh
// CHECK: arith.addf
func.func private @shlo_precompiled_0(tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
func.func @tanh_beside_other_generated_code(%a: tensor<64x64xf32>, %x: tensor<4x40xf32>) -> (tensor<64x64xf32>, tensor<4x40xf32>, tensor<4x40xf32>) {
  %m = call @shlo_precompiled_0(%a, %a) {shlo.kernel = "shlo_matmul_f32", shlo.kernel_arguments = array<i64: 1, 64, 64, 64, 0, 64, 1, 0, 64, 1>} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = tensor.empty() : tensor<4x40xf32>
  %t = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.tanh %in : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  %s = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  return %m, %t, %s : tensor<64x64xf32>, tensor<4x40xf32>, tensor<4x40xf32>
}

// -----

// A 4 x 8 x 3 matmul (192 flops) beside the same 160 values of exp: generated code.
#rows = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @exp_beside_a_small_matmul
// CHECK-NOT: shlo_elementwise_f32
// CHECK: math.exp
func.func private @shlo_precompiled_0(tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
func.func @exp_beside_a_small_matmul(%a: tensor<4x3xf32>, %b: tensor<3x8xf32>, %x: tensor<4x40xf32>) -> (tensor<4x8xf32>, tensor<4x40xf32>) {
  %m = call @shlo_precompiled_0(%a, %b) {shlo.kernel = "shlo_matmul_f32", shlo.kernel_arguments = array<i64: 1, 4, 8, 3, 0, 3, 1, 0, 8, 1>} : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x40xf32>
  %t = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  return %m, %t : tensor<4x8xf32>, tensor<4x40xf32>
}

// -----

// No contraction at all (the bench's elementwise chain): generated code.
#rows = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @tanh_alone
// CHECK-NOT: shlo_elementwise_f32
// CHECK: math.tanh
func.func @tanh_alone(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %e = tensor.empty() : tensor<4x40xf32>
  %t = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.tanh %in : f32
    linalg.yield %v : f32
  } -> tensor<4x40xf32>
  return %t : tensor<4x40xf32>
}
