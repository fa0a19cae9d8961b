// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-flush-denormals)' | FileCheck %s

// @main saves the caller's MXCSR, sets FTZ and DAZ (0x8040), and puts the
// saved value back before each of its returns. Other functions are left alone.
// CHECK-LABEL: func.func @main
func.func @main(%arg0: !llvm.ptr, %flag: i1) {
  // CHECK: %[[SAVED:.+]] = llvm.alloca %{{.+}} x i32
  // CHECK: %[[MODE:.+]] = llvm.alloca %{{.+}} x i32
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.stmxcsr"(%[[SAVED]])
  // CHECK: %[[OLD:.+]] = llvm.load %[[SAVED]] : !llvm.ptr -> i32
  // CHECK: %[[BITS:.+]] = llvm.mlir.constant(32832 : i32) : i32
  // CHECK: %[[NEW:.+]] = llvm.or %[[OLD]], %[[BITS]] : i32
  // CHECK: llvm.store %[[NEW]], %[[MODE]]
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[MODE]])
  // CHECK: call @helper
  call @helper() : () -> ()
  // CHECK: cf.cond_br
  cf.cond_br %flag, ^early, ^late
^early:
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SAVED]])
  // CHECK-NEXT: return
  return
^late:
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SAVED]])
  // CHECK-NEXT: return
  return
}

// CHECK-LABEL: func.func private @helper
// CHECK-NOT: mxcsr
// CHECK: return
func.func private @helper() {
  return
}
