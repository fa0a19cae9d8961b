// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-outline-kernels)' | FileCheck %s

// Two identical nests share one kernel, a different one gets its own, however
// small; constants are copied in. Left with allocations and calls only, @main
// is glue that LLVM need not optimize.
// CHECK-LABEL: func.func @main
// CHECK-SAME: attributes {llvm.passthrough = ["noinline", "optnone"]}
// CHECK: call @shlo_kernel_0(%[[A:.+]], %[[B:.+]]) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK: call @shlo_kernel_0(%[[B]], %[[C:.+]]) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK: call @shlo_kernel_1(%[[C]]) : (memref<64xf32>) -> ()
// CHECK-NOT: scf.for
// CHECK: return
func.func @main(%a: memref<64xf32>, %c: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %b = memref.alloc() : memref<64xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %b[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %b[%i] : memref<64xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %c[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %zero, %c[%i] : memref<64xf32>
  }
  memref.dealloc %b : memref<64xf32>
  return
}
// Static layouts: the kernels take bare pointers.
// CHECK-LABEL: func.func private @shlo_kernel_0
// CHECK-SAME: (%[[IN:.+]]: memref<64xf32>, %[[OUT:.+]]: memref<64xf32>)
// CHECK-SAME: attributes {llvm.bareptr, llvm.passthrough = ["noinline"]}
// CHECK-DAG: arith.constant 64 : index
// CHECK: scf.for
// CHECK: memref.load %[[IN]]
// CHECK: memref.store %{{.+}}, %[[OUT]]
// CHECK-LABEL: func.func private @shlo_kernel_1
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: scf.for
// CHECK-NOT: func.func private @shlo_kernel_2

// -----

// A function that keeps a region (a while loop) stays optimized.
// CHECK-LABEL: func.func @loop
// CHECK-NOT: optnone
// CHECK: scf.while
func.func @loop(%n: memref<i32>) {
  %c1 = arith.constant 1 : i32
  %c10 = arith.constant 10 : i32
  %start = memref.load %n[] : memref<i32>
  %end = scf.while (%i = %start) : (i32) -> i32 {
    %go = arith.cmpi slt, %i, %c10 : i32
    scf.condition(%go) %i : i32
  } do {
  ^bb0(%i: i32):
    %next = arith.addi %i, %c1 : i32
    scf.yield %next : i32
  }
  memref.store %end, %n[] : memref<i32>
  return
}

// -----

// A view with a static offset still passes as a bare pointer; one with a
// dynamic offset needs its descriptor, and so does a kernel that frees an
// argument (the bare pointer would be freed as if it were the allocation).
// CHECK-LABEL: func.func @views
// CHECK: call @shlo_kernel_0(%{{.+}}) : (memref<4xf32, strided<[1], offset: 4>>) -> ()
// CHECK: call @shlo_kernel_1(%{{.+}}) : (memref<4xf32, strided<[1], offset: ?>>) -> ()
// CHECK: call @shlo_kernel_2(%{{.+}}) : (memref<8xf32>) -> ()
func.func @views(%a: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %static = memref.subview %a[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %static[%i] : memref<4xf32, strided<[1], offset: 4>>
  }
  %dynamic = memref.subview %a[%n] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %dynamic[%i] : memref<4xf32, strided<[1], offset: ?>>
  }
  %b = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c1 step %c1 {
    memref.dealloc %b : memref<8xf32>
  }
  return
}
// CHECK-LABEL: func.func private @shlo_kernel_0
// CHECK-SAME: attributes {llvm.bareptr,
// CHECK-LABEL: func.func private @shlo_kernel_1
// CHECK-NOT: llvm.bareptr
// CHECK-SAME: {
// CHECK-LABEL: func.func private @shlo_kernel_2
// CHECK-NOT: llvm.bareptr
// CHECK-SAME: {

// -----

