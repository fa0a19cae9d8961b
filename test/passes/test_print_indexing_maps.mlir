// RUN: shlo-opt %s --split-input-file --shlo-test-print-indexing-maps | FileCheck %s
// RUN: shlo-opt %s --split-input-file --shlo-test-print-indexing-maps='input-to-output=true' | FileCheck %s --check-prefix=I2O
// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-test-print-indexing-maps{fusion=true})' | FileCheck %s --check-prefix=FUSION

// The examples of XLA's indexing-analysis document, in StableHLO.

// CHECK-LABEL: indexing maps of @elementwise
// CHECK-NEXT:  %0 = stablehlo.add
// CHECK-NEXT:  result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1) -> (d0, d1)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 9]
// CHECK-NEXT:  d1 in [0, 19]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0, d1) -> (d0, d1)
// I2O-LABEL:   indexing maps of @elementwise
// I2O:         operand 1 -> result 0:
// I2O-NEXT:    (d0, d1) -> (d0, d1)
func.func @elementwise(%p0: tensor<10x20xf32>, %p1: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %add = stablehlo.add %p0, %p1 : tensor<10x20xf32>
  return %add : tensor<10x20xf32>
}

// -----

// CHECK-LABEL: indexing maps of @broadcast
// CHECK-NEXT:  %0 = stablehlo.broadcast_in_dim
// CHECK-NEXT:  result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1, d2) -> (d1)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 9]
// CHECK-NEXT:  d1 in [0, 19]
// CHECK-NEXT:  d2 in [0, 29]
// I2O-LABEL:   indexing maps of @broadcast
// I2O:         operand 0 -> result 0:
// I2O-NEXT:    (d0)[s0, s1] -> (s0, d0, s1)
// I2O-NEXT:    domain:
// I2O-NEXT:    d0 in [0, 19]
// I2O-NEXT:    s0 in [0, 9]
// I2O-NEXT:    s1 in [0, 29]
func.func @broadcast(%p0: tensor<20xf32>) -> tensor<10x20x30xf32> {
  %bc0 = stablehlo.broadcast_in_dim %p0, dims = [1] : (tensor<20xf32>) -> tensor<10x20x30xf32>
  return %bc0 : tensor<10x20x30xf32>
}

// -----

// CHECK-LABEL: indexing maps of @constant_and_iota
// CHECK-NEXT:  %{{.+}} = stablehlo.constant
// CHECK-NEXT:  no operands
// CHECK-NEXT:  %{{.+}} = stablehlo.iota
// CHECK-NEXT:  no operands
func.func @constant_and_iota() -> (tensor<4xf32>, tensor<4xi32>) {
  %c = stablehlo.constant dense<1.0> : tensor<4xf32>
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  return %c, %i : tensor<4xf32>, tensor<4xi32>
}

// -----

// CHECK-LABEL: indexing maps of @transpose
// CHECK:       (d0, d1, d2, d3) -> (d0, d3, d1, d2)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 2]
// CHECK-NEXT:  d1 in [0, 5]
// CHECK-NEXT:  d2 in [0, 127]
// CHECK-NEXT:  d3 in [0, 12287]
// I2O-LABEL:   indexing maps of @transpose
// I2O:         (d0, d1, d2, d3) -> (d0, d2, d3, d1)
// I2O-NEXT:    domain:
// I2O-NEXT:    d0 in [0, 2]
// I2O-NEXT:    d1 in [0, 12287]
func.func @transpose(%p0: tensor<3x12288x6x128xf32>) -> tensor<3x6x128x12288xf32> {
  %transpose = stablehlo.transpose %p0, dims = [0, 2, 3, 1] : (tensor<3x12288x6x128xf32>) -> tensor<3x6x128x12288xf32>
  return %transpose : tensor<3x6x128x12288xf32>
}

// -----

// CHECK-LABEL: indexing maps of @reverse
// CHECK:       (d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 0]
// CHECK-NEXT:  d1 in [0, 16]
// CHECK-NEXT:  d2 in [0, 8]
// CHECK-NEXT:  d3 in [0, 8]
// I2O-LABEL:   indexing maps of @reverse
// I2O:         (d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3)
func.func @reverse(%p0: tensor<1x17x9x9xf32>) -> tensor<1x17x9x9xf32> {
  %reverse = stablehlo.reverse %p0, dims = [1, 2] : tensor<1x17x9x9xf32>
  return %reverse : tensor<1x17x9x9xf32>
}

