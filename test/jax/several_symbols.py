# several symbols: x: (b, n) times w: (n, k), three independent dimension variables.
# RUN: %PYTHON %S/../python/jax_exports.py several_symbols > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<3x5xf32>,tensor<5x7xf32>' | FileCheck %s %{no-dynamism}

# Four shape assertions and three dimension arguments disappear; what is left
# is the matmul itself.
# CHECK-LABEL: func.func public @main(%arg0: tensor<3x5xf32>, %arg1: tensor<5x7xf32>) -> (tensor<3x7xf32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK-NEXT: %[[DOT:.+]] = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<3x5xf32>, tensor<5x7xf32>) -> tensor<3x7xf32>
# CHECK-NEXT: %[[TANH:.+]] = stablehlo.tanh %[[DOT]] : tensor<3x7xf32>
# CHECK-NEXT: return %[[TANH]] : tensor<3x7xf32>
# CHECK-NEXT: }
