// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-temporaries-in-output-blocks)' | FileCheck %s

// A softmax's step over a block of two rows: exp into a temporary, then
// the temporary divided into the output block at the same places. The
// temporary moves into the output block (its subview moves up to where
// the alloc was), and the last pass updates it in place.
// CHECK-LABEL: func @softmax_block
// CHECK-SAME: (%[[X:.+]]: memref<10x64xf32>, %[[Y:.+]]: memref<10x64xf32>
// CHECK: scf.forall
// CHECK-NOT: memref.alloc
// CHECK: %[[OUT:.+]] = memref.subview %[[Y]]
// CHECK-NOT: memref.alloc
// CHECK: scf.for
// CHECK: memref.subview %[[OUT]]
// CHECK: vector.transfer_write
// CHECK: scf.for
// CHECK: %[[READ_VIEW:.+]] = memref.subview %[[OUT]]
// CHECK: vector.transfer_read %[[READ_VIEW]]
// CHECK: %[[WRITE_VIEW:.+]] = memref.subview %[[OUT]]
// CHECK: vector.transfer_write %{{.+}}, %[[WRITE_VIEW]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @softmax_block(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e = math.exp %a : vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %q = arith.divf %a, %sv : vector<16xf32>
        %w = memref.subview %out[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %q, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}

// -----

// The same step in a private kernel, whose caller passes buffers of their
// own: rewritten.
// CHECK-LABEL: func private @kernel
// CHECK-NOT: memref.alloc
// CHECK: return
func.func private @kernel(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e = math.exp %a : vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %q = arith.divf %a, %sv : vector<16xf32>
        %w = memref.subview %out[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %q, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}

func.func @caller(%s: f32) {
  %a = memref.alloc() : memref<10x64xf32>
  %b = memref.alloc() : memref<10x64xf32>
  call @kernel(%a, %b, %s) : (memref<10x64xf32>, memref<10x64xf32>, f32) -> ()
  return
}

// -----

// The caller passes the same buffer as the input and the output (through
// a view): the temporary would overwrite the input. Unchanged.
// CHECK-LABEL: func private @kernel
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func private @kernel(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e = math.exp %a : vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %q = arith.divf %a, %sv : vector<16xf32>
        %w = memref.subview %out[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %q, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}

func.func @caller(%s: f32) {
  %a = memref.alloc() : memref<10x64xf32>
  %v = memref.cast %a : memref<10x64xf32> to memref<10x64xf32>
  call @kernel(%a, %v, %s) : (memref<10x64xf32>, memref<10x64xf32>, f32) -> ()
  return
}

// -----

// The last pass updates only the first row of the block: the second row of
// the output would be left holding the temporary. Unchanged.
// CHECK-LABEL: func @first_row_only
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func @first_row_only(%x: memref<10x64xf32>, %y: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %c = %c0 to %c64 step %c16 {
      %v = memref.subview %t[0, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
      %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
      %w = memref.subview %out[0, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
      vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
    }
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}

// -----

// The last pass writes each element at its transposed place in the block:
// both accesses tile the block, but an in-place update would read elements
// it already overwrote. Unchanged.
// CHECK-LABEL: func @transposed
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func @transposed(%x: memref<20x4xf32>, %y: memref<20x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
    %block = memref.subview %x[%row, 0] [4, 4] [1, 1] : memref<20x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
    scf.for %a = %c0 to %c4 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        %v = memref.subview %block[%a, %b] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        %e = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
        %w = memref.subview %t[%a, %b] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [4, 4] [1, 1] : memref<20x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    scf.for %a = %c0 to %c4 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        %v = memref.subview %t[%a, %b] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        %e = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
        %w = memref.subview %out[%b, %a] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
      }
    }
    memref.dealloc %t : memref<4x4xf32>
  }
  return
}

// -----

// The last pass also reads each element's transposed place, which an
// earlier iteration may have overwritten in place (it writes its own place
// twice, as many writes as reads). Unchanged.
// CHECK-LABEL: func @reads_elsewhere
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func @reads_elsewhere(%x: memref<20x4xf32>, %y: memref<20x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
    %block = memref.subview %x[%row, 0] [4, 4] [1, 1] : memref<20x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
    scf.for %a = %c0 to %c4 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        %v = memref.subview %block[%a, %b] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        %e = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
        %w = memref.subview %t[%a, %b] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [4, 4] [1, 1] : memref<20x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    scf.for %a = %c0 to %c4 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        %v = memref.subview %t[%a, %b] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        %e = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
        %u = memref.subview %t[%b, %a] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        %f = vector.transfer_read %u[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
        %g = arith.addf %e, %f : vector<1xf32>
        %w = memref.subview %out[%a, %b] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        vector.transfer_write %g, %w[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
        %w2 = memref.subview %out[%a, %b] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        vector.transfer_write %g, %w2[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
      }
    }
    memref.dealloc %t : memref<4x4xf32>
  }
  return
}

// -----

// The last pass writes under a condition: where it does not, the output
// would keep the temporary. Unchanged.
// CHECK-LABEL: func @conditional_write
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func @conditional_write(%cond: i1, %x: memref<20x4xf32>, %y: memref<20x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
    %block = memref.subview %x[%row, 0] [4, 4] [1, 1] : memref<20x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
    scf.for %a = %c0 to %c4 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        %v = memref.subview %block[%a, %b] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        %e = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
        %w = memref.subview %t[%a, %b] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [4, 4] [1, 1] : memref<20x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    scf.for %a = %c0 to %c4 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        scf.if %cond {
          %v = memref.subview %t[%a, %b] [1, 1] [1, 1] : memref<4x4xf32> to memref<1x1xf32, strided<[4, 1], offset: ?>>
          %e = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x1xf32, strided<[4, 1], offset: ?>>, vector<1xf32>
          %w = memref.subview %out[%a, %b] [1, 1] [1, 1] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<1x1xf32, strided<[4, 1], offset: ?>>
          vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<1xf32>, memref<1x1xf32, strided<[4, 1], offset: ?>>
        }
      }
    }
    memref.dealloc %t : memref<4x4xf32>
  }
  return
}

