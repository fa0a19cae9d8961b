// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-strided-copies)' | FileCheck %s

// CHECK-LABEL: func @strided_source
func.func @strided_source(%a: memref<2x3xf32, strided<[8, 1], offset: 4>>, %b: memref<2x3xf32>) {
  // CHECK: linalg.copy {{.*}}ins(%{{.*}} : memref<2x3xf32, strided<[8, 1], offset: 4>>) outs(%{{.*}} : memref<2x3xf32>)
  // CHECK-NOT: memref.copy
  memref.copy %a, %b : memref<2x3xf32, strided<[8, 1], offset: 4>> to memref<2x3xf32>
  return
}

// -----

// CHECK-LABEL: func @strided_target
func.func @strided_target(%a: memref<2x3xi64>, %b: memref<2x3xi64, strided<[3, 2]>>) {
  // CHECK: linalg.copy
  // CHECK-NOT: memref.copy
  memref.copy %a, %b : memref<2x3xi64> to memref<2x3xi64, strided<[3, 2]>>
  return
}

// -----

// CHECK-LABEL: func @contiguous_stays
func.func @contiguous_stays(%a: memref<2x3xf32, strided<[3, 1], offset: 6>>, %b: memref<1x3xf32, strided<[7, 1]>>, %c: memref<1x3xf32>) {
  // CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2x3xf32, strided<[3, 1], offset: 6>> to memref<2x3xf32>
  // CHECK: memref.copy %{{.*}}, %{{.*}} : memref<1x3xf32, strided<[7, 1]>> to memref<1x3xf32>
  // CHECK-NOT: linalg.copy
  %0 = memref.alloc() : memref<2x3xf32>
  memref.copy %a, %0 : memref<2x3xf32, strided<[3, 1], offset: 6>> to memref<2x3xf32>
  memref.copy %b, %c : memref<1x3xf32, strided<[7, 1]>> to memref<1x3xf32>
  return
}

// -----

// A size-1 inner dimension with a stride other than the row-major one is not
// contiguous for finalize-memref-to-llvm (a stride-2 slice of it).
// CHECK-LABEL: func @strided_unit_inner_dimension
func.func @strided_unit_inner_dimension(%a: memref<1x2x1xf32, strided<[2, 1, 2], offset: 2>>, %b: memref<1x2x1xf32>) {
  // CHECK: linalg.copy
  // CHECK-NOT: memref.copy
  memref.copy %a, %b : memref<1x2x1xf32, strided<[2, 1, 2], offset: 2>> to memref<1x2x1xf32>
  return
}

// -----

// Size-1 outer dimensions may have any stride.
// CHECK-LABEL: func @unit_outer_dimension
func.func @unit_outer_dimension(%a: memref<1x2x3xf32, strided<[100, 3, 1], offset: 6>>, %b: memref<1x2x3xf32>) {
  // CHECK: memref.copy
  // CHECK-NOT: linalg.copy
  memref.copy %a, %b : memref<1x2x3xf32, strided<[100, 3, 1], offset: 6>> to memref<1x2x3xf32>
  return
}

// -----

// A tile written in place is copied onto itself: nothing to do.
// CHECK-LABEL: func @self_copy
func.func @self_copy(%a: memref<4x8xf32>) {
  // CHECK-NOT: copy
  %s = memref.subview %a[0, 0] [2, 2] [1, 1] : memref<4x8xf32> to memref<2x2xf32, strided<[8, 1]>>
  memref.copy %s, %s : memref<2x2xf32, strided<[8, 1]>> to memref<2x2xf32, strided<[8, 1]>>
  return
}
