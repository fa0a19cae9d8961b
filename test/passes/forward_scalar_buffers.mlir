// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-forward-scalar-buffers)' | FileCheck %s

// Each load takes the value last stored; the buffers, stores and frees go.
// CHECK-LABEL: func.func @forwarded
// CHECK-SAME: (%[[X:.+]]: f32, %[[OUT:.+]]: memref<f32>)
// CHECK-NOT: memref.
// CHECK: %[[Y:.+]] = arith.addf %[[X]], %[[X]]
// CHECK-NEXT: %[[Z:.+]] = arith.mulf %[[Y]], %[[Y]]
// CHECK-NEXT: memref.store %[[Z]], %[[OUT]][]
// CHECK-NEXT: return
func.func @forwarded(%x: f32, %out: memref<f32>) {
  %a = memref.alloc() : memref<f32>
  memref.store %x, %a[] : memref<f32>
  %b = memref.alloc() : memref<1x1xf32>
  %c0 = arith.constant 0 : index
  %x1 = memref.load %a[] : memref<f32>
  %y = arith.addf %x1, %x1 : f32
  memref.store %y, %b[%c0, %c0] : memref<1x1xf32>
  %y1 = memref.load %b[%c0, %c0] : memref<1x1xf32>
  memref.dealloc %a : memref<f32>
  %z = arith.mulf %y1, %y1 : f32
  memref.store %z, %b[%c0, %c0] : memref<1x1xf32>
  %z1 = memref.load %b[%c0, %c0] : memref<1x1xf32>
  memref.dealloc %b : memref<1x1xf32>
  memref.store %z1, %out[] : memref<f32>
  return
}

// -----

// Left alone: a load before any store, a use in a nested region, a use by
// another op, and a buffer of two elements.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: memref.alloc
func.func private @take(memref<f32>)
func.func @kept(%x: f32, %p: i1, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %undefined = memref.alloc() : memref<f32>
  %u = memref.load %undefined[] : memref<f32>
  memref.store %x, %undefined[] : memref<f32>
  memref.store %u, %out[] : memref<f32>
  memref.dealloc %undefined : memref<f32>
  %nested = memref.alloc() : memref<f32>
  memref.store %x, %nested[] : memref<f32>
  scf.if %p {
    %n = memref.load %nested[] : memref<f32>
    memref.store %n, %out[] : memref<f32>
  }
  memref.dealloc %nested : memref<f32>
  %passed = memref.alloc() : memref<f32>
  memref.store %x, %passed[] : memref<f32>
  call @take(%passed) : (memref<f32>) -> ()
  %two = memref.alloc() : memref<2xf32>
  memref.store %x, %two[%c0] : memref<2xf32>
  %t = memref.load %two[%c0] : memref<2xf32>
  memref.store %t, %out[] : memref<f32>
  return
}

// -----

// A scan's step: the loaded value feeds a second buffer that is copied into
// one element of the output. The copy becomes a store of the value, and the
// second buffer goes too, after the first one's ops were erased.
// CHECK-LABEL: func.func @copied_out
// CHECK-SAME: (%[[X:.+]]: f32, %[[OUT:.+]]: memref<8xf32>, %[[I:.+]]: index)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: %[[VIEW:.+]] = memref.subview %[[OUT]][%[[I]]] [1] [1]
// CHECK: memref.store %[[X]], %[[VIEW]][%{{.+}}] : memref<1xf32, strided<[1], offset: ?>>
// CHECK-NEXT: return
func.func @copied_out(%x: f32, %out: memref<8xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<f32>
  memref.store %x, %a[] : memref<f32>
  %b = memref.alloc() : memref<1xf32>
  %x1 = memref.load %a[] : memref<f32>
  memref.store %x1, %b[%c0] : memref<1xf32>
  memref.dealloc %a : memref<f32>
  %view = memref.subview %out[%i] [1] [1] : memref<8xf32> to memref<1xf32, strided<[1], offset: ?>>
  memref.copy %b, %view : memref<1xf32> to memref<1xf32, strided<[1], offset: ?>>
  memref.dealloc %b : memref<1xf32>
  return
}

// -----

// Copied into, the buffer stays.
// CHECK-LABEL: func.func @copied_into
// CHECK: memref.alloc
// CHECK: memref.copy %{{.+}}, %[[B:.+]] :
// CHECK: memref.load %[[B]]
func.func @copied_into(%in: memref<1xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %b = memref.alloc() : memref<1xf32>
  memref.copy %in, %b : memref<1xf32> to memref<1xf32>
  %v = memref.load %b[%c0] : memref<1xf32>
  memref.dealloc %b : memref<1xf32>
  return %v : f32
}
