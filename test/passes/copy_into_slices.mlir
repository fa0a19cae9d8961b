// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-copy-into-slices{min-elements=16})' | FileCheck %s

// An argument inserted into a slice: a linalg.generic copy into that slice.
// CHECK-LABEL: func @argument
func.func @argument(%a: tensor<4x5xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[S:.+]] = tensor.extract_slice %arg1[0, 3] [4, 5] [1, 1] : tensor<4x8xf32> to tensor<4x5xf32>
  // CHECK: %[[C:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x5xf32>) outs(%[[S]] : tensor<4x5xf32>)
  // CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
  // CHECK-NEXT: linalg.yield %[[IN]] : f32
  // CHECK: tensor.insert_slice %[[C]] into %arg1[0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
  %r = tensor.insert_slice %a into %d[0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A linalg op's result is written in place already; a small insert is not
// worth a kernel; a strided one is left to bufferization.
// CHECK-LABEL: func @left_alone
func.func @left_alone(%a: tensor<4x5xf32>, %b: tensor<2x2xf32>, %c: tensor<4x2xf32>, %d: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-COUNT-1: linalg.generic
  // CHECK-NOT: linalg.generic
  %e = tensor.empty() : tensor<4x5xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.negf %x : f32
    linalg.yield %m : f32
  } -> tensor<4x5xf32>
  %r0 = tensor.insert_slice %n into %d[0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
  %r1 = tensor.insert_slice %b into %d[0, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<4x8xf32>
  %r2 = tensor.insert_slice %c into %d[0, 0] [4, 2] [1, 2] : tensor<4x2xf32> into tensor<4x8xf32>
  return %r0, %r1, %r2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A pad by a value from outside: a fill of the padded shape and the source
// copied into its slice.
// CHECK-LABEL: func @pad
func.func @pad(%x: tensor<4x5xf32>, %v: f32) -> tensor<6x8xf32> {
  // CHECK: %[[E:.+]] = tensor.empty() : tensor<6x8xf32>
  // CHECK: %[[F:.+]] = linalg.fill ins(%arg1 : f32) outs(%[[E]] : tensor<6x8xf32>)
  // CHECK: %[[S:.+]] = tensor.extract_slice %[[F]][1, 2] [4, 5] [1, 1]
  // CHECK: %[[C:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x5xf32>) outs(%[[S]] : tensor<4x5xf32>)
  // CHECK: tensor.insert_slice %[[C]] into %[[F]][1, 2] [4, 5] [1, 1]
  // CHECK-NOT: tensor.pad
  %p = tensor.pad %x low[1, 2] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %v : f32
  } : tensor<4x5xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}

// -----

// A pad whose value depends on the position stays.
// CHECK-LABEL: func @pad_by_position
func.func @pad_by_position(%x: tensor<4x5xf32>) -> tensor<6x8xf32> {
  // CHECK: tensor.pad
  %p = tensor.pad %x low[1, 2] high[1, 1] {
  ^bb0(%i: index, %j: index):
    %f = arith.index_cast %i : index to i32
    %v = arith.sitofp %f : i32 to f32
    tensor.yield %v : f32
  } : tensor<4x5xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}
