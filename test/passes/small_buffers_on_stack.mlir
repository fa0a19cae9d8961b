// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-small-buffers-on-stack)' | FileCheck %s

// A tile's partial results in each step of an OpenMP loop (the scope that
// convert-scf-to-openmp gives it): on the stack, with its alignment, and
// no free.
// CHECK-LABEL: func @step_of_parallel_loop
// CHECK: memref.alloca_scope
// CHECK-NEXT: %[[T:.+]] = memref.alloca() {alignment = 64 : i64} : memref<2xf32>
// CHECK-NOT: memref.alloc()
// CHECK: memref.store %{{.+}}, %[[T]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @step_of_parallel_loop(%x: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  memref.alloca_scope {
    %t = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
    %v = memref.load %x[%c0] : memref<2xf32>
    memref.store %v, %t[%c0] : memref<2xf32>
    %w = memref.load %t[%c0] : memref<2xf32>
    memref.store %w, %x[%c0] : memref<2xf32>
    memref.dealloc %t : memref<2xf32>
  }
  return
}

// -----

// Under a condition in the function's own block: the region runs at most
// once, so the stack holds it.
// CHECK-LABEL: func @under_condition
// CHECK: scf.if
// CHECK-NEXT: memref.alloca() : memref<4xi32>
// CHECK-NOT: memref.dealloc
func.func @under_condition(%c: i1, %x: memref<4xi32>) {
  scf.if %c {
    %t = memref.alloc() : memref<4xi32>
    memref.copy %x, %t : memref<4xi32> to memref<4xi32>
    memref.copy %t, %x : memref<4xi32> to memref<4xi32>
    memref.dealloc %t : memref<4xi32>
  }
  return
}

// -----

// In a loop without a stack scope an alloca would take new stack in every
// iteration: the allocation stays.
// CHECK-LABEL: func @loop_body
// CHECK: scf.for
// CHECK: memref.alloc()
// CHECK: memref.dealloc
func.func @loop_body(%x: memref<2xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloc() : memref<2xf32>
    memref.copy %x, %t : memref<2xf32> to memref<2xf32>
    memref.dealloc %t : memref<2xf32>
  }
  return
}

// -----

// Over MAX_BYTES (1024), dynamic, or freed in another block: left alone.
// CHECK-LABEL: func @not_small_or_not_local
// CHECK: memref.alloc() : memref<257xf32>
// CHECK: memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK: memref.alloc() : memref<2xf32>
// CHECK-NOT: memref.alloca
// CHECK: scf.if
// CHECK: memref.dealloc
func.func @not_small_or_not_local(%x: memref<257xf32>, %n: index, %c: i1) {
  %large = memref.alloc() : memref<257xf32>
  memref.copy %x, %large : memref<257xf32> to memref<257xf32>
  memref.dealloc %large : memref<257xf32>
  %dynamic = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %dynamic : memref<?xf32>
  %elsewhere = memref.alloc() : memref<2xf32>
  scf.if %c {
    memref.dealloc %elsewhere : memref<2xf32>
  }
  return
}

// -----

// 256 floats are exactly MAX_BYTES: on the stack.
// CHECK-LABEL: func @at_the_limit
// CHECK: memref.alloca() : memref<256xf32>
// CHECK-NOT: memref.dealloc
func.func @at_the_limit(%x: memref<256xf32>) {
  %t = memref.alloc() : memref<256xf32>
  memref.copy %x, %t : memref<256xf32> to memref<256xf32>
  memref.copy %t, %x : memref<256xf32> to memref<256xf32>
  memref.dealloc %t : memref<256xf32>
  return
}

// -----

// A step of a parallel loop takes block-sized buffers too, up to
// STEP_MAX_BYTES (64 KB) each and STEP_BUDGET_BYTES (128 KB) a step: a block
// of rows' temporaries. The third 64 KB buffer and the one of 128 KB stay on
// the heap, as do the function's own buffers over MAX_BYTES.
// CHECK-LABEL: func @block_temporaries
// CHECK: memref.alloc() : memref<16384xf32>
// CHECK: memref.alloca_scope
// CHECK-NEXT: memref.alloca() : memref<16384xf32>
// CHECK-NEXT: memref.alloca() : memref<16384xf32>
// CHECK-NEXT: memref.alloc() : memref<16384xf32>
// CHECK-NEXT: memref.alloc() : memref<32768xf32>
// CHECK-NEXT: memref.alloca() : memref<2xf32>
// CHECK-COUNT-2: memref.dealloc
// CHECK-NOT: memref.dealloc
// CHECK: memref.alloca_scope
// CHECK-NEXT: memref.alloca() : memref<16384xf32>
// CHECK-NOT: memref.alloc()
// CHECK: return
func.func @block_temporaries(%x: memref<16384xf32>) {
  %own = memref.alloc() : memref<16384xf32>
  memref.copy %x, %own : memref<16384xf32> to memref<16384xf32>
  memref.dealloc %own : memref<16384xf32>
  memref.alloca_scope {
    %a = memref.alloc() : memref<16384xf32>
    %b = memref.alloc() : memref<16384xf32>
    %c = memref.alloc() : memref<16384xf32>
    %d = memref.alloc() : memref<32768xf32>
    %small = memref.alloc() : memref<2xf32>
    memref.copy %x, %a : memref<16384xf32> to memref<16384xf32>
    memref.copy %a, %b : memref<16384xf32> to memref<16384xf32>
    memref.copy %b, %c : memref<16384xf32> to memref<16384xf32>
    memref.dealloc %a : memref<16384xf32>
    memref.dealloc %b : memref<16384xf32>
    memref.dealloc %c : memref<16384xf32>
    memref.dealloc %d : memref<32768xf32>
    memref.dealloc %small : memref<2xf32>
  }
  // A step of another loop has a budget of its own.
  memref.alloca_scope {
    %e = memref.alloc() : memref<16384xf32>
    memref.copy %x, %e : memref<16384xf32> to memref<16384xf32>
    memref.dealloc %e : memref<16384xf32>
  }
  return
}
