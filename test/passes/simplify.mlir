// RUN: shlo-opt %s --split-input-file --shlo-simplify | FileCheck %s

// CHECK-LABEL: func @broadcast_of_splat
func.func @broadcast_of_splat(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[CST:.+]] = stablehlo.constant dense<2.500000e+00> : tensor<2x3xf32>
  // CHECK-NOT: broadcast_in_dim
  // CHECK: stablehlo.add %arg0, %[[CST]]
  %cst = stablehlo.constant dense<2.5> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @broadcast_of_non_splat_float_stays
func.func @broadcast_of_non_splat_float_stays() -> tensor<2x3xf32> {
  // CHECK: stablehlo.broadcast_in_dim
  %cst = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @shape_arithmetic
func.func @shape_arithmetic(%arg0: tensor<6x?xf32>) -> tensor<2xi32> {
  // CHECK: %[[SHAPE:.+]] = stablehlo.constant dense<[3, -2]> : tensor<2xi32>
  // CHECK-NEXT: return %[[SHAPE]]
  %c2 = stablehlo.constant dense<2> : tensor<i32>
  %c_7 = stablehlo.constant dense<-7> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<6x?xf32>) -> tensor<i32>
  %1 = stablehlo.divide %0, %c2 : tensor<i32>
  %2 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
  // Integer division truncates toward zero: -7 / 3 = -2.
  %3 = stablehlo.divide %c_7, %c3 : tensor<i32>
  %4 = stablehlo.reshape %3 : (tensor<i32>) -> tensor<1xi32>
  %5 = stablehlo.concatenate %2, %4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  return %5 : tensor<2xi32>
}

// -----

// CHECK-LABEL: func @dynamic_dimension_stays
func.func @dynamic_dimension_stays(%arg0: tensor<6x?xf32>) -> tensor<i32> {
  // CHECK: stablehlo.get_dimension_size %arg0, dim = 1
  %0 = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<6x?xf32>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// CHECK-LABEL: func @compare_select
func.func @compare_select() -> tensor<i32> {
  // CHECK: %[[R:.+]] = stablehlo.constant dense<5> : tensor<i32>
  // CHECK-NEXT: return %[[R]]
  %a = stablehlo.constant dense<5> : tensor<i32>
  %b = stablehlo.constant dense<3> : tensor<i32>
  %p = stablehlo.compare GT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %0 = stablehlo.select %p, %a, %b : tensor<i1>, tensor<i32>
  return %0 : tensor<i32>
}

// -----

// CHECK-LABEL: func @division_by_zero_is_not_folded
func.func @division_by_zero_is_not_folded() -> tensor<i32> {
  // CHECK: stablehlo.divide
  %a = stablehlo.constant dense<5> : tensor<i32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.divide %a, %z : tensor<i32>
  return %0 : tensor<i32>
}

// -----

// A broadcast to the operand's own type with identity dims is the operand
// (refined dynamic_broadcast_in_dim ops leave these).
// CHECK-LABEL: func @identity_broadcast
func.func @identity_broadcast(%arg0: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x4xf32>) {
  // CHECK-NEXT: %[[T:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [1, 0]
  // CHECK-NEXT: return %arg0, %[[T]]
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<3x4xf32>
}