// A kernel that frees a buffer of its own still takes bare pointers.
// CHECK-LABEL: func.func @own_buffer
// CHECK: call @shlo_kernel_0(%{{.+}}) : (memref<8xf32>) -> ()
func.func @own_buffer(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %t = memref.alloc() : memref<1xf32>
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %t[%c0] : memref<1xf32>
    %w = memref.load %t[%c0] : memref<1xf32>
    memref.store %w, %a[%i] : memref<8xf32>
    memref.dealloc %t : memref<1xf32>
  }
  return
}
// CHECK-LABEL: func.func private @shlo_kernel_0
// CHECK-SAME: attributes {llvm.bareptr,

// -----

// When one register tile covers a small matmul, vectorization leaves its
// accumulator's read, k loop and write outside any loop nest: they become one
// kernel, and a buffer freed between the loop and the write is freed after
// the call. Scalar work without vectors or loops stays in the glue, and so
// does a run that would hand a vector to it.
// CHECK-LABEL: func.func @one_tile
// CHECK-SAME: attributes {llvm.passthrough = ["noinline", "optnone"]}
// CHECK: memref.load
// CHECK: memref.store
// CHECK: call @shlo_kernel_0(%{{.+}}, %{{.+}}, %[[A:.+]]) : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>) -> ()
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NOT: vector.
// CHECK: return
func.func @one_tile(%acc: memref<8x16xf32>, %b: memref<4x16xf32>, %n: memref<i32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %pad = ub.poison : f32
  %one = arith.constant 1 : i32
  %count = memref.load %n[] : memref<i32>
  %next = arith.addi %count, %one : i32
  memref.store %next, %n[] : memref<i32>
  %a = memref.alloc() : memref<8x4xf32>
  %init = vector.transfer_read %acc[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x16xf32>, vector<8x16xf32>
  %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%v = %init) -> (vector<8x16xf32>) {
    %row = vector.transfer_read %b[%k, %c0], %pad {in_bounds = [true]} : memref<4x16xf32>, vector<16xf32>
    %col = vector.transfer_read %a[%c0, %k], %pad {in_bounds = [true]} : memref<8x4xf32>, vector<8xf32>
    %p = vector.outerproduct %col, %row, %v : vector<8xf32>, vector<16xf32>
    scf.yield %p : vector<8x16xf32>
  }
  memref.dealloc %a : memref<8x4xf32>
  vector.transfer_write %sum, %acc[%c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<8x16xf32>
  return
}
// CHECK-LABEL: func.func private @shlo_kernel_0
// CHECK: vector.transfer_read
// CHECK: scf.for
// CHECK: vector.outerproduct
// CHECK: vector.transfer_write

// -----

// CHECK-LABEL: func.func @vector_to_glue
// CHECK-NOT: call @shlo_kernel
// CHECK: vector.transfer_read
// CHECK: call @consume
func.func private @consume(vector<8xf32>)
func.func @vector_to_glue(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %pad = ub.poison : f32
  %v = vector.transfer_read %a[%c0], %pad {in_bounds = [true]} : memref<8xf32>, vector<8xf32>
  call @consume(%v) : (vector<8xf32>) -> ()
  return
}

// -----

// The loop nests in the body of a while loop (a decoding loop over a model)
// and of a loop that carries a buffer become kernels, shared with the same
// nest outside; the while loop itself stays in the function.
// CHECK-LABEL: func.func @decode
// CHECK-NOT: optnone
// CHECK: call @shlo_kernel_0(%{{.+}})
// CHECK: scf.while
// CHECK: } do {
// CHECK: call @shlo_kernel_0(%{{.+}})
// CHECK: scf.for {{.+}} iter_args
// CHECK: call @shlo_kernel_0(%{{.+}})
// CHECK-NOT: scf.for %{{.+}} = %c0 to %c8
// CHECK: return
func.func @decode(%a: memref<8xf32>, %n: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1 : i32
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %a[%i] : memref<8xf32>
  }
  %start = arith.constant 0 : i32
  %end = scf.while (%t = %start) : (i32) -> i32 {
    %go = arith.cmpi slt, %t, %n : i32
    scf.condition(%go) %t : i32
  } do {
  ^bb0(%t: i32):
    scf.for %i = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %a[%i] : memref<8xf32>
    }
    %next = arith.addi %t, %one : i32
    scf.yield %next : i32
  }
  %last = scf.for %j = %c0 to %c1 step %c1 iter_args(%buffer = %a) -> (memref<8xf32>) {
    scf.for %i = %c0 to %c8 step %c1 {
      %x = memref.load %buffer[%i] : memref<8xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %buffer[%i] : memref<8xf32>
    }
    scf.yield %buffer : memref<8xf32>
  }
  return
}
// CHECK-LABEL: func.func private @shlo_kernel_0
// CHECK-NOT: func.func private @shlo_kernel_1

