// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-expand-f64-truncation)' | FileCheck %s

// f64 rounds to f32 to odd, then the single f32 -> f16 rounding is exact.
// CHECK-LABEL: func @f64_to_f16
func.func @f64_to_f16(%arg0: f64) -> f16 {
  // CHECK: %[[NEAREST:.+]] = arith.truncf %arg0 : f64 to f32
  // CHECK: %[[BACK:.+]] = arith.extf %[[NEAREST]] : f32 to f64
  // CHECK: %[[INEXACT:.+]] = arith.cmpf one, %[[BACK]], %arg0 : f64
  // CHECK: %[[AWAY:.+]] = arith.cmpi ugt, %{{.+}}, %{{.+}} : i64
  // CHECK: %[[BITS:.+]] = arith.bitcast %[[NEAREST]] : f32 to i32
  // CHECK: %[[STEP:.+]] = arith.extui %[[AWAY]] : i1 to i32
  // CHECK: %[[TOWARD_ZERO:.+]] = arith.subi %[[BITS]], %[[STEP]] : i32
  // CHECK: %[[ODD:.+]] = arith.ori %[[TOWARD_ZERO]], %{{.+}} : i32
  // CHECK: %[[ROUNDED:.+]] = arith.select %[[INEXACT]], %[[ODD]], %[[BITS]] : i32
  // CHECK: %[[F32:.+]] = arith.bitcast %[[ROUNDED]] : i32 to f32
  // CHECK: %[[F16:.+]] = arith.truncf %[[F32]] : f32 to f16
  // CHECK: return %[[F16]]
  %0 = arith.truncf %arg0 : f64 to f16
  return %0 : f16
}

// -----

// f32 -> bf16 becomes integer code: round to nearest even, quiet NaNs.
// CHECK-LABEL: func @f32_to_bf16
func.func @f32_to_bf16(%arg0: f32) -> bf16 {
  // CHECK: %[[BITS:.+]] = arith.bitcast %arg0 : f32 to i32
  // CHECK: %[[BIAS:.+]] = arith.constant 32767 : i32
  // CHECK: arith.addi %[[BITS]], %[[BIAS]] : i32
  // CHECK: %[[ROUNDED:.+]] = arith.shrui
  // CHECK: %[[NAN:.+]] = arith.ori
  // CHECK: %[[IS_NAN:.+]] = arith.cmpi ugt
  // CHECK: %[[WORD:.+]] = arith.select %[[IS_NAN]], %[[NAN]], %[[ROUNDED]] : i32
  // CHECK: %[[HALF:.+]] = arith.trunci %[[WORD]] : i32 to i16
  // CHECK: %[[BF16:.+]] = arith.bitcast %[[HALF]] : i16 to bf16
  // CHECK: return %[[BF16]]
  // CHECK-NOT: arith.truncf
  %0 = arith.truncf %arg0 : f32 to bf16
  return %0 : bf16
}

// -----

// Vectors keep their shape; constants are splats.
// CHECK-LABEL: func @f64_to_bf16_vector
func.func @f64_to_bf16_vector(%arg0: vector<4xf64>) -> vector<4xbf16> {
  // CHECK: arith.truncf %arg0 : vector<4xf64> to vector<4xf32>
  // CHECK: arith.constant dense<9223372036854775807> : vector<4xi64>
  // CHECK: arith.cmpi ugt, %{{.+}}, %{{.+}} : vector<4xi64>
  // CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<4xi1>, vector<4xi32>
  // CHECK: %[[HALF:.+]] = arith.trunci %{{.+}} : vector<4xi32> to vector<4xi16>
  // CHECK: %[[BF16:.+]] = arith.bitcast %[[HALF]] : vector<4xi16> to vector<4xbf16>
  // CHECK: return %[[BF16]]
  // CHECK-NOT: arith.truncf
  %0 = arith.truncf %arg0 : vector<4xf64> to vector<4xbf16>
  return %0 : vector<4xbf16>
}

// -----

// Truncations that need no runtime function, and other rounding modes, stay.
// CHECK-LABEL: func @untouched
func.func @untouched(%arg0: f64, %arg1: f32) -> (f32, f16, bf16) {
  // CHECK-NEXT: %[[A:.+]] = arith.truncf %arg0 : f64 to f32
  // CHECK-NEXT: %[[B:.+]] = arith.truncf %arg1 : f32 to f16
  // CHECK-NEXT: %[[C:.+]] = arith.truncf %arg0 to_nearest_away : f64 to bf16
  // CHECK-NEXT: return %[[A]], %[[B]], %[[C]]
  %0 = arith.truncf %arg0 : f64 to f32
  %1 = arith.truncf %arg1 : f32 to f16
  %2 = arith.truncf %arg0 to_nearest_away : f64 to bf16
  return %0, %1, %2 : f32, f16, bf16
}
