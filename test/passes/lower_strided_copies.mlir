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
