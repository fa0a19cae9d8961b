# iota: jnp.arange(n) for x: (n,), as weights and as a causal (n, n) mask.
# RUN: %PYTHON %S/../python/jax_exports.py iota > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<6xi32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<6xi32>) -> (tensor<6xi32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK: %[[IOTA:.+]] = stablehlo.iota dim = 0 : tensor<6xi32>
# CHECK: %[[MASK:.+]] = stablehlo.compare GE, %{{.+}}, %{{.+}}, SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
# CHECK: stablehlo.multiply %arg0, %{{.+}} : tensor<6xi32>
# CHECK: %[[PICK:.+]] = stablehlo.select %[[MASK]], %{{.+}}, %{{.+}} : tensor<6x6xi1>, tensor<6x6xi32>
# CHECK: %[[OUT:.+]] = stablehlo.reduce(%[[PICK]] init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<6x6xi32>, tensor<i32>) -> tensor<6xi32>
# CHECK: return %[[OUT]] : tensor<6xi32>
