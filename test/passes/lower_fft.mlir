// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-fft)' | FileCheck %s

// RFFT widens f32 to f64, contracts against 4x3 cosine and sine matrices and
// rounds once at the end.
// CHECK-LABEL: func @rfft_f32
func.func @rfft_f32(%x: tensor<2x4xf32>) -> tensor<2x3xcomplex<f32>> {
  // CHECK: %[[X:.+]] = stablehlo.convert %arg0 : (tensor<2x4xf32>) -> tensor<2x4xf64>
  // CHECK: %[[COS:.+]] = stablehlo.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 1.000000e+00], [1.000000e+00, 0.000000e+00, -1.000000e+00], {{.*}}> : tensor<4x3xf64>
  // CHECK: %[[SIN:.+]] = stablehlo.constant {{.*}} : tensor<4x3xf64>
  // CHECK: %[[RE:.+]] = stablehlo.dot_general %[[X]], %[[COS]], contracting_dims = [1] x [0] : (tensor<2x4xf64>, tensor<4x3xf64>) -> tensor<2x3xf64>
  // CHECK: %[[IM:.+]] = stablehlo.dot_general %[[X]], %[[SIN]], contracting_dims = [1] x [0]
  // CHECK: %[[RE32:.+]] = stablehlo.convert %[[RE]] : (tensor<2x3xf64>) -> tensor<2x3xf32>
  // CHECK: %[[IM32:.+]] = stablehlo.convert %[[IM]] : (tensor<2x3xf64>) -> tensor<2x3xf32>
  // CHECK: %[[Y:.+]] = stablehlo.complex %[[RE32]], %[[IM32]] : tensor<2x3xcomplex<f32>>
  // CHECK: return %[[Y]]
  // CHECK-NOT: stablehlo.fft
  %0 = stablehlo.fft %x, type = RFFT, length = [4] : (tensor<2x4xf32>) -> tensor<2x3xcomplex<f32>>
  return %0 : tensor<2x3xcomplex<f32>>
}

// -----

// A complex FFT over two axes: four real contractions per axis; the outer
// axis is transposed back into place.
// CHECK-LABEL: func @fft_2d_c128
func.func @fft_2d_c128(%x: tensor<3x2xcomplex<f64>>) -> tensor<3x2xcomplex<f64>> {
  // CHECK: %[[RE:.+]] = stablehlo.real %arg0 : (tensor<3x2xcomplex<f64>>) -> tensor<3x2xf64>
  // CHECK: %[[IM:.+]] = stablehlo.imag %arg0 : (tensor<3x2xcomplex<f64>>) -> tensor<3x2xf64>
  // CHECK-NOT: stablehlo.convert
  // CHECK-COUNT-4: stablehlo.dot_general {{.*}} contracting_dims = [1] x [0] : (tensor<3x2xf64>, tensor<2x2xf64>) -> tensor<3x2xf64>
  // CHECK-COUNT-4: stablehlo.dot_general {{.*}} contracting_dims = [0] x [0] : (tensor<3x2xf64>, tensor<3x3xf64>) -> tensor<2x3xf64>
  // CHECK: stablehlo.transpose {{.*}}, dims = [1, 0] : (tensor<2x3xf64>) -> tensor<3x2xf64>
  // CHECK: stablehlo.complex {{.*}} : tensor<3x2xcomplex<f64>>
  %0 = stablehlo.fft %x, type = FFT, length = [3, 2] : (tensor<3x2xcomplex<f64>>) -> tensor<3x2xcomplex<f64>>
  return %0 : tensor<3x2xcomplex<f64>>
}

// -----

// IRFFT takes the 3-element half spectrum to 4 real values: only the real
// part is computed.
// CHECK-LABEL: func @irfft_c64
func.func @irfft_c64(%x: tensor<3xcomplex<f32>>) -> tensor<4xf32> {
  // CHECK: stablehlo.dot_general {{.*}} : (tensor<3xf64>, tensor<3x4xf64>) -> tensor<4xf64>
  // CHECK: stablehlo.dot_general {{.*}} : (tensor<3xf64>, tensor<3x4xf64>) -> tensor<4xf64>
  // CHECK: %[[RE:.+]] = stablehlo.subtract
  // CHECK-NOT: stablehlo.dot_general
  // CHECK: %[[Y:.+]] = stablehlo.convert %[[RE]] : (tensor<4xf64>) -> tensor<4xf32>
  // CHECK: return %[[Y]]
  %0 = stablehlo.fft %x, type = IRFFT, length = [4] : (tensor<3xcomplex<f32>>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// IFFT divides by n: the twiddles are scaled by 1/2.
// CHECK-LABEL: func @ifft_scaled
func.func @ifft_scaled(%x: tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>> {
  // CHECK: stablehlo.constant dense<{{\[\[}}5.000000e-01, 5.000000e-01], [5.000000e-01, -5.000000e-01]]> : tensor<2x2xf64>
  %0 = stablehlo.fft %x, type = IFFT, length = [2] : (tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>>
  return %0 : tensor<2xcomplex<f64>>
}

// -----

// 256 = 16 x 16 is longer than the direct limit: the axis is reshaped, each
// half is a 16-point DFT, with a twiddle multiply in between, and the
// (k1, k2) result is transposed before reshaping back.
// CHECK-LABEL: func @split_cooley_tukey
func.func @split_cooley_tukey(%x: tensor<256xcomplex<f32>>) -> tensor<256xcomplex<f32>> {
  // CHECK: stablehlo.reshape %{{.+}} : (tensor<256xf64>) -> tensor<16x16xf64>
  // CHECK: stablehlo.dot_general {{.*}} contracting_dims = [0] x [0] : (tensor<16x16xf64>, tensor<16x16xf64>) -> tensor<16x16xf64>
  // CHECK: stablehlo.multiply {{.*}} : tensor<16x16xf64>
  // CHECK: stablehlo.dot_general {{.*}} contracting_dims = [1] x [0] : (tensor<16x16xf64>, tensor<16x16xf64>) -> tensor<16x16xf64>
  // CHECK: stablehlo.transpose {{.*}}, dims = [1, 0]
  // CHECK: stablehlo.reshape %{{.+}} : (tensor<16x16xf64>) -> tensor<256xf64>
  // CHECK-NOT: tensor<256x256xf64>
  %0 = stablehlo.fft %x, type = FFT, length = [256] : (tensor<256xcomplex<f32>>) -> tensor<256xcomplex<f32>>
  return %0 : tensor<256xcomplex<f32>>
}

// -----

func.func @dynamic(%x: tensor<?xcomplex<f32>>) -> tensor<?xcomplex<f32>> {
  // expected-error@+1 {{expected static shapes}}
  %0 = stablehlo.fft %x, type = FFT, length = [4] : (tensor<?xcomplex<f32>>) -> tensor<?xcomplex<f32>>
  return %0 : tensor<?xcomplex<f32>>
}