// -----

// CHECK-LABEL: indexing maps of @variadic_reduce
// CHECK:       %{{.+}}#0, %{{.+}}#1 = stablehlo.reduce
// CHECK-NEXT:  result 0 -> operand 0:
// CHECK-NEXT:  (d0)[s0] -> (s0, d0)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 9]
// CHECK-NEXT:  s0 in [0, 255]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0)[s0] -> (s0, d0)
// CHECK:       result 0 -> operand 2:
// CHECK-NEXT:  (d0) -> ()
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 9]
// CHECK:       result 1 -> operand 3:
// CHECK-NEXT:  (d0) -> ()
// I2O-LABEL:   indexing maps of @variadic_reduce
// I2O:         operand 0 -> result 0:
// I2O-NEXT:    (d0, d1) -> (d1)
// I2O-NEXT:    domain:
// I2O-NEXT:    d0 in [0, 255]
// I2O-NEXT:    d1 in [0, 9]
// I2O:         operand 2 -> result 0:
// I2O-NEXT:    ()[s0] -> (s0)
// I2O-NEXT:    domain:
// I2O-NEXT:    s0 in [0, 9]
func.func @variadic_reduce(%p0: tensor<256x10xf32>, %p1: tensor<256x10xi32>) -> (tensor<10xf32>, tensor<10xi32>) {
  %p0_init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p1_init = stablehlo.constant dense<0> : tensor<i32>
  %reduce:2 = stablehlo.reduce(%p0 init: %p0_init), (%p1 init: %p1_init) across dimensions = [0] : (tensor<256x10xf32>, tensor<256x10xi32>, tensor<f32>, tensor<i32>) -> (tensor<10xf32>, tensor<10xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
      %m = stablehlo.minimum %a, %b : tensor<f32>
      %n = stablehlo.minimum %c, %d : tensor<i32>
      stablehlo.return %m, %n : tensor<f32>, tensor<i32>
    }
  return %reduce#0, %reduce#1 : tensor<10xf32>, tensor<10xi32>
}

// -----

// CHECK-LABEL: indexing maps of @slice
// CHECK:       (d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 4]
// CHECK-NEXT:  d1 in [0, 2]
// CHECK-NEXT:  d2 in [0, 24]
// I2O-LABEL:   indexing maps of @slice
// I2O:         (d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2)
// I2O-NEXT:    domain:
// I2O-NEXT:    d0 in [5, 9]
// I2O-NEXT:    d1 in [3, 17]
// I2O-NEXT:    d2 in [0, 48]
// I2O-NEXT:    (d1 - 3) mod 7 in [0, 0]
// I2O-NEXT:    d2 mod 2 in [0, 0]
func.func @slice(%p0: tensor<10x20x50xf32>) -> tensor<5x3x25xf32> {
  %slice = stablehlo.slice %p0 [5:10, 3:20:7, 0:50:2] : (tensor<10x20x50xf32>) -> tensor<5x3x25xf32>
  return %slice : tensor<5x3x25xf32>
}

// -----

// CHECK-LABEL: indexing maps of @reshapes
// CHECK:       (d0) -> (d0 floordiv 8, d0 mod 8)
// CHECK:       (d0, d1) -> (d0 * 8 + d1)
// CHECK:       (d0, d1, d2) -> (d0 * 2 + (d1 * 4 + d2) floordiv 8, (d1 * 4 + d2) mod 8)
// CHECK:       (d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2)
// I2O-LABEL:   indexing maps of @reshapes
// I2O:         (d0, d1) -> (d0 * 8 + d1)
// I2O:         (d0) -> (d0 floordiv 8, d0 mod 8)
// I2O:         (d0, d1) -> ((d0 * 8 + d1) floordiv 16, ((d0 * 8 + d1) mod 16) floordiv 4, d1 mod 4)
// I2O:         (d0, d1, d2) -> (d0 * 8 + d1, d2 floordiv 4, d2 mod 4)
func.func @reshapes(%a: tensor<4x8xf32>, %b: tensor<32xf32>, %c: tensor<4x8x12xf32>) -> (tensor<32xf32>, tensor<4x8xf32>, tensor<2x4x4xf32>, tensor<32x3x4xf32>) {
  %collapse = stablehlo.reshape %a : (tensor<4x8xf32>) -> tensor<32xf32>
  %expand = stablehlo.reshape %b : (tensor<32xf32>) -> tensor<4x8xf32>
  %general1 = stablehlo.reshape %a : (tensor<4x8xf32>) -> tensor<2x4x4xf32>
  %general2 = stablehlo.reshape %c : (tensor<4x8x12xf32>) -> tensor<32x3x4xf32>
  return %collapse, %expand, %general1, %general2 : tensor<32xf32>, tensor<4x8xf32>, tensor<2x4x4xf32>, tensor<32x3x4xf32>
}

