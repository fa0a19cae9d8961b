# sequence: a layer norm along the symbolic sequence axis of x: (b, s, 8).
# RUN: %PYTHON %S/../python/jax_exports.py sequence > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x5x8xf32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x5x8xf32>) -> (tensor<2x5x8xf32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# The mean divides by s, now the constant 5.
# CHECK-DAG: %[[S:.+]] = stablehlo.constant dense<5.000000e+00> : tensor<2x1x8xf32>
# CHECK: %[[SUM:.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x8xf32>
# CHECK: %[[KEEP:.+]] = stablehlo.broadcast_in_dim %[[SUM]], dims = [0, 2] : (tensor<2x8xf32>) -> tensor<2x1x8xf32>
# CHECK: stablehlo.divide %[[KEEP]], %[[S]] : tensor<2x1x8xf32>
# CHECK: stablehlo.rsqrt %{{.+}} : tensor<2x1x8xf32>
# CHECK: return %{{.+}} : tensor<2x5x8xf32>
