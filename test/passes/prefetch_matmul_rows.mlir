// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-prefetch-matmul-rows)' | FileCheck %s

// A register tile's k loop reads a row of a weight it was given: the same two
// cache lines 16 rows further down are prefetched, in the weight's own
// indices (the k block's offset added), clamped to its last row and column.
// A read whose column is computed in the loop gets no prefetch.
// CHECK-LABEL: func @register_tile
// CHECK-SAME: (%[[RHS:.+]]: memref<768x3072xf32>
func.func @register_tile(%rhs: memref<768x3072xf32>, %lhs: memref<128x768xf32>, %out: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c768 = arith.constant 768 : index
  %p = ub.poison : f32
  %init = arith.constant dense<0.0> : vector<32xf32>
  // CHECK: scf.for %[[K0:.+]] = {{.+}} to
  scf.for %k0 = %c0 to %c768 step %c256 {
    %block = memref.subview %rhs[%k0, 0] [256, 3072] [1, 1] : memref<768x3072xf32> to memref<256x3072xf32, strided<[3072, 1], offset: ?>>
    // CHECK: scf.for %[[J:.+]] = {{.+}} to
    scf.for %j = %c0 to %c256 step %c32 {
      // CHECK: scf.for %[[K:.+]] = {{.+}} iter_args
      // CHECK-DAG: %[[SIXTEEN:.+]] = arith.constant 16 : index
      // CHECK-DAG: %[[STEPS:.+]] = arith.muli %{{.+}}, %[[SIXTEEN]]
      // CHECK: %[[AHEAD:.+]] = arith.addi %[[K]], %[[STEPS]]
      // CHECK: %[[ROW:.+]] = arith.addi %[[AHEAD]], %[[K0]]
      // CHECK: %[[LAST_ROW:.+]] = arith.constant 767 : index
      // CHECK: %[[CLAMPED:.+]] = arith.minui %[[ROW]], %[[LAST_ROW]]
      // CHECK: %[[COLUMN:.+]] = arith.minui %[[J]], %{{.+}}
      // CHECK: memref.prefetch %[[RHS]][%[[CLAMPED]], %[[COLUMN]]], read, locality<2>, data
      // CHECK: %[[NEXT_LINE:.+]] = arith.addi %[[J]], %{{.+}}
      // CHECK: %[[COLUMN2:.+]] = arith.minui %[[NEXT_LINE]], %{{.+}}
      // CHECK: memref.prefetch %[[RHS]][%[[CLAMPED]], %[[COLUMN2]]], read, locality<2>, data
      // CHECK-NOT: memref.prefetch
      // CHECK: scf.yield
      %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %init) -> (vector<32xf32>) {
        %shifted = arith.addi %j, %c8 : index
        %row = memref.subview %block[%k, %j] [1, 32] [1, 1] : memref<256x3072xf32, strided<[3072, 1], offset: ?>> to memref<1x32xf32, strided<[3072, 1], offset: ?>>
        %row2 = memref.subview %block[%k, %shifted] [1, 32] [1, 1] : memref<256x3072xf32, strided<[3072, 1], offset: ?>> to memref<1x32xf32, strided<[3072, 1], offset: ?>>
        %b = vector.transfer_read %row[%c0, %c0], %p {in_bounds = [true]} : memref<1x32xf32, strided<[3072, 1], offset: ?>>, vector<32xf32>
        %b2 = vector.transfer_read %row2[%c0, %c0], %p {in_bounds = [true]} : memref<1x32xf32, strided<[3072, 1], offset: ?>>, vector<32xf32>
        %x = memref.load %lhs[%c0, %k] : memref<128x768xf32>
        %xb = vector.broadcast %x : f32 to vector<32xf32>
        %f = vector.fma %xb, %b, %a : vector<32xf32>
        %g = vector.fma %xb, %b2, %f : vector<32xf32>
        scf.yield %g : vector<32xf32>
      }
      vector.transfer_write %acc, %out[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
    }
  }
  return
}

// -----

// A transpose's tile loop walks 16 rows of the weight at a time, one line
// each; its outer loop moves to the next line. Each row's line one step of
// the outer loop ahead is prefetched. The same tiles read from a buffer of
// the function's own (a block already transposed) are not.
// CHECK-LABEL: func @transposed_tiles
// CHECK-SAME: (%[[W:.+]]: memref<3072x768xf32>
func.func @transposed_tiles(%w: memref<3072x768xf32>, %out: memref<256x128xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %p = ub.poison : f32
  %own = memref.alloc() : memref<128x256xf32>
  // CHECK: scf.for %[[K:.+]] = {{.+}} to
  scf.for %k = %c0 to %c256 step %c16 {
    // CHECK: scf.for %[[N:.+]] = {{.+}} to
    scf.for %n = %c0 to %c128 step %c16 {
      // CHECK-COUNT-16: memref.prefetch %[[W]][%{{.+}}, %{{.+}}], read, locality<2>, data
      // CHECK-NOT: memref.prefetch
      // CHECK: vector.transfer_read
      %tile = memref.subview %w[%n, %k] [16, 16] [1, 1] : memref<3072x768xf32> to memref<16x16xf32, strided<[768, 1], offset: ?>>
      %v = vector.transfer_read %tile[%c0, %c0], %p {in_bounds = [true, true]} : memref<16x16xf32, strided<[768, 1], offset: ?>>, vector<16x16xf32>
      %t = vector.transpose %v, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
      %dest = memref.subview %out[%k, %n] [16, 16] [1, 1] : memref<256x128xf32> to memref<16x16xf32, strided<[128, 1], offset: ?>>
      vector.transfer_write %t, %dest[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32, strided<[128, 1], offset: ?>>
      %owntile = memref.subview %own[%n, %k] [16, 16] [1, 1] : memref<128x256xf32> to memref<16x16xf32, strided<[256, 1], offset: ?>>
      %o = vector.transfer_read %owntile[%c0, %c0], %p {in_bounds = [true, true]} : memref<16x16xf32, strided<[256, 1], offset: ?>>, vector<16x16xf32>
      vector.transfer_write %o, %dest[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32, strided<[128, 1], offset: ?>>
    }
  }
  memref.dealloc %own : memref<128x256xf32>
  return
}
