// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-prefetch-ahead)' | FileCheck %s

// Each step of the forall reads its block of two rows of %x twice: a max,
// then a pass that computes 16 vector ops per vector read. That pass
// prefetches, at each read, the same line of the next block of %x (for
// reading) and of %y, which it writes (for writing), the next block's first
// row clamped to the last block's (8).
// CHECK-LABEL: func @second_pass_computes
// CHECK-SAME: (%[[X:.+]]: memref<10x64xf32>, %[[Y:.+]]: memref<10x64xf32>
// CHECK: scf.forall
// CHECK: %[[ROW:.+]] = affine.apply
// CHECK: scf.for
// CHECK: memref.store
// CHECK: %[[AHEAD:.+]] = arith.addi %[[ROW]], %{{.+}}
// CHECK: %[[LAST:.+]] = arith.constant 8 : index
// CHECK: %[[NEXT:.+]] = arith.minui %[[AHEAD]], %[[LAST]]
// CHECK: %[[NEXT_X:.+]] = memref.subview %[[X]][%[[NEXT]], 0] [2, 64] [1, 1]
// CHECK: %[[AHEAD_Y:.+]] = arith.addi %[[ROW]], %{{.+}}
// CHECK: %[[NEXT_Y_ROW:.+]] = arith.minui %[[AHEAD_Y]], %{{.+}}
// CHECK: %[[NEXT_Y:.+]] = memref.subview %[[Y]][%[[NEXT_Y_ROW]], 0] [2, 64] [1, 1]
// CHECK: scf.for %[[R:.+]] = %{{.+}} to
// CHECK: scf.for %[[C:.+]] = %{{.+}} to
// CHECK: %[[LINE_X:.+]] = memref.subview %[[NEXT_X]][%[[R]], %[[C]]] [1, 16] [1, 1]
// CHECK: memref.prefetch %[[LINE_X]][%{{.+}}, %{{.+}}], read, locality<2>, data
// CHECK: %[[LINE_Y:.+]] = memref.subview %[[NEXT_Y]][%[[R]], %[[C]]] [1, 16] [1, 1]
// CHECK: memref.prefetch %[[LINE_Y]][%{{.+}}, %{{.+}}], write, locality<2>, data
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @second_pass_computes(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %m: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  %init = arith.constant dense<0.0> : vector<16xf32>
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %out_block = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      %s = scf.for %c = %c0 to %c64 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %b = arith.maximumf %acc, %a : vector<16xf32>
        scf.yield %b : vector<16xf32>
      }
      %r1 = vector.reduction <maximumf>, %s : vector<16xf32> into f32
      memref.store %r1, %m[%r] : memref<2xf32>
    }
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %e0 = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e1 = math.exp %e0 : vector<16xf32>
        %e2 = math.exp %e1 : vector<16xf32>
        %e3 = math.exp %e2 : vector<16xf32>
        %e4 = math.exp %e3 : vector<16xf32>
        %e5 = math.exp %e4 : vector<16xf32>
        %e6 = math.exp %e5 : vector<16xf32>
        %e7 = math.exp %e6 : vector<16xf32>
        %e8 = math.exp %e7 : vector<16xf32>
        %e9 = math.exp %e8 : vector<16xf32>
        %e10 = math.exp %e9 : vector<16xf32>
        %e11 = math.exp %e10 : vector<16xf32>
        %e12 = math.exp %e11 : vector<16xf32>
        %e13 = math.exp %e12 : vector<16xf32>
        %e14 = math.exp %e13 : vector<16xf32>
        %e15 = math.exp %e14 : vector<16xf32>
        %e16 = math.exp %e15 : vector<16xf32>
        %w = memref.subview %out_block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e16, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
  }
  return
}

// -----

