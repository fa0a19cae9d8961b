# reductions: sum, max, mean and argmax over the symbolic axes of x: (b, s, 8).
# RUN: %PYTHON %S/../python/jax_exports.py reductions > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x3x8xf32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x3x8xf32>) -> (tensor<2x8xf32> {jax.result_info = "result[0]"}, tensor<3x8xf32> {jax.result_info = "result[1]"}, tensor<8xf32> {jax.result_info = "result[2]"}, tensor<2x8xi32> {jax.result_info = "result[3]"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# The mean over (b, s) divides by b * s = 6.
# CHECK-DAG: %[[COUNT:.+]] = stablehlo.constant dense<6.000000e+00> : tensor<8xf32>
# CHECK: %[[SUM:.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x8xf32>
# CHECK: %[[MAX:.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.maximum across dimensions = [0] : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
# CHECK: %[[TOTAL:.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<8xf32>
# CHECK: %[[MEAN:.+]] = stablehlo.divide %[[TOTAL]], %[[COUNT]] : tensor<8xf32>
# argmax pairs the values with a static iota.
# CHECK: %[[POS:.+]] = stablehlo.iota dim = 1 : tensor<2x3x8xi32>
# CHECK: %[[ARG:.+]]:2 = stablehlo.reduce(%arg0 init: %{{.+}}), (%[[POS]] init: %{{.+}}) across dimensions = [1] : (tensor<2x3x8xf32>, tensor<2x3x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x8xf32>, tensor<2x8xi32>)
# CHECK: return %[[SUM]], %[[MAX]], %[[MEAN]], %[[ARG]]#1 : tensor<2x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<2x8xi32>
