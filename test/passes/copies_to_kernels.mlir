// RUN: shlo-opt %s --shlo-copies-to-kernels | FileCheck %s

// Copies between buffers become linalg.copy (later a kernel); 0-d copies and
// copies from a constant global (host memory) stay memref.copy.
memref.global "private" constant @weights : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[X:.+]]: memref<4x8xf32>, %[[S:.+]]: memref<i32>, %[[OUT:.+]]: memref<4x8xf32>, %[[W:.+]]: memref<4xf32>, %[[T:.+]]: memref<i32>)
func.func @copies(%x: memref<4x8xf32>, %s: memref<i32>, %out: memref<4x8xf32>, %w: memref<4xf32>, %t: memref<i32>) {
  // CHECK: linalg.copy {{.*}}ins(%[[X]] : memref<4x8xf32>) outs(%[[OUT]] : memref<4x8xf32>)
  memref.copy %x, %out : memref<4x8xf32> to memref<4x8xf32>
  // CHECK: memref.copy %[[S]], %[[T]] : memref<i32> to memref<i32>
  memref.copy %s, %t : memref<i32> to memref<i32>
  // CHECK: %[[G:.+]] = memref.get_global @weights
  // CHECK: memref.copy %[[G]], %[[W]]
  %g = memref.get_global @weights : memref<4xf32>
  memref.copy %g, %w : memref<4xf32> to memref<4xf32>
  // A strided view copies as a kernel too.
  // CHECK: %[[V:.+]] = memref.subview %[[X]]
  // CHECK: linalg.copy {{.*}}ins(%[[V]] : memref<2x8xf32, strided<[8, 1], offset: 16>>)
  %v = memref.subview %x[2, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 16>>
  %o = memref.subview %out[0, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  memref.copy %v, %o : memref<2x8xf32, strided<[8, 1], offset: 16>> to memref<2x8xf32, strided<[8, 1]>>
  return
}
