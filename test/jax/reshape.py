# reshape: x: (b, 4, s) flattened to (b, 4*s) and to (b*4, s).
# RUN: %PYTHON %S/../python/jax_exports.py reshape > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x4x3xf32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x4x3xf32>) -> (tensor<2x12xf32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK-DAG: %[[FLAT:.+]] = stablehlo.reshape %arg0 : (tensor<2x4x3xf32>) -> tensor<2x12xf32>
# CHECK-DAG: %[[ROWS:.+]] = stablehlo.reshape %arg0 : (tensor<2x4x3xf32>) -> tensor<8x3xf32>
# CHECK-DAG: %[[DOUBLE:.+]] = stablehlo.multiply %[[FLAT]], %{{.+}} : tensor<2x12xf32>
# CHECK-DAG: %[[SUM:.+]] = stablehlo.reduce(%[[ROWS]] init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<8xf32>
# CHECK: return %[[DOUBLE]], %[[SUM]] : tensor<2x12xf32>, tensor<8xf32>
