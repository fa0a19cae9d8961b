// RUN: shlo-opt %S/../artifacts/torch-mlir-20261001/mlp_dynamic_batch.mlir --shlo-remove-dynamism='types=tensor<3x8xf32>' | FileCheck %s

// torch-mlir's own StableHLO of an MLP with a dynamic batch (dense_resource
// weights, shapes in the shape dialect, arith constants), refined to batch 3:
// the weights are dense constants and nothing dynamic or non-StableHLO is left.
// CHECK-LABEL: func.func @main(%arg0: tensor<3x8xf32>) -> tensor<3x4xf32>
// CHECK-NOT: dense_resource
// CHECK-NOT: shape.
// CHECK-NOT: arith.
// CHECK-NOT: tensor.
// CHECK-NOT: ?x
// CHECK: stablehlo.constant dense<{{.+}}> : tensor<16x8xf32>
// CHECK: stablehlo.dot_general %arg0, %{{.+}} -> tensor<3x16xf32>
// CHECK: return %{{.+}} : tensor<3x4xf32>

// This file only runs the command above.
