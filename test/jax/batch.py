# batch: a two-layer MLP over a symbolic batch, x: (b, 16), exported by jax.export.
# RUN: %PYTHON %S/../python/jax_exports.py batch > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<3x16xf32>' | FileCheck %s %{no-dynamism}
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<64x16xf32>' | FileCheck %s %{no-dynamism} --check-prefix=B64

# CHECK-LABEL: func.func public @main(%arg0: tensor<3x16xf32>) -> (tensor<3x8xf32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK: %[[H:.+]] = stablehlo.dot_general %arg0, %{{.+}}, contracting_dims = [1] x [0] : (tensor<3x16xf32>, tensor<16x32xf32>) -> tensor<3x32xf32>
# CHECK: %[[PRE:.+]] = stablehlo.add %[[H]], %{{.+}} : tensor<3x32xf32>
# CHECK: %[[RELU:.+]] = stablehlo.maximum %[[PRE]], %{{.+}} : tensor<3x32xf32>
# CHECK: stablehlo.dot_general %[[RELU]], %{{.+}}, contracting_dims = [1] x [0] : (tensor<3x32xf32>, tensor<32x8xf32>) -> tensor<3x8xf32>
# CHECK: return %{{.+}} : tensor<3x8xf32>

# B64-LABEL: func.func public @main(%arg0: tensor<64x16xf32>) -> (tensor<64x8xf32>
# B64: stablehlo.dot_general %arg0, %{{.+}} : (tensor<64x16xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
# B64: return %{{.+}} : tensor<64x8xf32>