// -----

// CHECK-LABEL: indexing maps of @bitcast_convert
// CHECK:       result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1) -> (d0)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 5]
// CHECK-NEXT:  d1 in [0, 3]
// CHECK:       result 0 -> operand 0:
// CHECK-NEXT:  (d0)[s0] -> (d0, s0)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 5]
// CHECK-NEXT:  s0 in [0, 3]
func.func @bitcast_convert(%x: tensor<6xf32>) -> tensor<6xi32> {
  %bytes = stablehlo.bitcast_convert %x : (tensor<6xf32>) -> tensor<6x4xi8>
  %word = stablehlo.bitcast_convert %bytes : (tensor<6x4xi8>) -> tensor<6xi32>
  return %word : tensor<6xi32>
}

// -----

// CHECK-LABEL: indexing maps of @concatenate
// CHECK:       result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1) -> (d0, d1)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 2]
// CHECK-NEXT:  d1 in [0, 49]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0, d1) -> (d0, d1 - 50)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 2]
// CHECK-NEXT:  d1 in [50, 79]
// I2O-LABEL:   indexing maps of @concatenate
// I2O:         operand 1 -> result 0:
// I2O-NEXT:    (d0, d1) -> (d0, d1 + 50)
// I2O-NEXT:    domain:
// I2O-NEXT:    d0 in [0, 2]
// I2O-NEXT:    d1 in [0, 29]
func.func @concatenate(%p0: tensor<3x50xf32>, %p1: tensor<3x30xf32>) -> tensor<3x80xf32> {
  %concat = stablehlo.concatenate %p0, %p1, dim = 1 : (tensor<3x50xf32>, tensor<3x30xf32>) -> tensor<3x80xf32>
  return %concat : tensor<3x80xf32>
}

// -----

// CHECK-LABEL: indexing maps of @dot
// CHECK:       result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1, d2)[s0] -> (d0, d1, s0)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 3]
// CHECK-NEXT:  d1 in [0, 127]
// CHECK-NEXT:  d2 in [0, 63]
// CHECK-NEXT:  s0 in [0, 255]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0, d1, d2)[s0] -> (d0, s0, d2)
// I2O-LABEL:   indexing maps of @dot
// I2O:         operand 0 -> result 0:
// I2O-NEXT:    (d0, d1, d2)[s0] -> (d0, d1, s0)
// I2O:         s0 in [0, 63]
// I2O-NEXT:    operand 1 -> result 0:
// I2O-NEXT:    (d0, d1, d2)[s0] -> (d0, s0, d2)
// I2O:         s0 in [0, 127]
func.func @dot(%p0: tensor<4x128x256xf32>, %p1: tensor<4x256x64xf32>) -> tensor<4x128x64xf32> {
  %dot = stablehlo.dot_general %p0, %p1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x128x256xf32>, tensor<4x256x64xf32>) -> tensor<4x128x64xf32>
  return %dot : tensor<4x128x64xf32>
}

// -----

// The seed leaves these "TBD"; docs/indexing.md derives them.

// CHECK-LABEL: indexing maps of @pad
// CHECK-NEXT:  %0 = stablehlo.pad
// CHECK-NEXT:  result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [1, 7]
// CHECK-NEXT:  d1 in [4, 7]
// CHECK-NEXT:  (d0 - 1) mod 2 in [0, 0]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0, d1) -> ()
func.func @pad(%p0: tensor<4x4xf32>, %p1: tensor<f32>) -> tensor<12x16xf32> {
  %pad = stablehlo.pad %p0, %p1, low = [1, 4], high = [4, 8], interior = [1, 0] : (tensor<4x4xf32>, tensor<f32>) -> tensor<12x16xf32>
  return %pad : tensor<12x16xf32>
}

