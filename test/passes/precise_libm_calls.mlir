// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-precise-libm-calls)' | FileCheck %s

// CHECK-LABEL: func @scalars
// CHECK: %[[A:.+]] = call @expm1(%{{.+}}) : (f64) -> f64
// CHECK: %[[B:.+]] = call @log1pf(%{{.+}}) : (f32) -> f32
// CHECK: return %[[A]], %[[B]]
// CHECK-DAG: func.func private @expm1(f64) -> f64
// CHECK-DAG: func.func private @log1pf(f32) -> f32
func.func @scalars(%x: f64, %y: f32) -> (f64, f32) {
  %0 = math.expm1 %x : f64
  %1 = math.log1p %y : f32
  return %0, %1 : f64, f32
}

// -----

// Vectors keep upstream's lowering.
// CHECK-LABEL: func @vector
// CHECK: math.expm1 %{{.+}} : vector<4xf32>
func.func @vector(%x: vector<4xf32>) -> vector<4xf32> {
  %0 = math.expm1 %x : vector<4xf32>
  return %0 : vector<4xf32>
}
