// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-pack-entry-arguments)' | FileCheck %s

// @main's buffers come through one pointer to their data pointers; each
// descriptor is rebuilt with constant offset, sizes and row-major strides.
// Other functions keep their signatures.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[P:.+]]: !llvm.ptr)
func.func @main(%a: memref<2x3xf32>, %s: memref<f32>, %out: memref<2x3xf32>) {
  // CHECK: %[[SLOT0:.+]] = llvm.getelementptr %[[P]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  // CHECK: %[[DATA0:.+]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
  // CHECK: %[[D0:.+]] = llvm.mlir.poison : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  // CHECK: llvm.insertvalue %[[DATA0]], %[[D0]][0]
  // CHECK: %[[D1:.+]] = llvm.insertvalue %[[DATA0]], %{{.+}}[1]
  // CHECK: %[[OFFSET:.+]] = llvm.mlir.constant(0 : i64) : i64
  // CHECK: llvm.insertvalue %[[OFFSET]], %[[D1]][2]
  // CHECK: llvm.mlir.constant(2 : i64)
  // CHECK: [3, 0]
  // CHECK: llvm.mlir.constant(3 : i64)
  // CHECK: [4, 0]
  // CHECK: llvm.mlir.constant(3 : i64)
  // CHECK: [3, 1]
  // CHECK: llvm.mlir.constant(1 : i64)
  // CHECK: %[[DESC_A:.+]] = llvm.insertvalue {{.+}}[4, 1]
  // CHECK: %[[A:.+]] = builtin.unrealized_conversion_cast %[[DESC_A]] : {{.+}} to memref<2x3xf32>
  // CHECK: llvm.getelementptr %[[P]][1]
  // CHECK: !llvm.struct<(ptr, ptr, i64)>
  // CHECK: %[[S:.+]] = builtin.unrealized_conversion_cast {{.+}} to memref<f32>
  // CHECK: llvm.getelementptr %[[P]][2]
  // CHECK: %[[OUT:.+]] = builtin.unrealized_conversion_cast {{.+}} to memref<2x3xf32>
  // CHECK: call @helper(%[[A]], %[[S]], %[[OUT]])
  call @helper(%a, %s, %out) : (memref<2x3xf32>, memref<f32>, memref<2x3xf32>) -> ()
  return
}
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (memref<2x3xf32>, memref<f32>, memref<2x3xf32>)
func.func private @helper(memref<2x3xf32>, memref<f32>, memref<2x3xf32>)
