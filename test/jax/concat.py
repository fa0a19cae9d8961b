# concat: x: (a, 3) and y: (b, 3) concatenated along axis 0 into (a + b, 3).
# RUN: %PYTHON %S/../python/jax_exports.py concat > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x3xf32>,tensor<5x3xf32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<5x3xf32>) -> (tensor<7x3xf32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# The mean over a + b rows divides by the constant 7.
# CHECK-DAG: %[[ROWS:.+]] = stablehlo.constant dense<7.000000e+00> : tensor<3xf32>
# CHECK: %[[BOTH:.+]] = stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<7x3xf32>
# CHECK: %[[SUM:.+]] = stablehlo.reduce(%[[BOTH]] init: %{{.+}}) applies stablehlo.add across dimensions = [0] : (tensor<7x3xf32>, tensor<f32>) -> tensor<3xf32>
# CHECK: stablehlo.divide %[[SUM]], %[[ROWS]] : tensor<3xf32>
# CHECK: %[[OUT:.+]] = stablehlo.subtract %[[BOTH]], %{{.+}} : tensor<7x3xf32>
# CHECK: return %[[OUT]] : tensor<7x3xf32>
