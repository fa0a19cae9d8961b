func.func @reshape_to_batch(%arg0: tensor<?x4xf32>, %arg1: tensor<?xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : i64
  %d = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %n = arith.index_cast %d : index to i64
  %s = tensor.from_elements %n, %c4 : tensor<99999999999xi64>
  %r = stablehlo.dynamic_reshape %arg1, %s : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