// -----

// CHECK-LABEL: indexing maps of @reduce_window
// CHECK:       result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1)[s0] -> (d0, d1 * 256 + s0)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 1023]
// CHECK-NEXT:  d1 in [0, 2]
// CHECK-NEXT:  s0 in [0, 7]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0, d1) -> ()
func.func @reduce_window(%p0: tensor<1024x520xf32>) -> tensor<1024x3xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %rw = "stablehlo.reduce_window"(%p0, %c) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 1, 8>, window_strides = array<i64: 1, 256>} : (tensor<1024x520xf32>, tensor<f32>) -> tensor<1024x3xf32>
  return %rw : tensor<1024x3xf32>
}

// -----

// CHECK-LABEL: indexing maps of @gather
// CHECK-NEXT:  %0 = stablehlo.gather
// CHECK-NEXT:  result 0 -> operand 0:
// CHECK-NEXT:  (d0, d1, d2, d3)[s0, s1] -> (d1 + s0, d2 + s1, d3)
// CHECK-NEXT:  domain:
// CHECK-NEXT:  d0 in [0, 1805]
// CHECK-NEXT:  d1 in [0, 6]
// CHECK-NEXT:  d2 in [0, 7]
// CHECK-NEXT:  d3 in [0, 3]
// CHECK-NEXT:  s0 in [0, 26]
// CHECK-NEXT:  s1 in [0, 68]
// CHECK-NEXT:  result 0 -> operand 1:
// CHECK-NEXT:  (d0, d1, d2, d3)[s0] -> (d0, s0)
func.func @gather(%operand: tensor<33x76x70xf32>, %indices: tensor<1806x2xi32>) -> tensor<1806x7x8x4xf32> {
  %gather = "stablehlo.gather"(%operand, %indices) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2, 3], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 7, 8, 4>} : (tensor<33x76x70xf32>, tensor<1806x2xi32>) -> tensor<1806x7x8x4xf32>
  return %gather : tensor<1806x7x8x4xf32>
}

// -----

