// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-free-after-last-use)' | FileCheck %s

// Each buffer is freed after the last op that uses it, so the second buffer
// can reuse the first one's memory.
// CHECK-LABEL: func.func @straight_line
func.func @straight_line(%x: memref<8xf32>, %out: memref<8xf32>) {
  // CHECK: %[[A:.+]] = memref.alloc()
  // CHECK-NEXT: memref.copy %{{.+}}, %[[A]]
  // CHECK-NEXT: memref.copy %[[A]], %{{.+}}
  // CHECK-NEXT: memref.dealloc %[[A]]
  // CHECK-NEXT: %[[B:.+]] = memref.alloc()
  // CHECK-NEXT: memref.copy %{{.+}}, %[[B]]
  // CHECK-NEXT: memref.copy %[[B]], %{{.+}}
  // CHECK-NEXT: memref.dealloc %[[B]]
  // CHECK-NEXT: return
  %a = memref.alloc() : memref<8xf32>
  memref.copy %x, %a : memref<8xf32> to memref<8xf32>
  memref.copy %a, %out : memref<8xf32> to memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  memref.copy %out, %b : memref<8xf32> to memref<8xf32>
  memref.copy %b, %out : memref<8xf32> to memref<8xf32>
  return
}

// -----

// A use through a view, nested in a loop, keeps the buffer until the loop
// ends; a buffer allocated in the loop's body is freed there.
// CHECK-LABEL: func.func @views_and_loops
func.func @views_and_loops(%out: memref<4x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[A:.+]] = memref.alloc() : memref<8xf32>
  %a = memref.alloc() : memref<8xf32>
  %view = memref.expand_shape %a [[0, 1]] output_shape [4, 2] : memref<8xf32> into memref<4x2xf32>
  // CHECK: scf.for
  scf.for %i = %c0 to %c4 step %c1 {
    // CHECK: %[[T:.+]] = memref.alloc() : memref<2xf32>
    %t = memref.alloc() : memref<2xf32>
    memref.store %zero, %t[%c0] : memref<2xf32>
    %v = memref.load %t[%c0] : memref<2xf32>
    // CHECK: memref.load %[[T]]
    // CHECK-NEXT: memref.dealloc %[[T]]
    memref.store %v, %view[%i, %c0] : memref<4x2xf32>
  }
  // CHECK: }
  // CHECK-NEXT: memref.copy
  // CHECK-NEXT: memref.dealloc %[[A]]
  // CHECK-NEXT: return
  memref.copy %view, %out : memref<4x2xf32> to memref<4x2xf32>
  return
}

// -----

// A buffer that a loop yields escapes its block: upstream's ownership-based
// deallocation handles the whole module.
// CHECK-LABEL: func.func @escapes
func.func @escapes(%n: index, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf32>
  // CHECK: scf.for {{.*}} iter_args
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%it = %a) -> (memref<8xf32>) {
    %b = memref.alloc() : memref<8xf32>
    memref.copy %it, %b : memref<8xf32> to memref<8xf32>
    scf.yield %b : memref<8xf32>
  }
  memref.copy %r, %out : memref<8xf32> to memref<8xf32>
  // Upstream's deallocations: ownership flags and a runtime alias check.
  // CHECK: scf.if
  // CHECK-NEXT: memref.dealloc
  // CHECK: call @dealloc_helper
  return
}
