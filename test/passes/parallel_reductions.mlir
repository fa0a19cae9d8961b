// RUN: shlo-opt %s --shlo-parallel-reductions | FileCheck %s

// A reduction over rows (with a fused producer and a value broadcast along the
// row): a block per row, threads striding over it from the identity, then
// gpu.all_reduce, and thread 0 combines the total into the initial value.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.+]]: memref<8x4096xf32>, %[[B:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<8xf32>)
// CHECK: gpu.launch blocks(%[[ROW:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c8, {{.*}} threads(%[[T:.+]], %{{.+}}, %{{.+}}) in (%[[NT:.+]] = %c256,
// CHECK: %[[ZERO:.+]] = arith.constant -0.000000e+00 : f32
// CHECK: %[[PARTIAL:.+]] = scf.for %[[I:.+]] = %[[T]] to %c4096 step %[[NT]] iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32)
// CHECK: memref.load %[[X]][%[[ROW]], %[[I]]]
// CHECK: memref.load %[[B]][%[[ROW]]]
// CHECK: math.exp
// CHECK: arith.addf %{{.+}}, %[[ACC]] : f32
// CHECK: %[[TOTAL:.+]] = gpu.all_reduce add %[[PARTIAL]] uniform
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[T]], %{{.+}} : index
// CHECK: scf.if %[[FIRST]]
// CHECK: %[[INIT:.+]] = memref.load %[[OUT]][%[[ROW]]]
// CHECK: %[[SUM:.+]] = arith.addf %[[TOTAL]], %[[INIT]] : f32
// CHECK: memref.store %[[SUM]], %[[OUT]][%[[ROW]]]
// CHECK-NOT: linalg.generic
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @rows(%x: memref<8x4096xf32>, %b: memref<8xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x, %b : memref<8x4096xf32>, memref<8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %bias: f32, %acc: f32):
    %0 = arith.subf %in, %bias : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %acc : f32
    linalg.yield %2 : f32
  }
  return
}

// Short rows keep a thread per output; a matmul reuses its inputs across
// outputs: both stay linalg.
// CHECK-LABEL: func.func @small
// CHECK: linalg.generic
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic
func.func @small(%x: memref<8x16xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x16xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %2 = arith.addf %acc, %in : f32
    linalg.yield %2 : f32
  }
  return
}
func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %out: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %0 = arith.mulf %x, %y : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// Few outputs: a reduction over the outer dimension gets a block per column;
// max starts from -inf; 64-bit integers.
// CHECK-LABEL: func.func @columns
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: gpu.all_reduce maximumf
func.func @columns(%x: memref<4096x8xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4096x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.maximumf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}
// CHECK-LABEL: func.func @integers
// CHECK: arith.constant -9223372036854775808 : i64
// CHECK: gpu.all_reduce maxsi
func.func @integers(%x: memref<2x1000xi64>, %out: memref<2xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<2x1000xi64>) outs(%out : memref<2xi64>) {
  ^bb0(%in: i64, %acc: i64):
    %0 = arith.maxsi %acc, %in : i64
    linalg.yield %0 : i64
  }
  return
}

// The fill that sets the initial value is folded into the kernel's last step.
// CHECK-LABEL: func.func @filled
// CHECK-SAME: (%[[X:.+]]: memref<4x512xf32>, %[[OUT:.+]]: memref<4xf32>)
// CHECK: %[[INIT:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK: %[[TOTAL:.+]] = gpu.all_reduce add
// CHECK: scf.if
// CHECK-NOT: memref.load
// CHECK: %[[SUM:.+]] = arith.addf %[[INIT]], %[[TOTAL]] : f32
// CHECK-NEXT: memref.store %[[SUM]], %[[OUT]]
func.func @filled(%x: memref<4x512xf32>, %out: memref<4xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%out : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x512xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}