// CHECK-LABEL: indexing maps of @no_rule
// CHECK-NEXT:  %0 = stablehlo.sort
// CHECK-NEXT:  no indexing rule
func.func @no_rule(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.sort"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Fusions: the maps of the function's result to each argument.

// FUSION-LABEL: indexing maps of @p0_plus_transpose
// FUSION:       fusion: result 0 -> %arg0:
// FUSION-NEXT:  (d0, d1) -> (d0, d1)
// FUSION-NEXT:  domain:
// FUSION-NEXT:  d0 in [0, 999]
// FUSION-NEXT:  d1 in [0, 999]
// FUSION-NEXT:  fusion: result 0 -> %arg0:
// FUSION-NEXT:  (d0, d1) -> (d1, d0)
func.func @p0_plus_transpose(%p0: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> {
  %transpose_p0 = stablehlo.transpose %p0, dims = [1, 0] : (tensor<1000x1000xf32>) -> tensor<1000x1000xf32>
  %a0 = stablehlo.add %p0, %transpose_p0 : tensor<1000x1000xf32>
  return %a0 : tensor<1000x1000xf32>
}

// -----

// FUSION-LABEL: indexing maps of @dedup
// FUSION:       fusion: result 0 -> %arg0:
// FUSION-NEXT:  (d0, d1, d2) -> (d2, d0, d1)
// FUSION-NEXT:  domain:
// FUSION-NEXT:  d0 in [0, 9]
// FUSION-NEXT:  d1 in [0, 49]
// FUSION-NEXT:  d2 in [0, 19]
// FUSION-NOT:   fusion:
func.func @dedup(%p0: tensor<20x10x50xf32>) -> tensor<10x50x20xf32> {
  %lhs_transpose_1 = stablehlo.transpose %p0, dims = [1, 0, 2] : (tensor<20x10x50xf32>) -> tensor<10x20x50xf32>
  %lhs_e = stablehlo.exponential %lhs_transpose_1 : tensor<10x20x50xf32>
  %lhs_transpose_2 = stablehlo.transpose %lhs_e, dims = [0, 2, 1] : (tensor<10x20x50xf32>) -> tensor<10x50x20xf32>
  %rhs_transpose_1 = stablehlo.transpose %p0, dims = [2, 1, 0] : (tensor<20x10x50xf32>) -> tensor<50x10x20xf32>
  %rhs_log = stablehlo.exponential %rhs_transpose_1 : tensor<50x10x20xf32>
  %rhs_transpose_2 = stablehlo.transpose %rhs_log, dims = [1, 0, 2] : (tensor<50x10x20xf32>) -> tensor<10x50x20xf32>
  %add = stablehlo.add %lhs_transpose_2, %rhs_transpose_2 : tensor<10x50x20xf32>
  return %add : tensor<10x50x20xf32>
}

// -----

// FUSION-LABEL: indexing maps of @softmax
// FUSION:       fusion: result 0 -> %arg0:
// FUSION-NEXT:  (d0, d1, d2) -> (d0, d1, d2)
// FUSION-NEXT:  domain:
// FUSION-NEXT:  d0 in [0, 1]
// FUSION-NEXT:  d1 in [0, 64]
// FUSION-NEXT:  d2 in [0, 124]
// FUSION-NEXT:  fusion: result 0 -> %arg0:
// FUSION-NEXT:  (d0, d1, d2)[s0] -> (d0, d1, s0)
// FUSION-NEXT:  domain:
// FUSION-NEXT:  d0 in [0, 1]
// FUSION-NEXT:  d1 in [0, 64]
// FUSION-NEXT:  d2 in [0, 124]
// FUSION-NEXT:  s0 in [0, 124]
// FUSION-NOT:   fusion:
func.func @softmax(%p0: tensor<2x65x125xf32>) -> tensor<2x65x125xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %max = stablehlo.reduce(%p0 init: %ninf) applies stablehlo.maximum across dimensions = [2] : (tensor<2x65x125xf32>, tensor<f32>) -> tensor<2x65xf32>
  %max_b = stablehlo.broadcast_in_dim %max, dims = [0, 1] : (tensor<2x65xf32>) -> tensor<2x65x125xf32>
  %shifted = stablehlo.subtract %p0, %max_b : tensor<2x65x125xf32>
  %exp = stablehlo.exponential %shifted : tensor<2x65x125xf32>
  %sum = stablehlo.reduce(%exp init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<2x65x125xf32>, tensor<f32>) -> tensor<2x65xf32>
  %sum_b = stablehlo.broadcast_in_dim %sum, dims = [0, 1] : (tensor<2x65xf32>) -> tensor<2x65x125xf32>
  %div = stablehlo.divide %exp, %sum_b : tensor<2x65x125xf32>
  return %div : tensor<2x65x125xf32>
}

// -----

// FUSION-LABEL: indexing maps of @reshape_chain
// FUSION:       fusion: result 0 -> %arg0:
// FUSION-NEXT:  (d0, d1, d2) -> (d0, d1, d2)
// FUSION-NEXT:  domain:
// FUSION-NEXT:  d0 in [0, 9]
// FUSION-NEXT:  d1 in [0, 9]
// FUSION-NEXT:  d2 in [0, 9]
func.func @reshape_chain(%p0: tensor<10x10x10xf32>) -> tensor<10x10x10xf32> {
  %reshape1 = stablehlo.reshape %p0 : (tensor<10x10x10xf32>) -> tensor<50x20xf32>
  %reshape2 = stablehlo.reshape %reshape1 : (tensor<50x20xf32>) -> tensor<10x10x10xf32>
  return %reshape2 : tensor<10x10x10xf32>
}

// -----

// FUSION-LABEL: indexing maps of @unread_argument
// FUSION:       fusion: result 0 does not read %arg0
// FUSION-NEXT:  fusion: result 0 -> %arg1:
// FUSION-NEXT:  (d0, d1) -> (d0, d1 + 5)
func.func @unread_argument(%p0: tensor<3x50xf32>, %p1: tensor<3x30xf32>) -> tensor<3x20xf32> {
  %concat = stablehlo.concatenate %p0, %p1, dim = 1 : (tensor<3x50xf32>, tensor<3x30xf32>) -> tensor<3x80xf32>
  %slice = stablehlo.slice %concat [0:3, 55:75] : (tensor<3x80xf32>) -> tensor<3x20xf32>
  return %slice : tensor<3x20xf32>
}
