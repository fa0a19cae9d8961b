// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-sequential-small-foralls{threads=2})' | FileCheck %s

// A contraction's tiles with 4 x 2 tiles x 16 steps x 512 lanes = 64K lanes, far
// below 2 threads' 256K: nested loops, the body moved in with the indices.
// CHECK-LABEL: func @small_batch_matmul
// CHECK-SAME: (%[[A:.+]]: memref<4x16xf32>, %[[OUT:.+]]: memref<4x2x8x32xf32>)
func.func @small_batch_matmul(%a: memref<4x16xf32>, %out: memref<4x2x8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  // CHECK-NOT: scf.forall
  // CHECK: scf.for %[[B:.+]] = %{{.+}} to %{{.+}} step
  // CHECK-NEXT: arith.constant
  // CHECK-NEXT: arith.constant
  // CHECK-NEXT: arith.constant
  // CHECK-NEXT: scf.for %[[H:.+]] = %{{.+}} to %{{.+}} step
  // CHECK: scf.for
  // CHECK: memref.load %[[A]][%[[B]], %{{.+}}]
  // CHECK: arith.mulf
  // CHECK: arith.addf
  // CHECK: vector.transfer_write %{{.+}}, %[[OUT]][%[[B]], %[[H]], %{{.+}}, %{{.+}}]
  // CHECK-NOT: scf.forall
  scf.forall (%b, %h) in (4, 2) {
    %acc = scf.for %k = %c0 to %c16 step %c1 iter_args(%sum = %zero) -> (vector<8x32xf32>) {
      %x = memref.load %a[%b, %k] : memref<4x16xf32>
      %v = vector.broadcast %x : f32 to vector<8x32xf32>
      %p = arith.mulf %v, %v : vector<8x32xf32>
      %s = arith.addf %sum, %p : vector<8x32xf32>
      scf.yield %s : vector<8x32xf32>
    }
    vector.transfer_write %acc, %out[%b, %h, %c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<4x2x8x32xf32>
  } {shlo.contraction_tiles}
  return
}

// -----

// 64 x 512 x 16 = 512K FMA lanes: enough for 2 threads, so it stays a forall.
// CHECK-LABEL: func @large_matmul
// CHECK: scf.forall
// CHECK-NOT: scf.for %{{.+}} = %{{.+}} to %c64
func.func @large_matmul(%a: memref<64x512xf32>, %out: memref<64x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  scf.forall (%i) in (64) {
    %acc = scf.for %k = %c0 to %c512 step %c1 iter_args(%sum = %zero) -> (vector<16xf32>) {
      %x = memref.load %a[%i, %k] : memref<64x512xf32>
      %v = vector.broadcast %x : f32 to vector<16xf32>
      %s = vector.fma %v, %v, %sum : vector<16xf32>
      scf.yield %s : vector<16xf32>
    }
    vector.transfer_write %acc, %out[%i, %c0] {in_bounds = [true]} : vector<16xf32>, memref<64x16xf32>
  } {shlo.contraction_tiles}
  return
}

// -----

// Without the mark (an elementwise op's tiles, threaded by its own plan) or
// with a trip count unknown here, the forall stays.
// CHECK-LABEL: func @left_alone
// CHECK: scf.forall
// CHECK: scf.forall
func.func @left_alone(%a: memref<4x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%i) in (4) {
    %x = memref.load %a[%i, %c0] : memref<4x16xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i, %c0] : memref<4x16xf32>
  }
  scf.forall (%i) in (4) {
    scf.for %k = %c0 to %n step %c1 {
      %x = memref.load %a[%i, %k] : memref<4x16xf32>
      %v = vector.broadcast %x : f32 to vector<16xf32>
      %s = vector.fma %v, %v, %v : vector<16xf32>
      vector.transfer_write %s, %a[%i, %c0] : vector<16xf32>, memref<4x16xf32>
    }
  } {shlo.contraction_tiles}
  return
}
