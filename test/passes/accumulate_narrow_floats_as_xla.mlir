// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-accumulate-narrow-floats-as-xla)' | FileCheck %s

// A gradient's bias sum: bf16 in, summed in f32, rounded once.
// CHECK-LABEL: func @bf16_sum
func.func @bf16_sum(%x: tensor<4096x4xbf16>) -> tensor<4xbf16> {
  // CHECK-DAG: %[[X:.+]] = stablehlo.convert %arg0 : (tensor<4096x4xbf16>) -> tensor<4096x4xf32>
  // CHECK-DAG: %[[I:.+]] = stablehlo.convert %{{.+}} : (tensor<bf16>) -> tensor<f32>
  // CHECK: %[[R:.+]] = stablehlo.reduce(%[[X]] init: %[[I]]) applies stablehlo.add across dimensions = [0] : (tensor<4096x4xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: %[[N:.+]] = stablehlo.convert %[[R]] : (tensor<4xf32>) -> tensor<4xbf16>
  // CHECK: return %[[N]]
  %zero = stablehlo.constant dense<0.0> : tensor<bf16>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0]
      : (tensor<4096x4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: func @f16_sum
func.func @f16_sum(%x: tensor<8x3xf16>) -> tensor<8xf16> {
  // CHECK: stablehlo.reduce(%{{.+}} init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<8xf32>
  // CHECK: stablehlo.convert %{{.+}} : (tensor<8xf32>) -> tensor<8xf16>
  %zero = stablehlo.constant dense<0.0> : tensor<f16>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1]
      : (tensor<8x3xf16>, tensor<f16>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

// Products, maxima and f32 sums keep their element type.
// CHECK-LABEL: func @others_stay
func.func @others_stay(%x: tensor<8x3xbf16>, %y: tensor<8x3xf32>) -> (tensor<3xbf16>, tensor<3xbf16>, tensor<3xf32>) {
  // CHECK-NOT: stablehlo.convert
  // CHECK: stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.multiply across dimensions = [0] : (tensor<8x3xbf16>, tensor<bf16>) -> tensor<3xbf16>
  // CHECK: stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.maximum across dimensions = [0] : (tensor<8x3xbf16>, tensor<bf16>) -> tensor<3xbf16>
  // CHECK: stablehlo.reduce(%arg1 init: %{{.+}}) applies stablehlo.add across dimensions = [0] : (tensor<8x3xf32>, tensor<f32>) -> tensor<3xf32>
  %one = stablehlo.constant dense<1.0> : tensor<bf16>
  %low = stablehlo.constant dense<0xFF80> : tensor<bf16>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %one) applies stablehlo.multiply across dimensions = [0]
      : (tensor<8x3xbf16>, tensor<bf16>) -> tensor<3xbf16>
  %1 = stablehlo.reduce(%x init: %low) applies stablehlo.maximum across dimensions = [0]
      : (tensor<8x3xbf16>, tensor<bf16>) -> tensor<3xbf16>
  %2 = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [0]
      : (tensor<8x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xbf16>, tensor<3xbf16>, tensor<3xf32>
}

// -----

// jnp.cumsum of 40: blocks of 16 (the last padded with zeros), each scanned;
// the block totals scanned; each block adds the totals before it.
// CHECK-LABEL: func @bf16_cumsum
func.func @bf16_cumsum(%x: tensor<40xbf16>) -> tensor<40xbf16> {
  // CHECK: %[[ZERO:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
  // CHECK: %[[PADDED:.+]] = stablehlo.pad %arg0, %[[ZERO]], low = [0], high = [8], interior = [0] : (tensor<40xbf16>, tensor<bf16>) -> tensor<48xbf16>
  // CHECK: %[[TILED:.+]] = stablehlo.reshape %[[PADDED]] : (tensor<48xbf16>) -> tensor<3x16xbf16>
  // CHECK: %[[INNER:.+]] = "stablehlo.reduce_window"(%[[TILED]], %[[ZERO]]) <{padding = dense<{{\[\[}}0, 0], [15, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 16>}>
  // CHECK: %[[LAST:.+]] = stablehlo.pad %[[INNER]], %[[ZERO]], low = [0, -15], high = [0, 0]
  // CHECK: %[[TOTALS:.+]] = stablehlo.reshape %[[LAST]] : (tensor<3x1xbf16>) -> tensor<3xbf16>
  // CHECK: %[[SCANNED:.+]] = "stablehlo.reduce_window"(%[[TOTALS]], %[[ZERO]]) <{padding = dense<{{\[\[}}2, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 3>}>
  // CHECK: %[[BEFORE:.+]] = stablehlo.pad %[[SCANNED]], %[[ZERO]], low = [1], high = [-1]
  // CHECK: %[[SPREAD:.+]] = stablehlo.broadcast_in_dim %[[BEFORE]], dims = [0] : (tensor<3xbf16>) -> tensor<3x16xbf16>
  // CHECK: %[[SUM:.+]] = stablehlo.add %[[SPREAD]], %[[INNER]] : tensor<3x16xbf16>
  // CHECK: %[[FLAT:.+]] = stablehlo.reshape %[[SUM]] : (tensor<3x16xbf16>) -> tensor<48xbf16>
  // CHECK: %[[R:.+]] = stablehlo.pad %[[FLAT]], %[[ZERO]], low = [0], high = [-8], interior = [0] : (tensor<48xbf16>, tensor<bf16>) -> tensor<40xbf16>
  // CHECK: return %[[R]]
  %zero = stablehlo.constant dense<0.0> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[39, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 40>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %s = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %s : tensor<bf16>
  }) : (tensor<40xbf16>, tensor<bf16>) -> tensor<40xbf16>
  return %0 : tensor<40xbf16>
}

// -----

// A cumsum of 16 stays one scan, as XLA keeps it (the conformance data's).
// CHECK-LABEL: func @bf16_short_cumsum
func.func @bf16_short_cumsum(%x: tensor<16xbf16>) -> tensor<16xbf16> {
  // CHECK-NOT: stablehlo.pad
  // CHECK: "stablehlo.reduce_window"(%arg0
  // CHECK: (tensor<16xbf16>, tensor<bf16>) -> tensor<16xbf16>
  %zero = stablehlo.constant dense<0.0> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[15, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 16>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %s = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %s : tensor<bf16>
  }) : (tensor<16xbf16>, tensor<bf16>) -> tensor<16xbf16>
  return %0 : tensor<16xbf16>
}

