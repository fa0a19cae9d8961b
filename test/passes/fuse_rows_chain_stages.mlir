// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-fuse-rows{threads=2},transform-interpreter,shlo-erase-codegen-recipes)' | FileCheck %s
// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-fuse-rows{threads=2 stage-long-chains=false},transform-interpreter,shlo-erase-codegen-recipes)' | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0) -> (d0)>

// The bench's chain: cut where one value crosses with the stages' weights
// closest (after -t^2: tanh's 20 and 4 ops against exp's 20, sqrt's 6 and 3
// ops), both run over blocks of 1024 values (12 KB of input, first stage and
// result), 1024 blocks.
// CHECK-LABEL: func.func @chain
// CHECK: scf.forall (%{{.+}}) in (1024) shared_outs
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<1024xf32>)
// CHECK: math.tanh
// CHECK: %[[SQUARE:.+]] = arith.mulf
// CHECK: %[[NEG:.+]] = arith.negf %[[SQUARE]]
// CHECK-NEXT: linalg.yield %[[NEG]]
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: math.exp %[[IN]]
// CHECK: math.sqrt
// CHECK: tensor.parallel_insert_slice
// OFF-LABEL: func.func @chain
// OFF-NOT: scf.forall
// OFF: math.tanh
// OFF: math.exp
func.func @chain(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %c15 = arith.constant 1.5 : f32
  %c025 = arith.constant 0.25 : f32
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1048576xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1048576xf32>) outs(%e : tensor<1048576xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %c15 : f32
    %1 = arith.addf %0, %c025 : f32
    %2 = math.tanh %1 : f32
    %3 = arith.mulf %2, %2 : f32
    %4 = arith.negf %3 : f32
    %5 = math.exp %4 : f32
    %6 = arith.subf %5, %half : f32
    %7 = arith.maximumf %6, %zero : f32
    %8 = arith.addf %7, %one : f32
    %9 = math.sqrt %8 : f32
    linalg.yield %9 : f32
  } -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// 1 + b, computed first but read by the last op, moves next to it: the cuts
// after tanh and after tanh(...) * b are crossed by one value, and the second
// has the closer weights (22 against 27). Rows of 128 values walk the bias;
// the block is 4 rows (2 KB a row of x, the two stages' results and b, at
// most), 64 blocks.
// CHECK-LABEL: func.func @late_reader
// CHECK: scf.forall (%{{.+}}) in (64) shared_outs
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK-NEXT: arith.addf %{{.+}}, %cst
// CHECK-NEXT: arith.divf
func.func @late_reader(%x: tensor<256x128xf32>, %b: tensor<128xf32>) -> tensor<256x128xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<256x128xf32>
  %r = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %x : tensor<128xf32>, tensor<256x128xf32>) outs(%e : tensor<256x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %2 = arith.addf %in, %one : f32
    %3 = arith.addf %in_0, %in : f32
    %4 = math.tanh %3 : f32
    %5 = arith.mulf %4, %in : f32
    %6 = math.exp %5 : f32
    %7 = arith.divf %6, %2 : f32
    linalg.yield %7 : f32
  } -> tensor<256x128xf32>
  return %r : tensor<256x128xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// One math function and a division: too short a chain to pay for two loops.
// CHECK-LABEL: func.func @short_chain
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @short_chain(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1048576xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1048576xf32>) outs(%e : tensor<1048576xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.negf %a : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %one : f32
    %3 = arith.divf %a, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// mish of a [2, 16, 32, 64] activation: blocks are 16 rows of 64 values
// (1024 values, 12 KB of input, first stage and result), not whole 32x64
// planes (24 KB of each array) that would not stay in L1 between the stages.
// CHECK-LABEL: func.func @mish_4d
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (2, 16, 2) shared_outs
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<1x1x16x64xf32>)
// CHECK: math.exp
// CHECK-NEXT: math.log1p
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NEXT: arith.mulf
// CHECK: tensor.parallel_insert_slice
func.func @mish_4d(%x: tensor<2x16x32x64xf32>) -> tensor<2x16x32x64xf32> {
  %e = tensor.empty() : tensor<2x16x32x64xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x16x32x64xf32>) outs(%e : tensor<2x16x32x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = math.exp %a : f32
    %1 = math.log1p %0 : f32
    %2 = math.tanh %1 : f32
    %3 = arith.mulf %a, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<2x16x32x64xf32>
  return %r : tensor<2x16x32x64xf32>
}
