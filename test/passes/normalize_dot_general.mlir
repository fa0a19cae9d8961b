// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-normalize-dot-general)' | FileCheck %s

// CHECK-LABEL: func @f16_accumulates_in_f32
func.func @f16_accumulates_in_f32(%a: tensor<4x3xf16>, %b: tensor<3x6xf16>) -> tensor<4x6xf16> {
  // CHECK-DAG: %[[A:.+]] = stablehlo.convert %arg0 : (tensor<4x3xf16>) -> tensor<4x3xf32>
  // CHECK-DAG: %[[B:.+]] = stablehlo.convert %arg1 : (tensor<3x6xf16>) -> tensor<3x6xf32>
  // CHECK: %[[DOT:.+]] = stablehlo.dot_general %[[A]], %[[B]], contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  // CHECK: %[[R:.+]] = stablehlo.convert %[[DOT]] : (tensor<4x6xf32>) -> tensor<4x6xf16>
  // CHECK: return %[[R]]
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xf16>, tensor<3x6xf16>) -> tensor<4x6xf16>
  return %0 : tensor<4x6xf16>
}

// -----

// CHECK-LABEL: func @algorithm_dropped
func.func @algorithm_dropped(%a: tensor<2x2xi64>, %b: tensor<2x2xi64>) -> tensor<2x2xi64> {
  // CHECK: stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  // CHECK-NOT: algorithm
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT],
    algorithm = <lhs_precision_type = tf32, rhs_precision_type = tf32, accumulation_type = f32,
                 lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1,
                 allow_imprecise_accumulation = false> : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func @f32_stays
func.func @f32_stays(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // CHECK-NOT: stablehlo.convert
  // CHECK: stablehlo.dot_general %arg0, %arg1
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A legacy dot becomes a dot_general, widened like the others.
// CHECK-LABEL: func @legacy_dot
func.func @legacy_dot(%a: tensor<3xbf16>, %b: tensor<3x5xbf16>) -> tensor<5xbf16> {
  // CHECK-NOT: stablehlo.dot %
  // CHECK: %[[D:.+]] = stablehlo.dot_general %{{.+}}, %{{.+}}, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  // CHECK: stablehlo.convert %[[D]] : (tensor<5xf32>) -> tensor<5xbf16>
  %0 = stablehlo.dot %a, %b, precision = [DEFAULT, DEFAULT] : (tensor<3xbf16>, tensor<3x5xbf16>) -> tensor<5xbf16>
  return %0 : tensor<5xbf16>
}
