func.func @unchanged(%x: tensor<1x8x8x4xf32>, %dw: tensor<3x3x1x8xf32>, %w: tensor<3x3x4x4xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x6x6x4xf32>) {
  %0 = stablehlo.convolution(%x, %dw) dim_numbers = [b, 2147483648, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x1x8xf32>) -> tensor<1x6x6x8xf32>
  %1 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
  return %0, %1 : tensor<1x6x6x8xf32>, tensor<1x6x6x4xf32>
}
