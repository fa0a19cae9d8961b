// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-rng)' | FileCheck %s

// THREE_FRY: key = state[0], counter = state[1]; one counter per element.
// CHECK-LABEL: func @three_fry
func.func @three_fry(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>) {
  // CHECK: %[[K1:.+]] = stablehlo.slice %arg0 [0:1]
  // CHECK: %[[KEY:.+]] = stablehlo.reshape %[[K1]] : (tensor<1xui64>) -> tensor<ui64>
  // CHECK: %[[C1:.+]] = stablehlo.slice %arg0 [1:2]
  // CHECK: %[[COUNTER:.+]] = stablehlo.reshape %[[C1]] : (tensor<1xui64>) -> tensor<ui64>
  // CHECK: %[[BASE:.+]] = stablehlo.broadcast_in_dim %[[COUNTER]], dims = [] : (tensor<ui64>) -> tensor<4xui64>
  // CHECK: %[[IOTA:.+]] = stablehlo.iota dim = 0 : tensor<4xui64>
  // CHECK: stablehlo.add %[[BASE]], %[[IOTA]] : tensor<4xui64>
  // CHECK: %[[FOUR:.+]] = stablehlo.constant dense<4> : tensor<ui64>
  // CHECK: %[[NEXT:.+]] = stablehlo.add %[[COUNTER]], %[[FOUR]] : tensor<ui64>
  // The Threefry key schedule's parity constant, 0x1BD11BDA.
  // CHECK: stablehlo.constant dense<466688986> : tensor<ui32>
  // The first rotation, by 13 bits.
  // CHECK: stablehlo.constant dense<13> : tensor<4xui32>
  // CHECK: stablehlo.shift_left
  // CHECK: stablehlo.constant dense<19> : tensor<4xui32>
  // CHECK: stablehlo.shift_right_logical
  // CHECK: %[[BITS:.+]] = stablehlo.or %{{.+}}, %{{.+}} : tensor<4xui64>
  // CHECK: %[[KEY1:.+]] = stablehlo.reshape %[[KEY]] : (tensor<ui64>) -> tensor<1xui64>
  // CHECK: %[[NEXT1:.+]] = stablehlo.reshape %[[NEXT]] : (tensor<ui64>) -> tensor<1xui64>
  // CHECK: %[[STATE:.+]] = stablehlo.concatenate %[[KEY1]], %[[NEXT1]], dim = 0
  // CHECK: return %[[STATE]], %[[BITS]]
  // CHECK-NOT: rng_bit_generator
  %0:2 = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
  return %0#0, %0#1 : tensor<2xui64>, tensor<4xui64>
}

// -----

// PHILOX with a 3-element state: a 128-bit counter in state[1:3]. Each block's
// four words, as two ui64 pairs, are interleaved, and the 8 outputs of two
// blocks are sliced to 5.
// CHECK-LABEL: func @philox
func.func @philox(%s: tensor<3xui64>) -> (tensor<3xui64>, tensor<5xui32>) {
  // CHECK: stablehlo.slice %arg0 [2:3]
  // CHECK: stablehlo.iota dim = 0 : tensor<2xui64>
  // CHECK: stablehlo.compare LT, %{{.+}}, %{{.+}}, UNSIGNED
  // The Philox multipliers 0xD2511F53 and 0xCD9E8D57.
  // CHECK: stablehlo.constant dense<3528531795> : tensor<2xui64>
  // CHECK: stablehlo.constant dense<3449720151> : tensor<2xui64>
  // CHECK: %[[COLUMN:.+]] = stablehlo.iota dim = 1 : tensor<2x2xui64>
  // CHECK: %[[FIRST:.+]] = stablehlo.compare EQ, %[[COLUMN]]
  // CHECK: %[[P01:.+]] = stablehlo.broadcast_in_dim %{{.+}}, dims = [0] : (tensor<2xui64>) -> tensor<2x2xui64>
  // CHECK: %[[P23:.+]] = stablehlo.broadcast_in_dim %{{.+}}, dims = [0] : (tensor<2xui64>) -> tensor<2x2xui64>
  // CHECK: stablehlo.select %[[FIRST]], %[[P01]], %[[P23]]
  // CHECK: %[[WORDS:.+]] = stablehlo.concatenate %{{.+}}, %{{.+}}, dim = 2 : {{.*}} -> tensor<2x2x2xui32>
  // CHECK: %[[FLAT:.+]] = stablehlo.reshape %[[WORDS]] : (tensor<2x2x2xui32>) -> tensor<8xui32>
  // CHECK: %[[BITS:.+]] = stablehlo.slice %[[FLAT]] [0:5]
  // CHECK: %[[STATE:.+]] = stablehlo.concatenate %{{.+}}, %{{.+}}, %{{.+}}, dim = 0 : {{.*}} -> tensor<3xui64>
  // CHECK: return %[[STATE]], %[[BITS]]
  %0:2 = stablehlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<5xui32>)
  return %0#0, %0#1 : tensor<3xui64>, tensor<5xui32>
}

