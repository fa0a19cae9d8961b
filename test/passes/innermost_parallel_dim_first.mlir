// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-innermost-parallel-dim-first)' | FileCheck %s

// The bounds are reversed; every use keeps its induction variable.
// CHECK-LABEL: func @copy_transposed
// CHECK-SAME: (%[[IN:.*]]: memref<6x300xf32>, %[[OUT:.*]]: memref<300x6xf32>)
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C300:.*]] = arith.constant 300 : index
// CHECK: scf.parallel (%[[J:.*]], %[[I:.*]]) = ({{.*}}) to (%[[C300]], %[[C6]])
// CHECK: %[[V:.*]] = memref.load %[[IN]][%[[I]], %[[J]]]
// CHECK: memref.store %[[V]], %[[OUT]][%[[J]], %[[I]]]
func.func @copy_transposed(%in: memref<6x300xf32>, %out: memref<300x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c300 = arith.constant 300 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c300) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<6x300xf32>
    memref.store %v, %out[%j, %i] : memref<300x6xf32>
    scf.reduce
  }
  return
}

// -----

// Three dimensions with different steps: the steps move with their bounds.
// CHECK-LABEL: func @three
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%c5, %c4, %c3) step (%c1, %c2, %c1)
func.func @three(%m: memref<3x4x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%a, %b, %c) = (%c0, %c0, %c0) to (%c3, %c4, %c5) step (%c1, %c2, %c1) {
    memref.store %f, %m[%a, %b, %c] : memref<3x4x5xf32>
    scf.reduce
  }
  return
}

// -----

// One dimension, and loops with results, are left alone.
// CHECK-LABEL: func @untouched
// CHECK: scf.parallel (%[[K:.*]]) = (%c0) to (%c8) step (%c1)
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c8, %c4) step (%c1, %c1) init
func.func @untouched(%m: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%k) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %m[%k] : memref<8xf32>
    scf.reduce
  }
  %z = arith.constant 0.0 : f32
  %s = scf.parallel (%x, %y) = (%c0, %c0) to (%c8, %c4) step (%c1, %c1) init (%z) -> f32 {
    %v = memref.load %m[%x] : memref<8xf32>
    scf.reduce(%v : f32) {
    ^bb0(%l: f32, %r: f32):
      %a = arith.addf %l, %r : f32
      scf.reduce.return %a : f32
    }
  }
  return %s : f32
}
