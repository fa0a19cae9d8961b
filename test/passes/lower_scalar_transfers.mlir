// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-scalar-transfers)' | FileCheck %s

// A 0-d read and write on one element of a strided column: a load and a store.
// CHECK-LABEL: func @strided_column
// CHECK-SAME: (%[[M:.+]]: memref<1xi32, strided<[2], offset: 1>>, %[[OUT:.+]]: memref<1xi32, strided<[2]>>)
func.func @strided_column(%m: memref<1xi32, strided<[2], offset: 1>>, %out: memref<1xi32, strided<[2]>>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i32
  // CHECK: %[[S:.+]] = memref.load %[[M]][%{{.+}}] : memref<1xi32, strided<[2], offset: 1>>
  // CHECK-NEXT: %[[V:.+]] = vector.broadcast %[[S]] : i32 to vector<i32>
  %v = vector.transfer_read %m[%c0], %pad : memref<1xi32, strided<[2], offset: 1>>, vector<i32>
  // CHECK-NEXT: %[[W:.+]] = arith.addi %[[V]], %[[V]]
  %w = arith.addi %v, %v : vector<i32>
  // CHECK-NEXT: %[[E:.+]] = vector.extract %[[W]][] : i32 from vector<i32>
  // CHECK-NEXT: memref.store %[[E]], %[[OUT]][%{{.+}}] : memref<1xi32, strided<[2]>>
  // CHECK-NOT: vector.transfer
  vector.transfer_write %w, %out[%c0] : vector<i32>, memref<1xi32, strided<[2]>>
  return
}

// -----

// Unit innermost strides and vectors of rank 1 are upstream's to lower.
// CHECK-LABEL: func @left_to_upstream
func.func @left_to_upstream(%a: memref<1x1xi32>, %b: memref<4xf32, strided<[2]>>) -> (vector<i32>, vector<4xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i32
  %padf = arith.constant 0.0 : f32
  // CHECK: vector.transfer_read {{.*}} : memref<1x1xi32>, vector<i32>
  %v = vector.transfer_read %a[%c0, %c0], %pad : memref<1x1xi32>, vector<i32>
  // CHECK: vector.transfer_read {{.*}} : memref<4xf32, strided<[2]>>, vector<4xf32>
  %w = vector.transfer_read %b[%c0], %padf {in_bounds = [true]} : memref<4xf32, strided<[2]>>, vector<4xf32>
  return %v, %w : vector<i32>, vector<4xf32>
}
