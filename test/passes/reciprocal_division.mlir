// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-reciprocal-division)' | FileCheck %s

// A row divided by its sum, read as a 0-d vector: one reciprocal of the
// sum, a multiply where it is normal and the division elsewhere. A product
// at or beyond the largest float (where it may have rounded to infinity
// and the quotient not) sends the vector to the division too.
// CHECK-LABEL: func @divide_by_row_sum
// CHECK-SAME: (%[[X:.+]]: vector<64xf32>, %[[SUM:.+]]: vector<f32>)
// CHECK: %[[LANES:.+]] = vector.broadcast %[[SUM]] : vector<f32> to vector<64xf32>
// CHECK: %[[S:.+]] = vector.extract %[[SUM]][] : f32 from vector<f32>
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[R:.+]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK: %[[ABS:.+]] = math.absf %[[S]] : f32
// CHECK: %[[LOW:.+]] = arith.constant 1.17549435E-38 : f32
// CHECK: %[[ABOVE:.+]] = arith.cmpf oge, %[[ABS]], %[[LOW]] : f32
// CHECK: %[[HIGH:.+]] = arith.constant 8.50705917E+37 : f32
// CHECK: %[[BELOW:.+]] = arith.cmpf ole, %[[ABS]], %[[HIGH]] : f32
// CHECK: %[[NORMAL:.+]] = arith.andi %[[ABOVE]], %[[BELOW]] : i1
// CHECK: %[[Q:.+]] = scf.if %[[NORMAL]] -> (vector<64xf32>) {
// CHECK-NEXT: %[[RS:.+]] = vector.broadcast %[[R]] : f32 to vector<64xf32>
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[X]], %[[RS]] : vector<64xf32>
// CHECK-NEXT: %[[PABS:.+]] = math.absf %[[P]] : vector<64xf32>
// CHECK-NEXT: %[[MAX:.+]] = arith.constant dense<3.40282347E+38> : vector<64xf32>
// CHECK-NEXT: %[[HUGE:.+]] = arith.cmpf oge, %[[PABS]], %[[MAX]] : vector<64xf32>
// CHECK-NEXT: %[[ANY:.+]] = vector.reduction <or>, %[[HUGE]] : vector<64xi1> into i1
// CHECK-NEXT: %[[CHECKED:.+]] = scf.if %[[ANY]] -> (vector<64xf32>) {
// CHECK-NEXT: %[[D1:.+]] = arith.divf %[[X]], %[[LANES]] : vector<64xf32>
// CHECK-NEXT: scf.yield %[[D1]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[P]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[CHECKED]]
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[D:.+]] = arith.divf %[[X]], %[[LANES]] : vector<64xf32>
// CHECK-NEXT: scf.yield %[[D]]
// CHECK: return %[[Q]]
func.func @divide_by_row_sum(%x: vector<64xf32>, %sum: vector<f32>) -> vector<64xf32> {
  %lanes = vector.broadcast %sum : vector<f32> to vector<64xf32>
  %q = arith.divf %x, %lanes : vector<64xf32>
  return %q : vector<64xf32>
}

// -----

// A scalar broadcast to a 2-D vector takes the same path (its overflow
// test flattened for the reduction).
// CHECK-LABEL: func @divide_by_scalar
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK: scf.if
// CHECK: arith.mulf %{{.+}}, %{{.+}} : vector<4x16xf32>
// CHECK: vector.shape_cast %{{.+}} : vector<4x16xi1> to vector<64xi1>
// CHECK: vector.reduction <or>
func.func @divide_by_scalar(%x: vector<4x16xf32>, %s: f32) -> vector<4x16xf32> {
  %lanes = vector.broadcast %s : f32 to vector<4x16xf32>
  %q = arith.divf %x, %lanes : vector<4x16xf32>
  return %q : vector<4x16xf32>
}

// -----

// A one-element vector broadcast: its element is the divisor. A 1x1 source
// (rank 2) keeps its division, and so does a vector of 16 lanes, where the
// reciprocal's own division would save nothing.
// CHECK-LABEL: func @divide_by_one_element
// CHECK: %[[S:.+]] = vector.extract %{{.+}}[0] : f32 from vector<1xf32>
// CHECK: arith.divf %{{.+}}, %[[S]] : f32
// CHECK: scf.if
// CHECK: arith.mulf %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK-NOT: scf.if
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<4x16xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<16xf32>
func.func @divide_by_one_element(%x: vector<32xf32>, %one: vector<1xf32>, %y: vector<4x16xf32>, %square: vector<1x1xf32>, %z: vector<16xf32>) -> (vector<32xf32>, vector<4x16xf32>, vector<16xf32>) {
  %lanes = vector.broadcast %one : vector<1xf32> to vector<32xf32>
  %q = arith.divf %x, %lanes : vector<32xf32>
  %more = vector.broadcast %square : vector<1x1xf32> to vector<4x16xf32>
  %p = arith.divf %y, %more : vector<4x16xf32>
  %few = vector.broadcast %one : vector<1xf32> to vector<16xf32>
  %r = arith.divf %z, %few : vector<16xf32>
  return %q, %p, %r : vector<32xf32>, vector<4x16xf32>, vector<16xf32>
}

// -----

// A constant divisor: its reciprocal rounded at compile time (1 / 768),
// with the same test for a product at the largest float. Zero, a subnormal
// and NaN keep their divisions.
// CHECK-LABEL: func @divide_by_constants
// CHECK-SAME: (%[[X:.+]]: vector<16xf32>)
// CHECK: %[[C768:.+]] = arith.constant dense<7.680000e+02> : vector<16xf32>
// CHECK: %[[R:.+]] = arith.constant dense<0.00130208337> : vector<16xf32>
// CHECK: %[[P:.+]] = arith.mulf %[[X]], %[[R]] : vector<16xf32>
// CHECK: vector.reduction <or>
// CHECK: scf.if
// CHECK-NEXT: arith.divf %[[X]], %[[C768]] : vector<16xf32>
// CHECK: scf.yield %[[P]]
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK-NOT: arith.mulf
func.func @divide_by_constants(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %c768 = arith.constant dense<768.0> : vector<16xf32>
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %tiny = arith.constant dense<1.0e-40> : vector<16xf32>
  %nan = arith.constant dense<0x7FC00000> : vector<16xf32>
  %a = arith.divf %x, %c768 : vector<16xf32>
  %b = arith.divf %x, %zero : vector<16xf32>
  %c = arith.divf %x, %tiny : vector<16xf32>
  %d = arith.divf %x, %nan : vector<16xf32>
  return %a, %b, %c, %d : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// -----

// Divisors that vary by lane, f64 vectors and scalars keep their divisions.
// CHECK-LABEL: func @kept
// CHECK-NOT: scf.if
// CHECK-NOT: arith.mulf
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<8xf64>
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<16xf32>
func.func @kept(%x: vector<16xf32>, %y: vector<16xf32>, %u: vector<8xf64>, %d: f64, %s: f32, %w: vector<2xf32>) -> (vector<16xf32>, vector<8xf64>, f32, vector<16xf32>) {
  %a = arith.divf %x, %y : vector<16xf32>
  %dd = vector.broadcast %d : f64 to vector<8xf64>
  %b = arith.divf %u, %dd : vector<8xf64>
  %c = arith.divf %s, %s : f32
  %ww = vector.shuffle %w, %w [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1] : vector<2xf32>, vector<2xf32>
  %e = arith.divf %x, %ww : vector<16xf32>
  return %a, %b, %c, %e : vector<16xf32>, vector<8xf64>, f32, vector<16xf32>
}
