// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-keep-loops-rolled)' | FileCheck %s
// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-keep-loops-rolled,convert-scf-to-cf)' | FileCheck %s --check-prefix=CF

// Blocks of rows, each a loop over its rows: the blocks' loop stays rolled,
// the rows' loop is LLVM's to unroll.
// CHECK-LABEL: func @nest
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: {loop_annotation
// CHECK: }
// CHECK-NEXT: } {loop_annotation = #{{.+}}}
// CF-LABEL: func @nest
// CF: cf.br ^{{.+}} {loop_annotation = #
// CF-NOT: {loop_annotation
// CF-LABEL: func @single
func.func @nest(%m: memref<6x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c128 step %c1 {
      memref.store %f, %m[%i, %j] : memref<6x128xf32>
    }
  }
  return
}

// -----

// A loop of no loops, alone: left to LLVM.
// CHECK-LABEL: func @single
// CHECK-NOT: {loop_annotation
func.func @single(%m: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  scf.for %j = %c0 to %c128 step %c1 {
    memref.store %f, %m[%j] : memref<128xf32>
  }
  return
}

// -----

// Three deep, the innermost under an scf.if: both outer loops stay rolled.
// CHECK-LABEL: func @three_deep
// CHECK-COUNT-2: } {loop_annotation = #{{.+}}}
// CHECK-NOT: {loop_annotation
func.func @three_deep(%m: memref<4x6x8xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c6 step %c1 {
      scf.if %c {
        scf.for %k = %c0 to %c8 step %c1 {
          memref.store %f, %m[%i, %j, %k] : memref<4x6x8xf32>
        }
      }
    }
  }
  return
}