// -----

// Narrow and float outputs: the low bits of 32-bit outputs, bitcast.
// CHECK-LABEL: func @bf16_output
func.func @bf16_output(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<3xbf16>) {
  // CHECK: %[[MASK:.+]] = stablehlo.constant dense<65535> : tensor<3xui32>
  // CHECK: %[[LOW:.+]] = stablehlo.and %{{.+}}, %[[MASK]] : tensor<3xui32>
  // CHECK: %[[U16:.+]] = stablehlo.convert %[[LOW]] : (tensor<3xui32>) -> tensor<3xui16>
  // CHECK: %[[R:.+]] = stablehlo.bitcast_convert %[[U16]] : (tensor<3xui16>) -> tensor<3xbf16>
  // CHECK: return %{{.+}}, %[[R]]
  %0:2 = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xbf16>)
  return %0#0, %0#1 : tensor<2xui64>, tensor<3xbf16>
}

// -----

// stablehlo.rng UNIFORM on f32: Philox bits under a fixed key, the top 23 bits
// scaled to [0, 1), then to [a, b).
// CHECK-LABEL: func @rng_uniform
func.func @rng_uniform(%a: tensor<f32>, %b: tensor<f32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<4> : tensor<1xi64>
  // CHECK: stablehlo.constant dense<2611923443488327891> : tensor<ui64>
  // CHECK: %[[SHIFT:.+]] = stablehlo.constant dense<9> : tensor<4xui32>
  // CHECK: %[[TOP:.+]] = stablehlo.shift_right_logical %{{.+}}, %[[SHIFT]] : tensor<4xui32>
  // CHECK: %[[F:.+]] = stablehlo.convert %[[TOP]] : (tensor<4xui32>) -> tensor<4xf32>
  // CHECK: %[[ULP:.+]] = stablehlo.constant dense<1.1920929E-7> : tensor<4xf32>
  // CHECK: %[[UNIT:.+]] = stablehlo.multiply %[[F]], %[[ULP]]
  // CHECK: %[[SPAN:.+]] = stablehlo.subtract %arg1, %arg0 : tensor<f32>
  // CHECK: %[[SPANS:.+]] = stablehlo.broadcast_in_dim %[[SPAN]]
  // CHECK: %[[SCALED:.+]] = stablehlo.multiply %[[UNIT]], %[[SPANS]]
  // CHECK: %[[A:.+]] = stablehlo.broadcast_in_dim %arg0
  // CHECK: %[[R:.+]] = stablehlo.add %[[SCALED]], %[[A]]
  // CHECK: return %[[R]]
  // CHECK-NOT: stablehlo.rng
  %0 = stablehlo.rng %a, %b, %c, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// stablehlo.rng NORMAL: Box-Muller.
// CHECK-LABEL: func @rng_normal
func.func @rng_normal(%a: tensor<f64>, %b: tensor<f64>) -> tensor<3xf64> {
  %c = stablehlo.constant dense<3> : tensor<1xi64>
  // CHECK: stablehlo.log
  // CHECK: stablehlo.sqrt
  // CHECK: stablehlo.sine
  // CHECK: stablehlo.cosine
  // CHECK-NOT: stablehlo.rng
  %0 = stablehlo.rng %a, %b, %c, distribution = NORMAL : (tensor<f64>, tensor<f64>, tensor<1xi64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// -----

func.func @u32_state(%s: tensor<4xui32>) -> (tensor<4xui32>, tensor<4xui32>) {
  // expected-error@+1 {{expected a 64-bit integer initial_state, got ui32}}
  %0:2 = stablehlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<4xui32>) -> (tensor<4xui32>, tensor<4xui32>)
  return %0#0, %0#1 : tensor<4xui32>, tensor<4xui32>
}