// -----

// A sum pool keeps bf16, as XLA computes it.
// CHECK-LABEL: func @bf16_sum_pool
func.func @bf16_sum_pool(%x: tensor<4096xbf16>) -> tensor<4xbf16> {
  // CHECK-NOT: stablehlo.convert
  // CHECK: (tensor<4096xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %zero = stablehlo.constant dense<0.0> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{window_dimensions = array<i64: 1024>, window_strides = array<i64: 1024>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %s = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %s : tensor<bf16>
  }) : (tensor<4096xbf16>, tensor<bf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: func @bf16_convolution
func.func @bf16_convolution(%x: tensor<1x8x8x1024xbf16>, %w: tensor<3x3x1024x4xbf16>) -> tensor<1x6x6x4xbf16> {
  // CHECK-DAG: stablehlo.convert %arg0 : (tensor<1x8x8x1024xbf16>) -> tensor<1x8x8x1024xf32>
  // CHECK-DAG: stablehlo.convert %arg1 : (tensor<3x3x1024x4xbf16>) -> tensor<3x3x1024x4xf32>
  // CHECK: %[[C:.+]] = stablehlo.convolution
  // CHECK-SAME: (tensor<1x8x8x1024xf32>, tensor<3x3x1024x4xf32>) -> tensor<1x6x6x4xf32>
  // CHECK: stablehlo.convert %[[C]] : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xbf16>
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x8x8x1024xbf16>, tensor<3x3x1024x4xbf16>) -> tensor<1x6x6x4xbf16>
  return %0 : tensor<1x6x6x4xbf16>
}
