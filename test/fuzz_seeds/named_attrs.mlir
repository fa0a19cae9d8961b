module @named attributes {mhlo.frontend = "jax"} {
  func.func public @main(%arg0: tensor<2x2xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}"}) -> (tensor<2x2xf32> {jax.result_info = "result"}) {
    %0 = call @helper(%arg0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %1 = stablehlo.iota dim = 0 : tensor<2x2xf32>
    %2 = stablehlo.add %0, %1 : tensor<2x2xf32>
    return %2 : tensor<2x2xf32>
  }
  func.func private @helper(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %0 = stablehlo.exponential %arg0 : tensor<2x2xf32>
    %1 = stablehlo.slice %0 [0:2, 0:2] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    return %1 : tensor<2x2xf32>
  }
}
