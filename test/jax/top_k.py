# top_k: jax.lax.top_k(x, 2) for x: (b, 5). jax emits a stablehlo.composite
# "chlo.top_k" whose decomposition function is shape-polymorphic too.
# RUN: %PYTHON %S/../python/jax_exports.py top_k > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<3x5xf32>' | FileCheck %s %{no-dynamism}

# The decomposition's dynamic_iota and real_dynamic_slices are static too.
# CHECK-LABEL: func.func public @main(%arg0: tensor<3x5xf32>) -> (tensor<3x2xf32> {jax.result_info = "result[0]"}, tensor<3x2xi32> {jax.result_info = "result[1]"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK: %[[POS:.+]] = stablehlo.iota dim = 1 : tensor<3x5xi32>
# CHECK: %[[SORTED:.+]]:2 = "stablehlo.sort"(%arg0, %[[POS]])
# CHECK: }) : (tensor<3x5xf32>, tensor<3x5xi32>) -> (tensor<3x5xf32>, tensor<3x5xi32>)
# CHECK: %[[VALUES:.+]] = stablehlo.slice %[[SORTED]]#0 [0:3, 0:2] : (tensor<3x5xf32>) -> tensor<3x2xf32>
# CHECK: %[[INDICES:.+]] = stablehlo.slice %[[SORTED]]#1 [0:3, 0:2] : (tensor<3x5xi32>) -> tensor<3x2xi32>
# CHECK: return %[[VALUES]], %[[INDICES]] : tensor<3x2xf32>, tensor<3x2xi32>
