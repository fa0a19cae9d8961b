// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-saturate-float-to-int)' | FileCheck %s

// Below the minimum, at or above the maximum + 1, and NaN, in that order.
// CHECK-LABEL: func @f32_to_i8
func.func @f32_to_i8(%arg0: tensor<4xf32>) -> tensor<4xi8> {
  // CHECK: %[[CONVERT:.+]] = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xi8>
  // CHECK-DAG: %[[LOW_F:.+]] = stablehlo.constant dense<-1.280000e+02> : tensor<4xf32>
  // CHECK-DAG: %[[HIGH_F:.+]] = stablehlo.constant dense<1.280000e+02> : tensor<4xf32>
  // CHECK-DAG: %[[BELOW:.+]] = stablehlo.compare LT, %arg0, %[[LOW_F]], FLOAT
  // CHECK-DAG: %[[ABOVE:.+]] = stablehlo.compare GE, %arg0, %[[HIGH_F]], FLOAT
  // CHECK-DAG: %[[NAN:.+]] = stablehlo.compare NE, %arg0, %arg0, FLOAT
  // CHECK-DAG: %[[MIN:.+]] = stablehlo.constant dense<-128> : tensor<4xi8>
  // CHECK: %[[S1:.+]] = stablehlo.select %[[BELOW]], %[[MIN]], %[[CONVERT]]
  // CHECK: %[[MAX:.+]] = stablehlo.constant dense<127> : tensor<4xi8>
  // CHECK: %[[S2:.+]] = stablehlo.select %[[ABOVE]], %[[MAX]], %[[S1]]
  // CHECK: %[[ZERO:.+]] = stablehlo.constant dense<0> : tensor<4xi8>
  // CHECK: %[[S3:.+]] = stablehlo.select %[[NAN]], %[[ZERO]], %[[S2]]
  // CHECK: %[[SUM:.+]] = stablehlo.add %[[S3]], %[[S3]]
  // CHECK: return %[[SUM]]
  %0 = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xi8>
  %1 = stablehlo.add %0, %0 : tensor<4xi8>
  return %1 : tensor<4xi8>
}

// -----

// f16 cannot hold 2^32: only +inf is above the range.
// CHECK-LABEL: func @f16_to_ui32
func.func @f16_to_ui32(%arg0: tensor<2xf16>) -> tensor<2xui32> {
  // CHECK: stablehlo.compare LT, %arg0, %{{.+}}, FLOAT
  // CHECK: %[[INF:.+]] = stablehlo.constant dense<0x7C00> : tensor<2xf16>
  // CHECK: %[[ABOVE:.+]] = stablehlo.compare EQ, %arg0, %[[INF]], FLOAT
  // CHECK: %[[NAN:.+]] = stablehlo.compare NE, %arg0, %arg0, FLOAT
  // CHECK: %[[MAX:.+]] = stablehlo.constant dense<4294967295> : tensor<2xui32>
  // CHECK: stablehlo.select %[[ABOVE]], %[[MAX]]
  // CHECK: %[[R:.+]] = stablehlo.select %[[NAN]]
  // CHECK-NEXT: return %[[R]]
  %0 = stablehlo.convert %arg0 : (tensor<2xf16>) -> tensor<2xui32>
  return %0 : tensor<2xui32>
}

// -----

// The largest ui64 is written exactly.
// CHECK-LABEL: func @f64_to_ui64
func.func @f64_to_ui64(%arg0: tensor<f64>) -> tensor<ui64> {
  // CHECK: stablehlo.constant dense<1.8446744073709552E+19> : tensor<f64>
  // CHECK: stablehlo.constant dense<18446744073709551615> : tensor<ui64>
  %0 = stablehlo.convert %arg0 : (tensor<f64>) -> tensor<ui64>
  return %0 : tensor<ui64>
}

// -----

// Other converts stay as they are.
// CHECK-LABEL: func @untouched
func.func @untouched(%arg0: tensor<2xf32>, %arg1: tensor<2xi32>) -> (tensor<2xi1>, tensor<2xf32>, tensor<2xi8>) {
  // CHECK-NOT: stablehlo.select
  %0 = stablehlo.convert %arg0 : (tensor<2xf32>) -> tensor<2xi1>
  %1 = stablehlo.convert %arg1 : (tensor<2xi32>) -> tensor<2xf32>
  %2 = stablehlo.convert %arg1 : (tensor<2xi32>) -> tensor<2xi8>
  return %0, %1, %2 : tensor<2xi1>, tensor<2xf32>, tensor<2xi8>
}
