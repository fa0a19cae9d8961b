// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-read-only-arguments)' | FileCheck %s
// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-read-only-arguments,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},drop-equivalent-buffer-results)' | FileCheck %s --check-prefix=BUFFERS

// The entry point's arguments are the caller's arrays: not writable. A
// private function's stay writable: @double writes its result into the
// destination it is passed, and the result it returns as it came goes away.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%{{.+}}: tensor<8xf32> {bufferization.writable = false}, %{{.+}}: tensor<8xf32> {bufferization.writable = false})
// BUFFERS-LABEL: func.func @main
// BUFFERS-SAME: (%[[A:.+]]: memref<8xf32>, %[[B:.+]]: memref<8xf32>) -> memref<8xf32>
// BUFFERS: %[[OUT:.+]] = memref.alloc
// BUFFERS-NOT: memref.copy
// BUFFERS: call @double(%[[A]], %[[OUT]]) : (memref<8xf32>, memref<8xf32>) -> ()
// BUFFERS: return %[[OUT]]
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = call @double(%a, %e) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
// CHECK-LABEL: func.func private @double
// CHECK-SAME: (%{{.+}}: tensor<8xf32>, %{{.+}}: tensor<8xf32>) -> tensor<8xf32>
// BUFFERS-LABEL: func.func private @double
// BUFFERS-SAME: (%{{.+}}: memref<8xf32>, %[[DEST:.+]]: memref<8xf32>) {
// BUFFERS-NOT: memref.alloc
// BUFFERS: linalg.generic {{.*}} outs(%[[DEST]] : memref<8xf32>)
// BUFFERS: return
// BUFFERS-NOT: memref.copy
func.func private @double(%x: tensor<8xf32>, %dest: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%dest : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %in, %in : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
