# cumsum: jnp.cumsum along s for x: (b, s, 8). jax lowers it to a
# @stablehlo.dynamic_reduce_window custom_call with constant-foldable operands,
# which shlo-canonicalize-dynamic-reduce-window turns into stablehlo.reduce_window.
# RUN: %PYTHON %S/../python/jax_exports.py cumsum > %t.mlir
# RUN: shlo-opt %t.mlir --shlo-remove-dynamism='types=tensor<2x5x8xf32>' | FileCheck %s %{no-dynamism}

# CHECK-LABEL: func.func public @main(%arg0: tensor<2x5x8xf32>) -> (tensor<2x5x8xf32> {jax.result_info = "result"}) {
# CHECK-NOT: ?x
# CHECK-NOT: shape_assertion
# CHECK: reduce_window
# CHECK: return %{{.+}} : tensor<2x5x8xf32>
