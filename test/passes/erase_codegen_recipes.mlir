// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-insert-codegen-recipes{recipes=tile-matmul-32},transform-interpreter,shlo-erase-codegen-recipes)' | FileCheck %s

// The recipe tiles the matmul; once applied, no transform op or attribute is left.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for
// CHECK: scf.for
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<32x40xf32>, tensor<40x32xf32>)
// CHECK-NOT: transform
module {
  func.func @matmul(%a: tensor<64x40xf32>, %b: tensor<40x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %0 = linalg.matmul ins(%a, %b : tensor<64x40xf32>, tensor<40x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
    return %0 : tensor<64x64xf32>
  }
}
