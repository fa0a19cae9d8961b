// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-complex-cbrt)' | FileCheck %s

// CHECK-LABEL: func @complex_cbrt
func.func @complex_cbrt(%z: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  // CHECK-DAG: %[[THREE:.+]] = stablehlo.constant dense<3.000000e+00> : tensor<4xf32>
  // CHECK-DAG: %[[ABS:.+]] = stablehlo.abs %arg0 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  // CHECK-DAG: %[[R:.+]] = stablehlo.cbrt %[[ABS]] : tensor<4xf32>
  // CHECK-DAG: %[[ANGLE:.+]] = stablehlo.atan2
  // CHECK: %[[THIRD:.+]] = stablehlo.divide %[[ANGLE]], %[[THREE]]
  // CHECK: stablehlo.cosine %[[THIRD]]
  // CHECK: stablehlo.sine %[[THIRD]]
  // CHECK: %[[ROOT:.+]] = stablehlo.complex
  // CHECK: return %[[ROOT]]
  %0 = stablehlo.cbrt %z : tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}

// -----

// CHECK-LABEL: func @real_cbrt_stays
func.func @real_cbrt_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: stablehlo.cbrt %arg0 : tensor<4xf32>
  // CHECK-NOT: atan2
  %0 = stablehlo.cbrt %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
