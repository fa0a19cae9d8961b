// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-store-booleans-as-bytes)' | FileCheck %s

// A mask read by two generics: the producer writes extui bytes into a fresh
// i8 array, and each reader truncates its byte back to i1.
// CHECK-LABEL: func @mask_read_twice
// CHECK: %[[BYTES:.+]] = tensor.empty() : tensor<8xi8>
// CHECK: %[[MASK:.+]] = linalg.generic {{.+}} outs(%[[BYTES]] : tensor<8xi8>)
// CHECK: %[[C:.+]] = arith.cmpf ogt
// CHECK: %[[W:.+]] = arith.extui %[[C]] : i1 to i8
// CHECK: linalg.yield %[[W]] : i8
// CHECK: linalg.generic {{.+}} ins(%[[MASK]], %{{.+}} : tensor<8xi8>, tensor<8x4xf32>)
// CHECK-NEXT: ^bb0(%[[B:.+]]: i8, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[T:.+]] = arith.trunci %[[B]] : i8 to i1
// CHECK-NEXT: arith.select %[[T]]
// CHECK: linalg.generic {{.+}} ins(%[[MASK]], %{{.+}} : tensor<8xi8>, tensor<8x4xf32>)
// CHECK-NEXT: ^bb0(%[[B2:.+]]: i8, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[T2:.+]] = arith.trunci %[[B2]] : i8 to i1
// CHECK-NEXT: arith.select %[[T2]]
func.func @mask_read_twice(%a: tensor<8xf32>, %x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xi1>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %c : i1
  } -> tensor<8xi1>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %x : tensor<8xi1>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%b: i1, %in: f32, %out: f32):
    %s = arith.select %b, %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %x : tensor<8xi1>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%b: i1, %in: f32, %out: f32):
    %s = arith.select %b, %zero, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r1, %r2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A mask the function returns stays i1 (the caller's numpy bools), and so
// does one whose generic reads its init.
// CHECK-LABEL: func @mask_returned
// CHECK-NOT: i8
// CHECK: return
func.func @mask_returned(%a: tensor<8xf32>, %x: tensor<8xf32>, %init: tensor<8xi1>) -> (tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xi1>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %c : i1
  } -> tensor<8xi1>
  %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%init : tensor<8xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %zero : f32
    %o = arith.ori %c, %out : i1
    linalg.yield %o : i1
  } -> tensor<8xi1>
  %e2 = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%m, %x : tensor<8xi1>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%b: i1, %in: f32, %out: f32):
    %s = arith.select %b, %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%n, %x : tensor<8xi1>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%b: i1, %in: f32, %out: f32):
    %s = arith.select %b, %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %m, %r, %r2 : tensor<8xi1>, tensor<8xf32>, tensor<8xf32>
}