// A later pass that computes 8 ops per vector it reads from the cache (a
// layernorm's normalization) is enough for blocks: it prefetches the next
// block of %x and of %y.
// CHECK-LABEL: func @second_pass_normalizes
// CHECK: memref.prefetch %{{.+}}, read, locality<2>, data
// CHECK: memref.prefetch %{{.+}}, write, locality<2>, data
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @second_pass_normalizes(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %m: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  %init = arith.constant dense<0.0> : vector<16xf32>
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %out_block = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      %s = scf.for %c = %c0 to %c64 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %b = arith.maximumf %acc, %a : vector<16xf32>
        scf.yield %b : vector<16xf32>
      }
      %r1 = vector.reduction <maximumf>, %s : vector<16xf32> into f32
      memref.store %r1, %m[%r] : memref<2xf32>
    }
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %e0 = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e1 = arith.subf %e0, %e0 : vector<16xf32>
        %e2 = arith.mulf %e1, %e0 : vector<16xf32>
        %e3 = arith.subf %e2, %e0 : vector<16xf32>
        %e4 = arith.mulf %e3, %e0 : vector<16xf32>
        %e5 = arith.subf %e4, %e0 : vector<16xf32>
        %e6 = arith.mulf %e5, %e0 : vector<16xf32>
        %e7 = arith.subf %e6, %e0 : vector<16xf32>
        %e8 = arith.mulf %e7, %e0 : vector<16xf32>
        %w = memref.subview %out_block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e8, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
  }
  return
}

// -----

// A second pass that mostly loads (2 ops per read) prefetches nothing: the
// prefetches would take its load slots.
// CHECK-LABEL: func @second_pass_loads
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @second_pass_loads(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %m: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  %init = arith.constant dense<0.0> : vector<16xf32>
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %out_block = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      %s = scf.for %c = %c0 to %c64 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %b = arith.maximumf %acc, %a : vector<16xf32>
        scf.yield %b : vector<16xf32>
      }
      %r1 = vector.reduction <maximumf>, %s : vector<16xf32> into f32
      memref.store %r1, %m[%r] : memref<2xf32>
    }
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %e0 = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e1 = math.exp %e0 : vector<16xf32>
        %e2 = math.exp %e1 : vector<16xf32>
        %w = memref.subview %out_block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e2, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
  }
  return
}

// -----

// One pass over the block: the hardware prefetchers follow it.
// CHECK-LABEL: func @one_pass
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @one_pass(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %m: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  %init = arith.constant dense<0.0> : vector<16xf32>
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %out_block = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      %s = scf.for %c = %c0 to %c64 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %b = arith.maximumf %acc, %a : vector<16xf32>
        scf.yield %b : vector<16xf32>
      }
      %r1 = vector.reduction <maximumf>, %s : vector<16xf32> into f32
      memref.store %r1, %m[%r] : memref<2xf32>
    }
  }
  return
}

// -----