// -----

// A private function left glue (a kernel function of
// shlo-outline-tensor-kernels) takes bare pointers too; the public entry
// point keeps its memref descriptors.
// CHECK-LABEL: func.func @calls_glue
// CHECK-NOT: llvm.bareptr
// CHECK: call @layer
func.func @calls_glue(%a: memref<8xf32>, %b: memref<8xf32>) {
  call @layer(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  call @layer(%b, %a) : (memref<8xf32>, memref<8xf32>) -> ()
  return
}
// CHECK-LABEL: func.func private @layer
// CHECK-SAME: attributes {llvm.bareptr, llvm.passthrough = ["noinline", "optnone"]}
// CHECK: call @shlo_kernel_0
// CHECK: memref.copy
func.func private @layer(%in: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %in[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %out[%i] : memref<8xf32>
  }
  memref.copy %out, %in : memref<8xf32> to memref<8xf32>
  return
}
// CHECK-LABEL: func.func private @shlo_kernel_0
// CHECK-SAME: attributes {llvm.bareptr, llvm.passthrough = ["noinline"]}

// -----

// A private function left with nothing but calls (a function of
// shlo-outline-tensor-kernels whose loop nest became a kernel) is not kept
// for LLVM to compile: its callers call what it called, and it goes.
// CHECK-LABEL: func.func @calls_forwarding
// CHECK-NEXT: call @shlo_kernel_0(%arg0, %arg1)
// CHECK-NEXT: %[[E:.*]] = memref.expand_shape %arg1
// CHECK-NEXT: %[[C:.*]] = memref.collapse_shape %[[E]]
// CHECK-NEXT: call @shlo_kernel_0(%[[C]], %arg0)
// CHECK-NEXT: %[[R:.*]] = call @identity(%arg0)
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: @forward
// CHECK-LABEL: func.func private @identity
func.func @calls_forwarding(%a: memref<8xf32>, %b: memref<8xf32>) -> memref<8xf32> {
  call @forward(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  %r = call @forward_again(%b, %a) : (memref<8xf32>, memref<8xf32>) -> memref<8xf32>
  return %r : memref<8xf32>
}
func.func private @forward(%in: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %in[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %out[%i] : memref<8xf32>
  }
  return
}
// A forwarding function that calls another on a view, and returns a result
// of a call; its unused poison is not copied.
func.func private @forward_again(%in: memref<8xf32>, %out: memref<8xf32>) -> memref<8xf32> {
  %unused = ub.poison : f32
  %e = memref.expand_shape %in [[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
  %c = memref.collapse_shape %e [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  call @forward(%c, %out) : (memref<8xf32>, memref<8xf32>) -> ()
  %r = call @identity(%out) : (memref<8xf32>) -> memref<8xf32>
  return %r : memref<8xf32>
}
func.func private @identity(%m: memref<8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %v = memref.load %m[%c0] : memref<8xf32>
  memref.store %v, %m[%c0] : memref<8xf32>
  return %m : memref<8xf32>
}