// -----

// The output was written over the input (the same buffer %x): the first
// pass reads %x's block after the temporary would have overwritten it.
// Unchanged.
// CHECK-LABEL: func @output_is_input
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func @output_is_input(%x: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %w = memref.subview %out[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}

// -----

// A pass after the one that writes the output reads the temporary: the
// output pass is not its last use. Unchanged.
// CHECK-LABEL: func @read_after
// CHECK: memref.alloc
// CHECK: memref.dealloc
func.func @read_after(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %m: memref<5x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %w = memref.subview %out[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    scf.for %c = %c0 to %c64 step %c16 {
      %v = memref.subview %t[1, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
      %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
      %w = memref.subview %m[%i, 0] [1, 16] [1, 1] : memref<5x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
      vector.transfer_write %a, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[16, 1], offset: ?>>
    }
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}

// -----

// A step with another temporary before the one that moves (x * s, read by
// the exp): the move erased an op that the pass then compared the other
// with (an internal error on softmax(x / 8) over [8192, 64]).
// CHECK-LABEL: func @second_temporary_moves
// CHECK-SAME: (%[[X:.+]]: memref<10x64xf32>, %[[Y:.+]]: memref<10x64xf32>
// CHECK: scf.forall
// CHECK: %[[SCALED:.+]] = memref.alloc() {{.*}} : memref<2x64xf32>
// CHECK: arith.mulf
// CHECK: memref.subview %[[SCALED]]
// CHECK-NOT: memref.alloc
// CHECK: %[[OUT:.+]] = memref.subview %[[Y]]
// CHECK: memref.subview %[[SCALED]]
// CHECK: math.exp
// CHECK: memref.subview %[[OUT]]
// CHECK: memref.subview %[[OUT]]
// CHECK: arith.divf
// CHECK: memref.subview %[[OUT]]
// CHECK: memref.dealloc %[[SCALED]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @second_temporary_moves(%x: memref<10x64xf32>, %y: memref<10x64xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p = ub.poison : f32
  scf.forall (%i) in (5) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %m = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %block[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %z = arith.mulf %a, %sv : vector<16xf32>
        %w = memref.subview %m[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %z, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %t = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %m[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %e = math.exp %a : vector<16xf32>
        %w = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %e, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    %out = memref.subview %y[%row, 0] [2, 64] [1, 1] : memref<10x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c64 step %c16 {
        %v = memref.subview %t[%r, %c] [1, 16] [1, 1] : memref<2x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        %a = vector.transfer_read %v[%c0, %c0], %p {in_bounds = [true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %q = arith.divf %a, %sv : vector<16xf32>
        %w = memref.subview %out[%r, %c] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>> to memref<1x16xf32, strided<[64, 1], offset: ?>>
        vector.transfer_write %q, %w[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<1x16xf32, strided<[64, 1], offset: ?>>
      }
    }
    memref.dealloc %m : memref<2x64xf32>
    memref.dealloc %t : memref<2x64xf32>
  }
  return
}
