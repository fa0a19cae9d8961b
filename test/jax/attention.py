# attention: softmax(q k^T / sqrt(d)) v with q, k, v: (b, s, 16).
# The text form and, through stdin, the portable artifact jax serializes.
# RUN: %PYTHON %S/../python/jax_exports.py attention > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x10x16xf32>,tensor<2x10x16xf32>,tensor<2x10x16xf32>' | FileCheck %s %{no-dynamism}
# RUN: %PYTHON %S/../python/jax_exports.py attention --serialized \
# RUN:   | shlo-opt - --shlo-remove-dynamism='types=tensor<1x3x16xf32>,tensor<1x3x16xf32>,tensor<1x3x16xf32>' \
# RUN:   | FileCheck %s %{no-dynamism} --check-prefix=ARTIFACT

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x10x16xf32>, %arg1: tensor<2x10x16xf32>, %arg2: tensor<2x10x16xf32>) -> (tensor<2x10x16xf32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK-DAG: %[[SQRT_D:.+]] = stablehlo.constant dense<4.000000e+00> : tensor<2x10x10xf32>
# CHECK: %[[QK:.+]] = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x10x16xf32>, tensor<2x10x16xf32>) -> tensor<2x10x10xf32>
# CHECK: %[[SCORES:.+]] = stablehlo.divide %[[QK]], %[[SQRT_D]] : tensor<2x10x10xf32>
# CHECK: stablehlo.reduce(%[[SCORES]] init: %{{.+}}) applies stablehlo.maximum across dimensions = [2] : (tensor<2x10x10xf32>, tensor<f32>) -> tensor<2x10xf32>
# CHECK: %[[EXP:.+]] = stablehlo.exponential %{{.+}} : tensor<2x10x10xf32>
# CHECK: %[[PROBS:.+]] = stablehlo.divide %[[EXP]], %{{.+}} : tensor<2x10x10xf32>
# CHECK: %[[OUT:.+]] = stablehlo.dot_general %[[PROBS]], %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x10x10xf32>, tensor<2x10x16xf32>) -> tensor<2x10x16xf32>
# CHECK: return %[[OUT]] : tensor<2x10x16xf32>

# ARTIFACT-LABEL: func.func public @main(%arg0: tensor<1x3x16xf32>, %arg1: tensor<1x3x16xf32>, %arg2: tensor<1x3x16xf32>) -> (tensor<1x3x16xf32> {jax.result_info = "result"}) {
# ARTIFACT: stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<1x3x16xf32>, tensor<1x3x16xf32>) -> tensor<1x3x3xf32>
# ARTIFACT: stablehlo.dot_general %{{.+}}, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<1x3x3xf32>, tensor<1x3x16xf32>) -> tensor<1x3x16xf32>
