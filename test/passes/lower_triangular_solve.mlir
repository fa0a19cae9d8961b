// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-triangular-solve)' | FileCheck %s

// Left, lower: forward substitution straight on the operands.
// CHECK-LABEL: func @left_lower
func.func @left_lower(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  // CHECK: %[[ROWS:.+]] = stablehlo.iota dim = 0 : tensor<3x2xi64>
  // CHECK: %[[X:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %arg1) -> (tensor<3x2xf32>)
  // CHECK:   %[[K:.+]] = tensor.from_elements %{{.+}} : tensor<i64>
  // CHECK:   %[[ROW:.+]] = stablehlo.dynamic_slice %[[ACC]], %[[K]], %{{.+}}, sizes = [1, 2]
  // CHECK:   %[[DIAG:.+]] = stablehlo.dynamic_slice %arg0, %[[K]], %[[K]], sizes = [1, 1]
  // CHECK:   %[[XK:.+]] = stablehlo.divide %[[ROW]], %{{.+}} : tensor<1x2xf32>
  // CHECK:   %[[COL:.+]] = stablehlo.dynamic_slice %arg0, %{{.+}}, %[[K]], sizes = [3, 1]
  // CHECK:   %[[REST:.+]] = stablehlo.subtract %[[ACC]], %{{.+}} : tensor<3x2xf32>
  // CHECK:   stablehlo.compare GT, %[[ROWS]]
  // CHECK:   %[[NEXT:.+]] = stablehlo.select %{{.+}}, %[[REST]], %{{.+}} : tensor<3x2xi1>, tensor<3x2xf32>
  // CHECK:   scf.yield %[[NEXT]] : tensor<3x2xf32>
  // CHECK: return %[[X]]
  // CHECK-NOT: triangular_solve
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Right, upper, batched: x a = b becomes a^T x^T = b^T, which is lower.
// unit_diagonal: no division.
// CHECK-LABEL: func @right_upper_unit_batched
func.func @right_upper_unit_batched(%a: tensor<2x3x3xf64>, %b: tensor<2x4x3xf64>) -> tensor<2x4x3xf64> {
  // CHECK-DAG: %[[BT:.+]] = stablehlo.transpose %arg1, dims = [0, 2, 1] : (tensor<2x4x3xf64>) -> tensor<2x3x4xf64>
  // CHECK-DAG: %[[AT:.+]] = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<2x3x3xf64>) -> tensor<2x3x3xf64>
  // CHECK-NOT: stablehlo.reverse
  // CHECK: %[[X:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[BT]]) -> (tensor<2x3x4xf64>)
  // CHECK-NOT: stablehlo.divide
  // CHECK: scf.yield
  // CHECK: %[[XT:.+]] = stablehlo.transpose %[[X]], dims = [0, 2, 1] : (tensor<2x3x4xf64>) -> tensor<2x4x3xf64>
  // CHECK: return %[[XT]]
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = true}> : (tensor<2x3x3xf64>, tensor<2x4x3xf64>) -> tensor<2x4x3xf64>
  return %0 : tensor<2x4x3xf64>
}

// -----

// Left, lower, adjoint: conj(a)^T is upper, so both matrix dimensions of it
// and the rows of b are reversed.
// CHECK-LABEL: func @left_lower_adjoint
func.func @left_lower_adjoint(%a: tensor<3x3xcomplex<f32>>, %b: tensor<3x1xcomplex<f32>>) -> tensor<3x1xcomplex<f32>> {
  // CHECK: stablehlo.transpose %arg0, dims = [1, 0]
  // CHECK: stablehlo.negate
  // CHECK: stablehlo.reverse {{.*}}, dims = [0, 1] : tensor<3x3xcomplex<f32>>
  // CHECK: stablehlo.reverse %arg1, dims = [0] : tensor<3x1xcomplex<f32>>
  // CHECK: %[[X:.+]] = scf.for
  // CHECK: %[[R:.+]] = stablehlo.reverse %[[X]], dims = [0] : tensor<3x1xcomplex<f32>>
  // CHECK: return %[[R]]
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<3x3xcomplex<f32>>, tensor<3x1xcomplex<f32>>) -> tensor<3x1xcomplex<f32>>
  return %0 : tensor<3x1xcomplex<f32>>
}

// -----

// bf16 is solved in f32.
// CHECK-LABEL: func @bf16_widened
func.func @bf16_widened(%a: tensor<2x2xbf16>, %b: tensor<2x1xbf16>) -> tensor<2x1xbf16> {
  // CHECK: stablehlo.convert %arg0 : (tensor<2x2xbf16>) -> tensor<2x2xf32>
  // CHECK: scf.for {{.*}} -> (tensor<2x1xf32>)
  // CHECK: %[[Y:.+]] = stablehlo.convert %{{.+}} : (tensor<2x1xf32>) -> tensor<2x1xbf16>
  // CHECK: return %[[Y]]
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x2xbf16>, tensor<2x1xbf16>) -> tensor<2x1xbf16>
  return %0 : tensor<2x1xbf16>
}

// -----

func.func @dynamic(%a: tensor<?x?xf32>, %b: tensor<?x2xf32>) -> tensor<?x2xf32> {
  // expected-error@+1 {{expected static shapes}}
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<?x?xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}