// A stream: the one loop that reads %x computes 16 vector ops per vector it
// reads. It prefetches the line 4 KB (1024 floats) further on, clamped to the
// last element, of %x for reading and of %y, which it writes, for writing.
// CHECK-LABEL: func @stream
// CHECK-SAME: (%[[X:.+]]: memref<4096xf32>, %[[Y:.+]]: memref<4096xf32>
// CHECK: scf.for %[[I:.+]] = %{{.+}} to
// CHECK: %[[AHEAD:.+]] = arith.constant 1024 : index
// CHECK: %[[AT:.+]] = arith.addi %[[I]], %[[AHEAD]]
// CHECK: %[[LAST:.+]] = arith.constant 4095 : index
// CHECK: %[[CLAMPED:.+]] = arith.minui %[[AT]], %[[LAST]]
// CHECK: memref.prefetch %[[X]][%[[CLAMPED]]], read, locality<2>, data
// CHECK: memref.prefetch %[[Y]][%{{.+}}], write, locality<2>, data
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @stream(%x: memref<4096xf32>, %y: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c4096 = arith.constant 4096 : index
  %p = ub.poison : f32
  scf.for %i = %c0 to %c4096 step %c16 {
    %v = memref.subview %x[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %w = memref.subview %y[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %e0 = vector.transfer_read %v[%c0], %p {in_bounds = [true]} : memref<16xf32, strided<[1], offset: ?>>, vector<16xf32>
    %e1 = math.exp %e0 : vector<16xf32>
    %e2 = math.exp %e1 : vector<16xf32>
    %e3 = math.exp %e2 : vector<16xf32>
    %e4 = math.exp %e3 : vector<16xf32>
    %e5 = math.exp %e4 : vector<16xf32>
    %e6 = math.exp %e5 : vector<16xf32>
    %e7 = math.exp %e6 : vector<16xf32>
    %e8 = math.exp %e7 : vector<16xf32>
    %e9 = math.exp %e8 : vector<16xf32>
    %e10 = math.exp %e9 : vector<16xf32>
    %e11 = math.exp %e10 : vector<16xf32>
    %e12 = math.exp %e11 : vector<16xf32>
    %e13 = math.exp %e12 : vector<16xf32>
    %e14 = math.exp %e13 : vector<16xf32>
    %e15 = math.exp %e14 : vector<16xf32>
    %e16 = math.exp %e15 : vector<16xf32>
    vector.transfer_write %e16, %w[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

// A stream loop that mostly loads keeps memory busy itself: no prefetches.
// CHECK-LABEL: func @light_stream
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @light_stream(%x: memref<4096xf32>, %y: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c4096 = arith.constant 4096 : index
  %p = ub.poison : f32
  scf.for %i = %c0 to %c4096 step %c16 {
    %v = memref.subview %x[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %w = memref.subview %y[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %e0 = vector.transfer_read %v[%c0], %p {in_bounds = [true]} : memref<16xf32, strided<[1], offset: ?>>, vector<16xf32>
    %e1 = math.exp %e0 : vector<16xf32>
    %e2 = math.exp %e1 : vector<16xf32>
    vector.transfer_write %e2, %w[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

// A stream needs more: 8 ops per read, which a block's later pass takes, is
// not enough for a loop that reads from memory itself.
// CHECK-LABEL: func @medium_stream
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @medium_stream(%x: memref<4096xf32>, %y: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c4096 = arith.constant 4096 : index
  %p = ub.poison : f32
  scf.for %i = %c0 to %c4096 step %c16 {
    %v = memref.subview %x[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %w = memref.subview %y[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %e0 = vector.transfer_read %v[%c0], %p {in_bounds = [true]} : memref<16xf32, strided<[1], offset: ?>>, vector<16xf32>
    %e1 = arith.subf %e0, %e0 : vector<16xf32>
    %e2 = arith.mulf %e1, %e0 : vector<16xf32>
    %e3 = arith.subf %e2, %e0 : vector<16xf32>
    %e4 = arith.mulf %e3, %e0 : vector<16xf32>
    %e5 = arith.subf %e4, %e0 : vector<16xf32>
    %e6 = arith.mulf %e5, %e0 : vector<16xf32>
    %e7 = arith.subf %e6, %e0 : vector<16xf32>
    %e8 = arith.mulf %e7, %e0 : vector<16xf32>
    vector.transfer_write %e8, %w[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

// A second loop reads %x again: not a stream (the blocks' case, where the
// buffers are views of a forall's block).
// CHECK-LABEL: func @read_twice
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @read_twice(%x: memref<4096xf32>, %y: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c4096 = arith.constant 4096 : index
  %p = ub.poison : f32
  scf.for %i = %c0 to %c4096 step %c16 {
    %v = memref.subview %x[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %w = memref.subview %y[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %e0 = vector.transfer_read %v[%c0], %p {in_bounds = [true]} : memref<16xf32, strided<[1], offset: ?>>, vector<16xf32>
    %e1 = math.exp %e0 : vector<16xf32>
    %e2 = math.exp %e1 : vector<16xf32>
    %e3 = math.exp %e2 : vector<16xf32>
    %e4 = math.exp %e3 : vector<16xf32>
    %e5 = math.exp %e4 : vector<16xf32>
    %e6 = math.exp %e5 : vector<16xf32>
    %e7 = math.exp %e6 : vector<16xf32>
    %e8 = math.exp %e7 : vector<16xf32>
    %e9 = math.exp %e8 : vector<16xf32>
    %e10 = math.exp %e9 : vector<16xf32>
    %e11 = math.exp %e10 : vector<16xf32>
    %e12 = math.exp %e11 : vector<16xf32>
    %e13 = math.exp %e12 : vector<16xf32>
    %e14 = math.exp %e13 : vector<16xf32>
    %e15 = math.exp %e14 : vector<16xf32>
    %e16 = math.exp %e15 : vector<16xf32>
    vector.transfer_write %e16, %w[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32, strided<[1], offset: ?>>
  }
  scf.for %i = %c0 to %c4096 step %c16 {
    %v = memref.subview %x[%i] [16] [1] : memref<4096xf32> to memref<16xf32, strided<[1], offset: ?>>
    %a = vector.transfer_read %v[%c0], %p {in_bounds = [true]} : memref<16xf32, strided<[1], offset: ?>>, vector<16xf32>
    vector.transfer_write %a, %v[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32, strided<[1], offset: ?>>
  }
  return
}
