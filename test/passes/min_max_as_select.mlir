// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-min-max-as-select)' | FileCheck %s

// CHECK-LABEL: func @relu
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.0{{.*}}> : vector<16xf32>
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[ZERO]], %[[X:.*]] : vector<16xf32>
// CHECK: %[[SEL:.*]] = arith.select %[[GT]], %[[ZERO]], %[[X]]
// A select gives -0 for max(-0, +0); the add of +0.0 makes it +0.
// CHECK: %[[FIX:.*]] = arith.addf %[[SEL]], %[[ZERO]]
// CHECK-NOT: arith.maximumf
// CHECK: return %[[FIX]]
func.func @relu(%x: vector<16xf32>) -> vector<16xf32> {
  %z = arith.constant dense<0.0> : vector<16xf32>
  %m = arith.maximumf %x, %z : vector<16xf32>
  return %m : vector<16xf32>
}

// An add of a nonzero constant cannot tell the zeros apart: no fix-up.
// CHECK-LABEL: func @relu_plus_one
// CHECK: %[[GT:.*]] = arith.cmpf ogt
// CHECK: %[[SEL:.*]] = arith.select %[[GT]]
// CHECK-NEXT: arith.addf %[[SEL]], %{{.*}} : vector<16xf32>
// CHECK-NEXT: return
func.func @relu_plus_one(%x: vector<16xf32>) -> vector<16xf32> {
  %z = arith.constant dense<0.0> : vector<16xf32>
  %one = arith.constant dense<1.0> : vector<16xf32>
  %m = arith.maximumf %z, %x : vector<16xf32>
  %s = arith.addf %m, %one : vector<16xf32>
  return %s : vector<16xf32>
}

// Scalars and f64 too; a nonzero constant needs no fix-up.
// CHECK-LABEL: func @clamp_high
// CHECK: %[[GT:.*]] = arith.cmpf olt, %[[C:.*]], %[[X:.*]] : f64
// CHECK-NEXT: %[[SEL:.*]] = arith.select %[[GT]], %[[C]], %[[X]] : f64
// CHECK-NEXT: return %[[SEL]]
func.func @clamp_high(%x: f64) -> f64 {
  %c = arith.constant 2.5 : f64
  %m = arith.minimumf %x, %c : f64
  return %m : f64
}

// min(+0, -0) is -0, which the select would not give: left alone, as are
// maxima of two variables and f16.
// CHECK-LABEL: func @left_alone
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// CHECK-NOT: arith.select
func.func @left_alone(%x: vector<16xf32>, %y: vector<16xf32>, %h: f16) -> (vector<16xf32>, vector<16xf32>, f16) {
  %nz = arith.constant dense<-0.0> : vector<16xf32>
  %hc = arith.constant 1.0 : f16
  %a = arith.minimumf %x, %nz : vector<16xf32>
  %b = arith.maximumf %x, %y : vector<16xf32>
  %c = arith.maximumf %h, %hc : f16
  return %a, %b, %c : vector<16xf32>, vector<16xf32>, f16
}
