// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-widen-unsigned-quantized)' | FileCheck %s

// Arguments and results keep ui8 storage; inside, the storage is i16 with range [0, 255].
// CHECK-LABEL: func @boundary
// CHECK-SAME: (%[[ARG:.+]]: tensor<4xui8>) -> tensor<4xui8>
func.func @boundary(%arg0: tensor<4x!quant.uniform<u8:f32, 5.000000e-01:10>>) -> tensor<4x!quant.uniform<u8:f32, 5.000000e-01:10>> {
  // CHECK: %[[WIDE:.+]] = stablehlo.convert %[[ARG]] : (tensor<4xui8>) -> tensor<4xi16>
  // CHECK: %[[Q:.+]] = stablehlo.bitcast_convert %[[WIDE]] : (tensor<4xi16>) -> tensor<4x!quant.uniform<i16<0:255>:f32, 5.000000e-01:10>>
  // CHECK: %[[SUM:.+]] = stablehlo.add %[[Q]], %[[Q]] : tensor<4x!quant.uniform<i16<0:255>:f32, 5.000000e-01:10>>
  // CHECK: %[[BITS:.+]] = stablehlo.bitcast_convert %[[SUM]] : (tensor<4x!quant.uniform<i16<0:255>:f32, 5.000000e-01:10>>) -> tensor<4xi16>
  // CHECK: %[[NARROW:.+]] = stablehlo.convert %[[BITS]] : (tensor<4xi16>) -> tensor<4xui8>
  // CHECK: return %[[NARROW]]
  %0 = stablehlo.add %arg0, %arg0 : tensor<4x!quant.uniform<u8:f32, 5.000000e-01:10>>
  return %0 : tensor<4x!quant.uniform<u8:f32, 5.000000e-01:10>>
}

// -----

// Constants hold the same unsigned storage values, widened; signed types stay.
// CHECK-LABEL: func @constants
func.func @constants() -> (tensor<2xf32>, tensor<2xf32>) {
  // CHECK: stablehlo.constant() <{value = dense<[200, 3]> : tensor<2xi16>}> : () -> tensor<2x!quant.uniform<i16<0:255>:f32, 5.000000e-01:10>>
  // CHECK: stablehlo.constant() <{value = dense<255> : tensor<2xi16>}> : () -> tensor<2x!quant.uniform<i16<0:255>:f32:0, {5.000000e-01:10,2.500000e-01:1}>>
  // CHECK: stablehlo.constant() <{value = dense<-1> : tensor<2xi8>}> : () -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01:10>>
  %0 = stablehlo.constant() {value = dense<[-56, 3]> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<u8:f32, 0.5:10>>
  %1 = stablehlo.constant() {value = dense<-1> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<u8:f32:0, {0.5:10, 0.25:1}>>
  %2 = stablehlo.constant() {value = dense<-1> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<i8:f32, 0.5:10>>
  %3 = stablehlo.uniform_dequantize %0 : (tensor<2x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<2xf32>
  %4 = stablehlo.uniform_dequantize %1 : (tensor<2x!quant.uniform<u8:f32:0, {0.5:10, 0.25:1}>>) -> tensor<2xf32>
  %5 = stablehlo.add %3, %4 : tensor<2xf32>
  %6 = stablehlo.uniform_dequantize %2 : (tensor<2x!quant.uniform<i8:f32, 0.5:10>>) -> tensor<2xf32>
  return %5, %6 : tensor<2xf32>, tensor<2xf32>
}

// -----

// Wider types and region block arguments are widened too.
// CHECK-LABEL: func @ranges_and_regions
func.func @ranges_and_regions(%arg0: tensor<3xf32>) -> tensor<f32> {
  // CHECK: stablehlo.uniform_quantize %arg0 : (tensor<3xf32>) -> tensor<3x!quant.uniform<i32<0:65535>:f32, 2.500000e-01>>
  // CHECK: stablehlo.constant() <{value = dense<1> : tensor<i32>}> : () -> tensor<!quant.uniform<i32<0:65535>:f32, 2.500000e-01>>
  // CHECK: stablehlo.reduce{{.*}} -> tensor<!quant.uniform<i32<0:65535>:f32, 2.500000e-01>>
  %q = stablehlo.uniform_quantize %arg0 : (tensor<3xf32>) -> tensor<3x!quant.uniform<u16:f32, 0.25>>
  %z = stablehlo.constant() {value = dense<1> : tensor<i16>} : () -> tensor<!quant.uniform<u16:f32, 0.25>>
  %r = stablehlo.reduce(%q init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<3x!quant.uniform<u16:f32, 0.25>>, tensor<!quant.uniform<u16:f32, 0.25>>) -> tensor<!quant.uniform<u16:f32, 0.25>>
  %d = stablehlo.uniform_dequantize %r : (tensor<!quant.uniform<u16:f32, 0.25>>) -> tensor<f32>
  return %d : tensor<f32>
}
