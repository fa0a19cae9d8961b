// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-expand-small-float-conversions)' | FileCheck %s

// Widening unpacks the storage bits into f32 bits.
// CHECK-LABEL: func @extf_f8
func.func @extf_f8(%arg0: i8) -> f32 {
  // CHECK: %[[WORD:.+]] = arith.extui %arg0 : i8 to i32
  // CHECK: arith.uitofp %{{.+}} : i32 to f32
  // CHECK: %[[BITS:.+]] = arith.ori %{{.+}}, %{{.+}} : i32
  // CHECK: %[[F:.+]] = arith.bitcast %[[BITS]] : i32 to f32
  // CHECK: return %[[F]]
  // CHECK-NOT: unrealized_conversion_cast
  %0 = builtin.unrealized_conversion_cast %arg0 : i8 to f8E4M3FN
  %1 = arith.extf %0 : f8E4M3FN to f32
  return %1 : f32
}

// -----

// Narrowing rounds the f32 bits; the cast back to i8 folds away.
// CHECK-LABEL: func @truncf_f8
func.func @truncf_f8(%arg0: f32) -> i8 {
  // CHECK: %[[WORD:.+]] = arith.bitcast %arg0 : f32 to i32
  // CHECK: arith.shrui %[[WORD]], %{{.+}} : i32
  // CHECK: arith.minsi
  // CHECK: %[[BITS:.+]] = arith.trunci %{{.+}} : i32 to i8
  // CHECK: return %[[BITS]]
  // CHECK-NOT: arith.truncf
  %0 = arith.truncf %arg0 : f32 to f8E5M2
  %1 = builtin.unrealized_conversion_cast %0 : f8E5M2 to i8
  return %1 : i8
}

// -----

// f4 values live in i4.
// CHECK-LABEL: func @truncf_f4
func.func @truncf_f4(%arg0: f32) -> i4 {
  // CHECK: %[[BITS:.+]] = arith.trunci %{{.+}} : i32 to i4
  // CHECK: return %[[BITS]]
  %0 = arith.truncf %arg0 : f32 to f4E2M1FN
  %1 = builtin.unrealized_conversion_cast %0 : f4E2M1FN to i4
  return %1 : i4
}

// -----

// f64 rounds to f32 first (as ml_dtypes does); f16 widens to f32 exactly.
// CHECK-LABEL: func @truncf_wide
func.func @truncf_wide(%arg0: f64, %arg1: f16) -> (i8, i8) {
  // CHECK: %[[F32:.+]] = arith.truncf %arg0 : f64 to f32
  // CHECK: arith.bitcast %[[F32]] : f32 to i32
  // CHECK: %[[H32:.+]] = arith.extf %arg1 : f16 to f32
  // CHECK: arith.bitcast %[[H32]] : f32 to i32
  %0 = arith.truncf %arg0 : f64 to f8E4M3FNUZ
  %1 = builtin.unrealized_conversion_cast %0 : f8E4M3FNUZ to i8
  %2 = arith.truncf %arg1 : f16 to f8E4M3B11FNUZ
  %3 = builtin.unrealized_conversion_cast %2 : f8E4M3B11FNUZ to i8
  return %1, %3 : i8, i8
}

// -----

// Widening to f64 or f16 goes through exact f32 bits.
// CHECK-LABEL: func @extf_wide
func.func @extf_wide(%arg0: i8) -> (f64, f16) {
  // CHECK: %[[F:.+]] = arith.bitcast %{{.+}} : i32 to f32
  // CHECK: arith.extf %[[F]] : f32 to f64
  // CHECK: %[[G:.+]] = arith.bitcast %{{.+}} : i32 to f32
  // CHECK: arith.truncf %[[G]] : f32 to f16
  %0 = builtin.unrealized_conversion_cast %arg0 : i8 to f8E8M0FNU
  %1 = arith.extf %0 : f8E8M0FNU to f64
  %2 = arith.extf %0 : f8E8M0FNU to f16
  return %1, %2 : f64, f16
}

// -----

// Constants become their storage bits, NaN included.
// CHECK-LABEL: func @constants
func.func @constants() -> (i8, i8, i4) {
  // CHECK-DAG: %[[A:.+]] = arith.constant 60 : i8
  // CHECK-DAG: %[[B:.+]] = arith.constant 127 : i8
  // CHECK-DAG: %[[C:.+]] = arith.constant -6 : i4
  // CHECK: return %[[A]], %[[B]], %[[C]]
  %a = arith.constant 1.5 : f8E4M3FN
  %b = arith.constant 0x7F : f8E4M3FN
  %c = arith.constant -1.0 : f4E2M1FN
  %0 = builtin.unrealized_conversion_cast %a : f8E4M3FN to i8
  %1 = builtin.unrealized_conversion_cast %b : f8E4M3FN to i8
  %2 = builtin.unrealized_conversion_cast %c : f4E2M1FN to i4
  return %0, %1, %2 : i8, i8, i4
}

// -----

// Selects and bitcasts work on the bits.
// CHECK-LABEL: func @select_bitcast
func.func @select_bitcast(%arg0: i1, %arg1: i8, %arg2: i8) -> (i8, i8) {
  // CHECK: %[[SEL:.+]] = arith.select %arg0, %arg1, %arg2 : i8
  // CHECK: return %[[SEL]], %arg2
  %0 = builtin.unrealized_conversion_cast %arg1 : i8 to f8E3M4
  %1 = arith.bitcast %arg2 : i8 to f8E3M4
  %2 = arith.select %arg0, %0, %1 : f8E3M4
  %3 = builtin.unrealized_conversion_cast %2 : f8E3M4 to i8
  %4 = arith.bitcast %1 : f8E3M4 to i8
  return %3, %4 : i8, i8
}

// -----

// Math ops compute in f32 and round once.
// CHECK-LABEL: func @math
func.func @math(%arg0: i8) -> i8 {
  // CHECK: %[[X:.+]] = arith.bitcast %{{.+}} : i32 to f32
  // CHECK: %[[R:.+]] = math.sqrt %[[X]] : f32
  // CHECK: arith.bitcast %[[R]] : f32 to i32
  // CHECK: arith.trunci %{{.+}} : i32 to i8
  // CHECK-NOT: f8E4M3
  %0 = builtin.unrealized_conversion_cast %arg0 : i8 to f8E4M3
  %1 = math.sqrt %0 : f8E4M3
  %2 = builtin.unrealized_conversion_cast %1 : f8E4M3 to i8
  return %2 : i8
}

// -----

// Block arguments keep their type; casts bridge them until reconcile-unrealized-casts.
// CHECK-LABEL: func @block_argument
func.func @block_argument(%arg0: i8) -> f32 {
  // CHECK: cf.br ^bb1(%{{.+}} : f8E5M2)
  // CHECK: ^bb1(%[[ARG:.+]]: f8E5M2):
  // CHECK: %[[BITS:.+]] = builtin.unrealized_conversion_cast %[[ARG]] : f8E5M2 to i8
  // CHECK: arith.extui %[[BITS]] : i8 to i32
  %0 = builtin.unrealized_conversion_cast %arg0 : i8 to f8E5M2
  cf.br ^bb1(%0 : f8E5M2)
^bb1(%1: f8E5M2):
  %2 = arith.extf %1 : f8E5M2 to f32
  return %2 : f32
}
