// RUN: shlo-opt %s --shlo-register-tiled-matmuls | FileCheck %s

// A 4x4 tile of outputs per iteration: accumulators loaded from the output,
// 4 + 4 loads and 16 fused multiply-adds per step of k, stores guarded at the
// edges (6 rows: the second row tile is half outside), loads clamped inside.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.+]]: memref<6x8xf32>, %[[B:.+]]: memref<8x12xf32>, %[[C:.+]]: memref<6x12xf32>)
// CHECK: scf.parallel (%[[TI:.+]], %[[TJ:.+]]) = (%{{.+}}, %{{.+}}) to (%c2, %c3) step
// CHECK: %[[I0:.+]] = arith.muli %[[TI]], %c4
// CHECK: arith.minui %[[I0]], %c5
// CHECK-COUNT-16: memref.load %[[C]]
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %c8 step %{{.+}} iter_args
// CHECK-COUNT-4: memref.load %[[A]][%{{.+}}, %[[K]]]
// CHECK-COUNT-4: memref.load %[[B]][%[[K]], %{{.+}}]
// CHECK-COUNT-16: math.fma
// CHECK: scf.yield
// CHECK-COUNT-16: memref.store {{.*}}, %[[C]]
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<6x8xf32>, %b: memref<8x12xf32>, %c: memref<6x12xf32>) {
  linalg.matmul ins(%a, %b : memref<6x8xf32>, memref<8x12xf32>) outs(%c : memref<6x12xf32>)
  return
}

// Batched: the batch is the loop's first dimension.
// CHECK-LABEL: func.func @batched
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%{{.+}}, %{{.+}}, %{{.+}}) to (%c3, %{{.+}}, %{{.+}})
func.func @batched(%a: memref<3x4x5xf64>, %b: memref<3x5x4xf64>, %c: memref<3x4x4xf64>) {
  linalg.batch_matmul ins(%a, %b : memref<3x4x5xf64>, memref<3x5x4xf64>) outs(%c : memref<3x4x4xf64>)
  return
}

// Integers and a transposed operand keep the one-thread-per-output path.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.matmul
// CHECK: linalg.matmul
func.func @kept(%a: memref<4x4xi32>, %b: memref<4x4xi32>, %c: memref<4x4xi32>, %x: memref<4x4xf32>, %y: memref<4x4xf32>, %z: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x4xi32>, memref<4x4xi32>) outs(%c : memref<4x4xi32>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %y : memref<4x4xf32>, memref<4x4xf32>) outs(%z : memref<4x4xf32>)
  return
}
