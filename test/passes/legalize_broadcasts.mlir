// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-legalize-broadcasts)' | FileCheck %s

// The cases follow the examples of XLA's broadcasting document (the seed), in
// its order; the ones that are not from the seed come last.

// |1 2 3| + |7 8 9|: a vector onto the rows of a 2x3 matrix, broadcast_dimensions (1).
// CHECK-LABEL: func @seed_vector_onto_2x3_rows
func.func @seed_vector_onto_2x3_rows(%x: tensor<2x3xf32>, %v: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[V:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: %[[R:.+]] = stablehlo.add %arg0, %[[V]] : tensor<2x3xf32>
  // CHECK: return %[[R]]
  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A vector onto the columns of a 2x3 matrix: each element becomes a row, (0).
// CHECK-LABEL: func @seed_vector_onto_2x3_columns
func.func @seed_vector_onto_2x3_columns(%x: tensor<2x3xf32>, %v: tensor<2xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[V:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  // CHECK: stablehlo.add %arg0, %[[V]] : tensor<2x3xf32>
  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// |1 2 3| + 7: a scalar broadcasts to any shape with no dimensions given.
// CHECK-LABEL: func @seed_scalar_onto_matrix
func.func @seed_scalar_onto_matrix(%x: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  // CHECK: %[[S:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  // CHECK: stablehlo.add %arg0, %[[S]] : tensor<2x3xf32>
  %0 = chlo.broadcast_add %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A 3-vector onto a 3x3 matrix with (1): the vector is copied for every row.
// CHECK-LABEL: func @seed_vector_onto_3x3_dims_1
func.func @seed_vector_onto_3x3_dims_1(%x: tensor<3x3xf32>, %v: tensor<3xf32>) -> tensor<3x3xf32> {
  // CHECK: %[[V:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<3x3xf32>
  // CHECK: stablehlo.add %arg0, %[[V]]
  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 1>} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// The same with (0): each element becomes a row, copied for every column.
// CHECK-LABEL: func @seed_vector_onto_3x3_dims_0
func.func @seed_vector_onto_3x3_dims_0(%x: tensor<3x3xf32>, %v: tensor<3xf32>) -> tensor<3x3xf32> {
  // CHECK: %[[V:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<3xf32>) -> tensor<3x3xf32>
  // CHECK: stablehlo.add %arg0, %[[V]]
  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 0>} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// A 3x4 matrix onto a 2x3x4 cube with (1,2).
// CHECK-LABEL: func @seed_matrix_onto_cube
func.func @seed_matrix_onto_cube(%x: tensor<2x3x4xf32>, %m: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: %[[M:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: stablehlo.add %arg0, %[[M]] : tensor<2x3x4xf32>
  %0 = chlo.broadcast_add %x, %m {broadcast_dimensions = array<i64: 1, 2>} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// The formal definition: a vector T onto MxNxPxQ (here 2x3x4x5), matched with
// dimension 3; T equals the size it is matched with.
// CHECK-LABEL: func @seed_vector_onto_mnpq_dim_3
func.func @seed_vector_onto_mnpq_dim_3(%x: tensor<2x3x4x5xf32>, %t: tensor<5xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[T:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.multiply %arg0, %[[T]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_multiply %x, %t {broadcast_dimensions = array<i64: 3>} : (tensor<2x3x4x5xf32>, tensor<5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// The vector T matched with dimension 2.
// CHECK-LABEL: func @seed_vector_onto_mnpq_dim_2
func.func @seed_vector_onto_mnpq_dim_2(%x: tensor<2x3x4x5xf32>, %t: tensor<4xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[T:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.multiply %arg0, %[[T]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_multiply %x, %t {broadcast_dimensions = array<i64: 2>} : (tensor<2x3x4x5xf32>, tensor<4xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// The vector T matched with dimension 1.
// CHECK-LABEL: func @seed_vector_onto_mnpq_dim_1
func.func @seed_vector_onto_mnpq_dim_1(%x: tensor<2x3x4x5xf32>, %t: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[T:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.multiply %arg0, %[[T]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_multiply %x, %t {broadcast_dimensions = array<i64: 1>} : (tensor<2x3x4x5xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// The vector T matched with dimension 0.
// CHECK-LABEL: func @seed_vector_onto_mnpq_dim_0
func.func @seed_vector_onto_mnpq_dim_0(%x: tensor<2x3x4x5xf32>, %t: tensor<2xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[T:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<2xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.multiply %arg0, %[[T]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_multiply %x, %t {broadcast_dimensions = array<i64: 0>} : (tensor<2x3x4x5xf32>, tensor<2xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// A vector T whose size is not the one it is matched with: illegal.
func.func @seed_vector_onto_mnpq_size_mismatch(%x: tensor<2x3x4x5xf32>, %t: tensor<4xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error@+1 {{cannot broadcast (2,3,4,5) and (4) with broadcast_dimensions (3): sizes 5 (lhs dimension 3) and 4 (rhs dimension 0) must be equal or 1}}
  %0 = chlo.broadcast_multiply %x, %t {broadcast_dimensions = array<i64: 3>} : (tensor<2x3x4x5xf32>, tensor<4xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// A TxV matrix onto MxNxPxQ with a pair of dimensions: (2,3).
// CHECK-LABEL: func @seed_txv_onto_mnpq_dims_2_3
func.func @seed_txv_onto_mnpq_dims_2_3(%x: tensor<2x3x4x5xf32>, %tv: tensor<4x5xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[TV:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [2, 3] : (tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.add %arg0, %[[TV]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_add %x, %tv {broadcast_dimensions = array<i64: 2, 3>} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// The TxV matrix with (1,2).
// CHECK-LABEL: func @seed_txv_onto_mnpq_dims_1_2
func.func @seed_txv_onto_mnpq_dims_1_2(%x: tensor<2x3x4x5xf32>, %tv: tensor<3x4xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[TV:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.add %arg0, %[[TV]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_add %x, %tv {broadcast_dimensions = array<i64: 1, 2>} : (tensor<2x3x4x5xf32>, tensor<3x4xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// The TxV matrix with (0,3).
// CHECK-LABEL: func @seed_txv_onto_mnpq_dims_0_3
func.func @seed_txv_onto_mnpq_dims_0_3(%x: tensor<2x3x4x5xf32>, %tv: tensor<2x5xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK: %[[TV:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0, 3] : (tensor<2x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: stablehlo.add %arg0, %[[TV]] : tensor<2x3x4x5xf32>
  %0 = chlo.broadcast_add %x, %tv {broadcast_dimensions = array<i64: 0, 3>} : (tensor<2x3x4x5xf32>, tensor<2x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// Matching V to N and T to P is illegal: the tuple must be strictly increasing.
func.func @seed_txv_v_to_n_and_t_to_p(%x: tensor<2x3x4x5xf32>, %tv: tensor<4x3xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error@+1 {{cannot broadcast (2,3,4,5) and (4,3) with broadcast_dimensions (2,1): broadcast_dimensions must be strictly increasing, but rhs dimension 1 maps to 1 after dimension 0 maps to 2}}
  %0 = chlo.broadcast_add %x, %tv {broadcast_dimensions = array<i64: 2, 1>} : (tensor<2x3x4x5xf32>, tensor<4x3xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// Matching both T and V to the same dimension is illegal too.
func.func @seed_txv_repeated_dimension(%x: tensor<2x3x4x5xf32>, %tv: tensor<4x4xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error@+1 {{broadcast_dimensions must be strictly increasing, but rhs dimension 1 maps to 2 after dimension 0 maps to 2}}
  %0 = chlo.broadcast_add %x, %tv {broadcast_dimensions = array<i64: 2, 2>} : (tensor<2x3x4x5xf32>, tensor<4x4xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// A TxV matrix whose sizes differ from the matched ones: illegal.
func.func @seed_txv_size_mismatch(%x: tensor<2x3x4x5xf32>, %tv: tensor<3x5xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error@+1 {{cannot broadcast (2,3,4,5) and (3,5) with broadcast_dimensions (2,3): sizes 4 (lhs dimension 2) and 3 (rhs dimension 0) must be equal or 1}}
  %0 = chlo.broadcast_add %x, %tv {broadcast_dimensions = array<i64: 2, 3>} : (tensor<2x3x4x5xf32>, tensor<3x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// Degenerate dimensions: (2,1) and (2,3) broadcast to (2,3); the operand that
// already has the result's shape is used as it is.
// CHECK-LABEL: func @seed_degenerate_2x1_2x3
func.func @seed_degenerate_2x1_2x3(%a: tensor<2x1xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[A:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-NOT: broadcast_in_dim
  // CHECK: stablehlo.add %[[A]], %arg1 : tensor<2x3xf32>
  %0 = chlo.broadcast_add %a, %b : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// (1,2,5) and (7,2,5) broadcast to (7,2,5).
// CHECK-LABEL: func @seed_degenerate_1x2x5_7x2x5
func.func @seed_degenerate_1x2x5_7x2x5(%a: tensor<1x2x5xf32>, %b: tensor<7x2x5xf32>) -> tensor<7x2x5xf32> {
  // CHECK: %[[A:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2] : (tensor<1x2x5xf32>) -> tensor<7x2x5xf32>
  // CHECK: stablehlo.add %[[A]], %arg1 : tensor<7x2x5xf32>
  %0 = chlo.broadcast_add %a, %b : (tensor<1x2x5xf32>, tensor<7x2x5xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// (7,2,5) and (7,1,5) broadcast to (7,2,5).
// CHECK-LABEL: func @seed_degenerate_7x2x5_7x1x5
func.func @seed_degenerate_7x2x5_7x1x5(%a: tensor<7x2x5xf32>, %b: tensor<7x1x5xf32>) -> tensor<7x2x5xf32> {
  // CHECK: %[[B:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0, 1, 2] : (tensor<7x1x5xf32>) -> tensor<7x2x5xf32>
  // CHECK: stablehlo.add %arg0, %[[B]] : tensor<7x2x5xf32>
  %0 = chlo.broadcast_add %a, %b : (tensor<7x2x5xf32>, tensor<7x1x5xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// (7,2,5) and (7,2,6) are incompatible.
func.func @seed_degenerate_incompatible(%a: tensor<7x2x5xf32>, %b: tensor<7x2x6xf32>) -> tensor<7x2x6xf32> {
  // expected-error@+1 {{cannot broadcast (7,2,5) and (7,2,6): sizes 5 (lhs dimension 2) and 6 (rhs dimension 2) must be equal or 1}}
  %0 = chlo.broadcast_add %a, %b : (tensor<7x2x5xf32>, tensor<7x2x6xf32>) -> tensor<7x2x6xf32>
  return %0 : tensor<7x2x6xf32>
}

// -----

// The "outer operation": (2,1) and (1,3) broadcast to (2,3); both operands expand.
// CHECK-LABEL: func @seed_degenerate_outer
func.func @seed_degenerate_outer(%a: tensor<2x1xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[A:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK: %[[B:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<2x3xf32>
  // CHECK: stablehlo.multiply %[[A]], %[[B]] : tensor<2x3xf32>
  %0 = chlo.broadcast_multiply %a, %b : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Both forms at once: |1 2 3 4| + [5 6] with (0) gives a 4x2 matrix.
// CHECK-LABEL: func @seed_combined_vector_and_1x2
func.func @seed_combined_vector_and_1x2(%v: tensor<4xf32>, %m: tensor<1x2xf32>) -> tensor<4x2xf32> {
  // CHECK: %[[V:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<4xf32>) -> tensor<4x2xf32>
  // CHECK: %[[M:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<4x2xf32>
  // CHECK: stablehlo.add %[[V]], %[[M]] : tensor<4x2xf32>
  %0 = chlo.broadcast_add %v, %m {broadcast_dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<1x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// A 1x2 matrix with (1,2) plus a 4x3x1 array gives 4x3x2.
// CHECK-LABEL: func @seed_combined_1x2_and_4x3x1
func.func @seed_combined_1x2_and_4x3x1(%m: tensor<1x2xf32>, %x: tensor<4x3x1xf32>) -> tensor<4x3x2xf32> {
  // CHECK: %[[M:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<1x2xf32>) -> tensor<4x3x2xf32>
  // CHECK: %[[X:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0, 1, 2] : (tensor<4x3x1xf32>) -> tensor<4x3x2xf32>
  // CHECK: stablehlo.add %[[M]], %[[X]] : tensor<4x3x2xf32>
  %0 = chlo.broadcast_add %m, %x {broadcast_dimensions = array<i64: 1, 2>} : (tensor<1x2xf32>, tensor<4x3x1xf32>) -> tensor<4x3x2xf32>
  return %0 : tensor<4x3x2xf32>
}

// -----

// Not from the seed. Without broadcast_dimensions a lower-rank operand is
// aligned to the trailing dimensions (CHLO's and numpy's default).
// CHECK-LABEL: func @default_trailing_alignment
func.func @default_trailing_alignment(%x: tensor<2x3x4xf32>, %m: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %0 = chlo.broadcast_add %x, %m : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Operands that already agree need nothing.
// CHECK-LABEL: func @same_shape
func.func @same_shape(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // CHECK-NEXT: %[[R:.+]] = stablehlo.remainder %arg0, %arg1 : tensor<2x3xi32>
  // CHECK-NEXT: return %[[R]]
  %0 = chlo.broadcast_remainder %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// Comparison (with its type), select (a scalar predicate stays scalar),
// complex, shift and logical ops; one broadcast per value and target is reused.
// CHECK-LABEL: func @every_kind
func.func @every_kind(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<2x3xi32>, %j: tensor<i32>, %p: tensor<i1>, %q: tensor<2x1xi1>) -> (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xcomplex<f32>>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x1xi1>, tensor<2x3xf32>) {
  // CHECK: %[[B:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: %[[C:.+]] = stablehlo.compare GE, %arg0, %[[B]], TOTALORDER : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: %[[S1:.+]] = stablehlo.select %arg4, %arg0, %[[B]] : tensor<i1>, tensor<2x3xf32>
  // CHECK: %[[Q:.+]] = stablehlo.broadcast_in_dim %arg5, dims = [0, 1] : (tensor<2x1xi1>) -> tensor<2x3xi1>
  // CHECK: %[[S2:.+]] = stablehlo.select %[[Q]], %arg0, %[[B]] : tensor<2x3xi1>, tensor<2x3xf32>
  // CHECK: %[[Z:.+]] = stablehlo.complex %arg0, %[[B]] : tensor<2x3xcomplex<f32>>
  // CHECK: %[[J:.+]] = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<i32>) -> tensor<2x3xi32>
  // CHECK: %[[SH:.+]] = stablehlo.shift_right_logical %arg2, %[[J]] : tensor<2x3xi32>
  // CHECK: %[[X:.+]] = stablehlo.xor %arg2, %[[J]] : tensor<2x3xi32>
  // CHECK: %[[P:.+]] = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<i1>) -> tensor<2x1xi1>
  // CHECK: %[[AND:.+]] = stablehlo.and %arg5, %[[P]] : tensor<2x1xi1>
  // CHECK: %[[POW:.+]] = stablehlo.power %[[B]], %arg0 : tensor<2x3xf32>
  // CHECK: return %[[C]], %[[S1]], %[[S2]], %[[Z]], %[[SH]], %[[X]], %[[AND]], %[[POW]]
  %0 = chlo.broadcast_compare %a, %b {comparison_direction = #chlo<comparison_direction GE>, compare_type = #chlo<comparison_type TOTALORDER>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = chlo.broadcast_select %p, %a, %b : (tensor<i1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = chlo.broadcast_select %q, %a, %b : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = chlo.broadcast_complex %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xcomplex<f32>>
  %4 = chlo.broadcast_shift_right_logical %i, %j : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  %5 = chlo.broadcast_xor %i, %j : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  %6 = chlo.broadcast_and %q, %p : (tensor<2x1xi1>, tensor<i1>) -> tensor<2x1xi1>
  %7 = chlo.broadcast_power %b, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xcomplex<f32>>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x1xi1>, tensor<2x3xf32>
}

// -----

// next_after, polygamma and zeta have no StableHLO op: broadcast, then expanded.
// CHECK-LABEL: func @zeta_is_expanded
func.func @zeta_is_expanded(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NOT: chlo.
  // CHECK: return
  %0 = chlo.broadcast_zeta %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Dynamic: the unknown size is the only one feeding dimension 0, so it is the
// result's and nothing needs checking; the vector's dimension is non-expanding.
// CHECK-LABEL: func @dynamic_rows
func.func @dynamic_rows(%x: tensor<?x3xf32>, %v: tensor<3xf32>) -> tensor<?x3xf32> {
  // CHECK: %[[N:.+]] = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
  // CHECK: %[[N1:.+]] = stablehlo.reshape %[[N]] : (tensor<i32>) -> tensor<1xi32>
  // CHECK: %[[C3:.+]] = stablehlo.constant dense<3> : tensor<1xi32>
  // CHECK: %[[SHAPE:.+]] = stablehlo.concatenate %[[N1]], %[[C3]], dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  // CHECK: %[[V:.+]] = stablehlo.dynamic_broadcast_in_dim %arg1, %[[SHAPE]], dims = [1] {known_nonexpanding_dimensions = array<i64: 0>} : (tensor<3xf32>, tensor<2xi32>) -> tensor<?x3xf32>
  // CHECK-NOT: shape_assertion
  // CHECK: stablehlo.add %arg0, %[[V]] : tensor<?x3xf32>
  %0 = chlo.broadcast_add %x, %v : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Dynamic: two unknown sizes feed dimension 0. The result takes the first one
// that is not 1; a run-time assertion checks that the other is 1 or equal.
// The 1 of dimension 1 is known to expand, the 3 known not to.
// CHECK-LABEL: func @dynamic_two_unknown
func.func @dynamic_two_unknown(%a: tensor<?x3xf32>, %b: tensor<?x1xf32>) -> tensor<?x3xf32> {
  // CHECK: %[[A0:.+]] = stablehlo.get_dimension_size %arg0, dim = 0
  // CHECK: %[[ONE:.+]] = stablehlo.constant dense<1> : tensor<i32>
  // CHECK: %[[A0_IS_1:.+]] = stablehlo.compare EQ, %[[A0]], %[[ONE]], SIGNED
  // CHECK: %[[B0:.+]] = stablehlo.get_dimension_size %arg1, dim = 0
  // CHECK: %[[N:.+]] = stablehlo.select %[[A0_IS_1]], %[[B0]], %[[A0]] : tensor<i1>, tensor<i32>
  // CHECK: %[[B0_IS_1:.+]] = stablehlo.compare EQ, %[[B0]], %[[ONE]], SIGNED
  // CHECK: %[[B0_IS_N:.+]] = stablehlo.compare EQ, %[[B0]], %[[N]], SIGNED
  // CHECK: %[[OK:.+]] = stablehlo.or %[[B0_IS_1]], %[[B0_IS_N]] : tensor<i1>
  // CHECK: stablehlo.custom_call @shape_assertion(%[[OK]], %[[A0]], %[[B0]]) {api_version = 2 : i32, error_message = "cannot broadcast (?,3) and (?,1): sizes {0} (lhs dimension 0) and {1} (rhs dimension 0) must be equal or 1", has_side_effect = true}
  // CHECK: %[[SHAPE:.+]] = stablehlo.concatenate
  // CHECK: %[[A:.+]] = stablehlo.dynamic_broadcast_in_dim %arg0, %[[SHAPE]], dims = [0, 1] {known_nonexpanding_dimensions = array<i64: 1>}
  // CHECK: %[[B:.+]] = stablehlo.dynamic_broadcast_in_dim %arg1, %[[SHAPE]], dims = [0, 1] {known_expanding_dimensions = array<i64: 1>}
  // CHECK: stablehlo.add %[[A]], %[[B]] : tensor<?x3xf32>
  %0 = chlo.broadcast_add %a, %b : (tensor<?x3xf32>, tensor<?x1xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Dynamic meets static: the static 4 decides, the unknown size must be 1 or 4.
// CHECK-LABEL: func @dynamic_against_static
func.func @dynamic_against_static(%a: tensor<?xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: %[[A0:.+]] = stablehlo.get_dimension_size %arg0, dim = 0
  // CHECK: stablehlo.custom_call @shape_assertion({{.*}}, %[[A0]]) {{.*}}error_message = "cannot broadcast (?) and (2,4): sizes {0} (lhs dimension 0) and 4 (rhs dimension 1) must be equal or 1"
  // CHECK: %[[SHAPE:.+]] = stablehlo.constant dense<[2, 4]> : tensor<2xi32>
  // CHECK: %[[A:.+]] = stablehlo.dynamic_broadcast_in_dim %arg0, %[[SHAPE]], dims = [1] : (tensor<?xf32>, tensor<2xi32>) -> tensor<2x4xf32>
  // CHECK: stablehlo.add %[[A]], %arg1 : tensor<2x4xf32>
  %0 = chlo.broadcast_add %a, %b : (tensor<?xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @dims_out_of_range(%x: tensor<2x3xf32>, %v: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{cannot broadcast (2,3) and (3) with broadcast_dimensions (2): rhs dimension 0 maps to dimension 2, out of range for rank 2}}
  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 2>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @dims_wrong_length(%x: tensor<2x3xf32>, %v: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{broadcast_dimensions must have one entry per dimension of the lower-rank rhs (3), not 2}}
  %0 = chlo.broadcast_add %x, %v {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @same_rank_permuted_dims(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{operands of the same rank need no broadcast_dimensions or the identity (0,1)}}
  %0 = chlo.broadcast_add %a, %b {broadcast_dimensions = array<i64: 1, 0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @unranked(%a: tensor<*xf32>, %b: tensor<2xf32>) -> tensor<*xf32> {
  // expected-error@+1 {{expected ranked tensor operands, got tensor<*xf32>}}
  %0 = chlo.broadcast_add %a, %b : (tensor<*xf32>, tensor<2xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
