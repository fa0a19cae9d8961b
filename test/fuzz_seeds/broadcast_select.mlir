func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.convert %arg1 : (tensor<2x3xi32>) -> tensor<2x3xf32>
  %2 = stablehlo.compare GT, %0, %1, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %3 = stablehlo.select %2, %0, %1 : tensor<2x3xi1>, tensor<2x3xf32>
  %4 = stablehlo.reshape %3 : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %5 = stablehlo.transpose %4, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %5 : tensor<2x3xf32>
}
