# slicing: x[:, 1:] - x[:, :-1] and x[:, 0] for x: (b, s); jax emits dynamic_gather.
# RUN: %PYTHON %S/../python/jax_exports.py slicing > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x6xf32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x6xf32>) -> (tensor<2x5xf32> {jax.result_info = "result[0]"}, tensor<2xf32> {jax.result_info = "result[1]"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK: %[[TAIL:.+]] = "stablehlo.gather"(%arg0, %{{.+}}) {{.+}} slice_sizes = array<i64: 2, 5>{{.+}} : (tensor<2x6xf32>, tensor<1xi32>) -> tensor<2x5xf32>
# CHECK: %[[HEAD:.+]] = "stablehlo.gather"(%arg0, %{{.+}}) {{.+}} slice_sizes = array<i64: 2, 5>{{.+}} : (tensor<2x6xf32>, tensor<1xi32>) -> tensor<2x5xf32>
# CHECK: %[[DIFF:.+]] = stablehlo.subtract %[[TAIL]], %[[HEAD]] : tensor<2x5xf32>
# CHECK: %[[FIRST:.+]] = "stablehlo.gather"(%arg0, %{{.+}}) {{.+}} slice_sizes = array<i64: 2, 1>{{.+}} : (tensor<2x6xf32>, tensor<1xi32>) -> tensor<2xf32>
# CHECK: return %[[DIFF]], %[[FIRST]] : tensor<2x5xf32>, tensor<2xf32>
