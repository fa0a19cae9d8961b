func.func public @main(%arg0: tensor<i32>) -> tensor<i32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %0:2 = stablehlo.while(%iter = %c0, %acc = %arg0) : tensor<i32>, tensor<i32>
    cond {
    %c10 = stablehlo.constant dense<10> : tensor<i32>
    %1 = stablehlo.compare LT, %iter, %c10, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = stablehlo.add %iter, %c1 : tensor<i32>
    %2 = stablehlo.add %acc, %iter : tensor<i32>
    stablehlo.return %1, %2 : tensor<i32>, tensor<i32>
  }
  return %0#1 : tensor<i32>
}
