// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-sort)' | FileCheck %s

// The comparator runs inline on 0-d tensors as comparator(right, left).
// CHECK-LABEL: func @sort_1d
func.func @sort_1d(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: %[[ROWS:.+]] = stablehlo.reshape %arg0 : (tensor<8xf32>) -> tensor<1x8xf32>
  // CHECK: %[[PERM:.+]] = tensor.empty() : tensor<16xindex>
  // CHECK: scf.for %[[ROW:[a-z0-9_]+]] = {{.*}} -> (tensor<1x8xf32>)
  // CHECK: scf.if
  // CHECK: %[[LEFT:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<16xindex>
  // CHECK: %[[RIGHT:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<16xindex>
  // CHECK: %[[R:.+]] = tensor.extract %[[ROWS]][%[[ROW]], %[[RIGHT]]] : tensor<1x8xf32>
  // CHECK: %[[RT:.+]] = tensor.from_elements %[[R]] : tensor<f32>
  // CHECK: %[[L:.+]] = tensor.extract %[[ROWS]][%[[ROW]], %[[LEFT]]] : tensor<1x8xf32>
  // CHECK: %[[LT:.+]] = tensor.from_elements %[[L]] : tensor<f32>
  // CHECK: %[[LESS:.+]] = stablehlo.compare LT, %[[RT]], %[[LT]]
  // CHECK: tensor.extract %[[LESS]][] : tensor<i1>
  // CHECK: %[[OUT:.+]] = stablehlo.reshape %{{.+}} : (tensor<1x8xf32>) -> tensor<8xf32>
  // CHECK: return %[[OUT]]
  // CHECK-NOT: stablehlo.sort
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Unsigned operands are sorted as signless and bitcast back; dimension 0
// becomes the last one by a transpose.
// CHECK-LABEL: func @sort_unsigned_dim0
func.func @sort_unsigned_dim0(%arg0: tensor<2x3xui32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xui32>, tensor<2x3xf32>) {
  // CHECK: %[[S:.+]] = stablehlo.bitcast_convert %arg0 : (tensor<2x3xui32>) -> tensor<2x3xi32>
  // CHECK: stablehlo.transpose %[[S]], dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
  // CHECK: stablehlo.transpose %arg1, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  // CHECK: %[[A:.+]] = stablehlo.bitcast_convert %{{.+}} : (tensor<i32>) -> tensor<ui32>
  // CHECK: %[[B:.+]] = stablehlo.bitcast_convert %{{.+}} : (tensor<i32>) -> tensor<ui32>
  // CHECK: stablehlo.compare LT, %[[A]], %[[B]] : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  // CHECK: %[[T0:.+]] = stablehlo.transpose %{{.+}}, dims = [1, 0] : (tensor<3x2xi32>) -> tensor<2x3xi32>
  // CHECK: %[[U0:.+]] = stablehlo.bitcast_convert %[[T0]] : (tensor<2x3xi32>) -> tensor<2x3xui32>
  // CHECK: %[[T1:.+]] = stablehlo.transpose %{{.+}}, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  // CHECK: return %[[U0]], %[[T1]]
  %0:2 = "stablehlo.sort"(%arg0, %arg1) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<ui32>, %b: tensor<ui32>, %c: tensor<f32>, %d: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<2x3xui32>, tensor<2x3xf32>) -> (tensor<2x3xui32>, tensor<2x3xf32>)
  return %0#0, %0#1 : tensor<2x3xui32>, tensor<2x3xf32>
}

// -----

// A sorted dimension of size 1 leaves nothing to reorder.
// CHECK-LABEL: func @sort_size_one
func.func @sort_size_one(%arg0: tensor<4x1xi32>) -> tensor<4x1xi32> {
  // CHECK-NEXT: return %arg0 : tensor<4x1xi32>
  %0 = "stablehlo.sort"(%arg0) <{dimension = -1 : i64}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<4x1xi32>) -> tensor<4x1xi32>
  return %0 : tensor<4x1xi32>
}

// -----

// Only the first 3 of 64 are read (jax's top_k): a sorted buffer of 3 per row,
// each element compared from the buffer's end up (comparator(new, held)).
// CHECK-LABEL: func @first_three
func.func @first_three(%arg0: tensor<2x64xf32>, %arg1: tensor<2x64xi32>) -> (tensor<2x3xf32>, tensor<2x2xi32>) {
  // CHECK: %[[BUF:.+]] = tensor.empty() : tensor<2x3xf32>
  // CHECK: scf.for %[[ROW:[a-z0-9_]+]] = {{.*}} -> (tensor<2x3xf32>, tensor<2x3xi32>)
  // CHECK: scf.for %[[J:[a-z0-9_]+]] = {{.*}} -> (index, tensor<2x3xf32>, tensor<2x3xi32>)
  // CHECK: scf.while
  // CHECK: %[[NEW:.+]] = tensor.extract %arg0[%[[ROW]], %[[J]]] : tensor<2x64xf32>
  // CHECK: %[[NEWT:.+]] = tensor.from_elements %[[NEW]] : tensor<f32>
  // CHECK: %[[HELD:.+]] = tensor.extract %{{.+}}[%[[ROW]], %{{.+}}] : tensor<2x3xf32>
  // CHECK: %[[HELDT:.+]] = tensor.from_elements %[[HELD]] : tensor<f32>
  // CHECK: stablehlo.compare GT, %[[NEWT]], %[[HELDT]], TOTALORDER
  // CHECK: scf.condition
  // CHECK: stablehlo.slice %{{.+}} [0:2, 0:3] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: stablehlo.slice %{{.+}} [0:2, 0:2] : (tensor<2x3xi32>) -> tensor<2x2xi32>
  // CHECK-NOT: tensor<128xindex>
  %0:2 = "stablehlo.sort"(%arg0, %arg1) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %gt = stablehlo.compare GT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<2x64xf32>, tensor<2x64xi32>) -> (tensor<2x64xf32>, tensor<2x64xi32>)
  %1 = stablehlo.slice %0#0 [0:2, 0:3] : (tensor<2x64xf32>) -> tensor<2x3xf32>
  %2 = stablehlo.slice %0#1 [0:2, 0:2] : (tensor<2x64xi32>) -> tensor<2x2xi32>
  return %1, %2 : tensor<2x3xf32>, tensor<2x2xi32>
}

// -----

// More than 4 log2(n) elements read: the whole merge sort.
// CHECK-LABEL: func @first_thirty
func.func @first_thirty(%arg0: tensor<64xf32>) -> tensor<30xf32> {
  // CHECK: tensor.empty() : tensor<128xindex>
  // CHECK-NOT: scf.while
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %gt = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<64xf32>) -> tensor<64xf32>
  %1 = stablehlo.slice %0 [0:30] : (tensor<64xf32>) -> tensor<30xf32>
  return %1 : tensor<30xf32>
}

// -----

func.func @sort_dynamic(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{expected statically shaped operands}}
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
