func.func @reduce_window(%p0: tensor<1024x520xf32>) -> tensor<1024x3xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %rw = "stablehlo.reduce_window"(%p0, %c) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: -9223372036854775808, 8>, window_strides = array<i64: 1, 256>} : (tensor<1024x520xf32>, tensor<f32>) -> tensor<1024x3xf32>
  return %rw : tensor<1024x3xf32>
}
