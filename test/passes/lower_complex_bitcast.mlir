// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-complex-bitcast)' | FileCheck %s

// CHECK-LABEL: func @identity
func.func @identity(%x: tensor<2x3xcomplex<f32>>) -> tensor<2x3xcomplex<f32>> {
  // CHECK-NOT: bitcast_convert
  // CHECK: return %arg0
  %0 = stablehlo.bitcast_convert %x : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xcomplex<f32>>
  return %0 : tensor<2x3xcomplex<f32>>
}

// -----

// CHECK-LABEL: func @c128_to_c64
func.func @c128_to_c64(%x: tensor<complex<f64>>) -> tensor<2xcomplex<f32>> {
  // CHECK-DAG: %[[RE:.+]] = stablehlo.real %arg0 : (tensor<complex<f64>>) -> tensor<f64>
  // CHECK-DAG: %[[IM:.+]] = stablehlo.imag %arg0 : (tensor<complex<f64>>) -> tensor<f64>
  // CHECK: %[[PARTS:.+]] = stablehlo.concatenate {{.*}} dim = 0 : (tensor<1xf64>, tensor<1xf64>) -> tensor<2xf64>
  // CHECK: %[[CAST:.+]] = stablehlo.bitcast_convert %[[PARTS]] : (tensor<2xf64>) -> tensor<2x2xf32>
  // CHECK: stablehlo.slice %[[CAST]] [0:2, 0:1]
  // CHECK: stablehlo.slice %[[CAST]] [0:2, 1:2]
  // CHECK: %[[C:.+]] = stablehlo.complex {{.*}} : tensor<2xcomplex<f32>>
  // CHECK: return %[[C]]
  %0 = stablehlo.bitcast_convert %x : (tensor<complex<f64>>) -> tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}

// -----

// CHECK-LABEL: func @c64_to_c128
func.func @c64_to_c128(%x: tensor<3x2xcomplex<f32>>) -> tensor<3xcomplex<f64>> {
  // CHECK: %[[PARTS:.+]] = stablehlo.concatenate {{.*}} dim = 2 : (tensor<3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<3x2x2xf32>
  // CHECK: %[[PAIRS:.+]] = stablehlo.reshape %[[PARTS]] : (tensor<3x2x2xf32>) -> tensor<6x2xf32>
  // CHECK: stablehlo.bitcast_convert %[[PAIRS]] : (tensor<6x2xf32>) -> tensor<6xf64>
  // CHECK: stablehlo.complex {{.*}} : tensor<3xcomplex<f64>>
  %0 = stablehlo.bitcast_convert %x : (tensor<3x2xcomplex<f32>>) -> tensor<3xcomplex<f64>>
  return %0 : tensor<3xcomplex<f64>>
}

// -----

// CHECK-LABEL: func @real_stays
func.func @real_stays(%x: tensor<2xf32>) -> tensor<2xi32> {
  // CHECK-NOT: stablehlo.complex
  // CHECK: stablehlo.bitcast_convert %arg0 : (tensor<2xf32>) -> tensor<2xi32>
  %0 = stablehlo.bitcast_convert %x : (tensor<2xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
