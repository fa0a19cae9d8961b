// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-insert-codegen-recipes{recipes=tile-matmul-32})' | FileCheck %s

// CHECK-LABEL: module attributes {transform.with_named_sequence}
// CHECK: func.func @matmul
// CHECK: transform.named_sequence @__transform_main(%[[ROOT:.+]]: !transform.any_op {transform.readonly})
// CHECK: %[[OPS:.+]] = transform.structured.match ops{["linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.dot"]} in %[[ROOT]]
// CHECK: transform.structured.tile_using_for %[[OPS]] tile_sizes [32, 32]
func.func @matmul(%a: tensor<64x40xf32>, %b: tensor<40x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x40xf32>, tensor<40x48xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}
