// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-cholesky)' | FileCheck %s

// One loop over the columns, carrying the factor (initially zero).
// CHECK-LABEL: func @lower_f32
func.func @lower_f32(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  // CHECK: %[[COLS:.+]] = stablehlo.iota dim = 1 : tensor<3x3xi64>
  // CHECK: %[[ZERO:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<3x3xf32>
  // CHECK: %[[L:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (tensor<3x3xf32>)
  // CHECK:   %[[J:.+]] = tensor.from_elements %{{.+}} : tensor<i64>
  // CHECK:   %[[ROW:.+]] = stablehlo.dynamic_slice %[[ACC]], %[[J]], %{{.+}}, sizes = [1, 3]
  // CHECK:   %[[DOT:.+]] = stablehlo.dot_general %[[ACC]], %[[ROW]], contracting_dims = [1] x [1] : (tensor<3x3xf32>, tensor<1x3xf32>) -> tensor<3x1xf32>
  // CHECK:   %[[COL:.+]] = stablehlo.dynamic_slice %arg0, %{{.+}}, %[[J]], sizes = [3, 1]
  // CHECK:   %[[REST:.+]] = stablehlo.subtract %[[COL]], %[[DOT]] : tensor<3x1xf32>
  // CHECK:   stablehlo.sqrt %{{.+}} : tensor<1x1xf32>
  // CHECK:   stablehlo.divide %[[REST]], %{{.+}} : tensor<3x1xf32>
  // CHECK:   stablehlo.compare EQ, %[[COLS]]
  // CHECK:   %[[NEXT:.+]] = stablehlo.select %{{.+}}, %{{.+}}, %[[ACC]] : tensor<3x3xi1>, tensor<3x3xf32>
  // CHECK:   scf.yield %[[NEXT]]
  // CHECK: return %[[L]]
  // CHECK-NOT: stablehlo.cholesky
  %0 = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Upper, complex, batched: the lower factor of the adjoint, adjointed back;
// the pivot's real part is square-rooted.
// CHECK-LABEL: func @upper_complex_batched
func.func @upper_complex_batched(%a: tensor<2x3x3xcomplex<f64>>) -> tensor<2x3x3xcomplex<f64>> {
  // CHECK: stablehlo.transpose %arg0, dims = [0, 2, 1]
  // CHECK: stablehlo.negate
  // CHECK: scf.for
  // CHECK:   stablehlo.dot_general {{.*}}, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x3x3xcomplex<f64>>, tensor<2x1x3xcomplex<f64>>) -> tensor<2x3x1xcomplex<f64>>
  // CHECK:   %[[PIVOT:.+]] = stablehlo.real %{{.+}} : (tensor<2x1x1xcomplex<f64>>) -> tensor<2x1x1xf64>
  // CHECK:   stablehlo.sqrt %[[PIVOT]] : tensor<2x1x1xf64>
  // CHECK: scf.yield
  // CHECK: stablehlo.transpose %{{.+}}, dims = [0, 2, 1]
  // CHECK: stablehlo.negate
  // CHECK: %[[U:.+]] = stablehlo.complex
  // CHECK: return %[[U]]
  %0 = stablehlo.cholesky %a, lower = false : tensor<2x3x3xcomplex<f64>>
  return %0 : tensor<2x3x3xcomplex<f64>>
}

// -----

func.func @dynamic(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{expected static shapes}}
  %0 = stablehlo.cholesky %a, lower = true : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
