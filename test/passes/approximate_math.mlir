// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-approximate-math{scalef=never})' | FileCheck %s
// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-approximate-math{scalef=always})' | FileCheck %s --check-prefix=SCALEF

// exp: n = round(x / ln 2) by the 1.5 * 2^23 trick, r by Cody-Waite, 2^n in two factors.
// CHECK-LABEL: func @exp_scalar
// CHECK-SAME: (%[[X:.+]]: f32)
// CHECK-NOT: math.exp
// CHECK: %[[T:.+]] = math.fma %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: arith.bitcast %[[T]] : f32 to i32
// CHECK: %[[HALF:.+]] = arith.shrsi %[[N:.+]], %{{.+}} : i32
// CHECK: arith.subi %[[N]], %[[HALF]] : i32
// CHECK: %[[R:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: return %[[R]]
func.func @exp_scalar(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// -----

// Vectors of any shape; no branches (exp aside), every op on the whole vector.
// CHECK-LABEL: func @vectors
// CHECK-NOT: math.tanh
// CHECK-NOT: math.log1p
// CHECK-NOT: scf.
// CHECK: math.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: %[[TANH:.+]] = math.copysign %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.bitcast %{{.+}} : vector<2x8xf32> to vector<2x8xi32>
// CHECK: math.absf %{{.+}} : vector<2x8xf32>
// CHECK: %[[LOG1P:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<2x8xi1>, vector<2x8xf32>
// CHECK-NEXT: return %[[TANH]], %[[LOG1P]]
func.func @vectors(%x: vector<16xf32>, %y: vector<2x8xf32>) -> (vector<16xf32>, vector<2x8xf32>) {
  %0 = math.tanh %x : vector<16xf32>
  %1 = math.log1p %y : vector<2x8xf32>
  return %0, %1 : vector<16xf32>, vector<2x8xf32>
}

// -----

// exp of a vector of 16 or more lanes: when every lane's n (x = n ln 2 + r)
// is in [-125, 127] a shorter path (no clamp, 2^n + 2^n expm1(r) in one FMA);
// otherwise the general code. Smaller vectors stay branch-free.
// With vscalefps (AVX-512 hosts), vectors of 16k lanes take one path: the
// general code's clamp and reduction, exp(r) scaled by 2^n 16 lanes at a time.
// SCALEF-LABEL: func @exp_vectors
// SCALEF-NOT: scf.if
// SCALEF: arith.cmpf ogt, %{{.+}}, %{{.+}} : vector<4x16xf32>
// SCALEF-COUNT-4: x86.avx512.mask.scalef %{{.+}} : vector<16xf32>
// SCALEF-NOT: scf.if
// SCALEF: arith.shrsi %{{.+}}, %{{.+}} : vector<8xi32>
// SCALEF-NOT: scf.if
// CHECK-LABEL: func @exp_vectors
// CHECK-SAME: (%[[X:.+]]: vector<4x16xf32>, %[[Y:.+]]: vector<8xf32>)
// CHECK: math.fma %[[X]], %{{.+}}, %{{.+}} : vector<4x16xf32>
// CHECK: %[[N:.+]] = arith.subi %{{.+}}, %{{.+}} : vector<4x16xi32>
// CHECK: %[[OFFSET:.+]] = arith.subi %[[N]], %{{.+}} : vector<4x16xi32>
// CHECK: %[[IN:.+]] = arith.cmpi ule, %[[OFFSET]], %{{.+}} : vector<4x16xi32>
// CHECK: %[[FLAT:.+]] = vector.shape_cast %[[IN]] : vector<4x16xi1> to vector<64xi1>
// CHECK: %[[ALL:.+]] = vector.reduction <and>, %[[FLAT]] : vector<64xi1> into i1
// CHECK: %[[EXP:.+]] = scf.if %[[ALL]] -> (vector<4x16xf32>) {
// CHECK-NOT: arith.shrsi
// CHECK: %[[SHORT:.+]] = math.fma %{{.+}}, %[[SCALE:.+]], %[[SCALE]] : vector<4x16xf32>
// CHECK-NEXT: scf.yield %[[SHORT]]
// CHECK: } else {
// CHECK: arith.shrsi
// CHECK: }
// CHECK-NOT: scf.if
// CHECK: arith.shrsi %{{.+}}, %{{.+}} : vector<8xi32>
// CHECK-NOT: scf.if
// CHECK: return %[[EXP]], %{{.+}} : vector<4x16xf32>, vector<8xf32>
func.func @exp_vectors(%x: vector<4x16xf32>, %y: vector<8xf32>) -> (vector<4x16xf32>, vector<8xf32>) {
  %0 = math.exp %x : vector<4x16xf32>
  %1 = math.exp %y : vector<8xf32>
  return %0, %1 : vector<4x16xf32>, vector<8xf32>
}

// -----

// bf16 and f16 compute in f32 and round once.
// CHECK-LABEL: func @small_floats
// CHECK-NOT: math.erf
// CHECK-NOT: math.log
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: %[[ERF:.+]] = arith.truncf %{{.+}} : f32 to bf16
// CHECK-NEXT: arith.extf %{{.+}} : vector<4xf16> to vector<4xf32>
// CHECK: %[[LOG:.+]] = arith.truncf %{{.+}} : vector<4xf32> to vector<4xf16>
// CHECK-NEXT: return %[[ERF]], %[[LOG]]
func.func @small_floats(%x: bf16, %y: vector<4xf16>) -> (bf16, vector<4xf16>) {
  %0 = math.erf %x : bf16
  %1 = math.log %y : vector<4xf16>
  return %0, %1 : bf16, vector<4xf16>
}

// -----

// f64 keeps the C library, tensors and other math ops are left alone.
// CHECK-LABEL: func @untouched
// CHECK: %[[A:.+]] = math.exp %{{.+}} : f64
// CHECK: %[[B:.+]] = math.expm1 %{{.+}} : vector<4xf64>
// CHECK: %[[C:.+]] = math.tanh %{{.+}} : tensor<4xf32>
// CHECK: %[[D:.+]] = math.sin %{{.+}} : f32
// CHECK: return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @untouched(%x: f64, %y: vector<4xf64>, %z: tensor<4xf32>, %w: f32) -> (f64, vector<4xf64>, tensor<4xf32>, f32) {
  %0 = math.exp %x : f64
  %1 = math.expm1 %y : vector<4xf64>
  %2 = math.tanh %z : tensor<4xf32>
  %3 = math.sin %w : f32
  return %0, %1, %2, %3 : f64, vector<4xf64>, tensor<4xf32>, f32
}
