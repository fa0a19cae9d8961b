// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-mark-precompiled-kernels,shlo-call-precompiled-kernels{threads=2})' | FileCheck %s

// A matmul whose init is a fill with +0.0 becomes a call on its operands'
// buffers and a new result buffer: batch 1, m 4, n 8, k 3, then the strides
// of the lhs (batch, row, column) and of the rhs, then the threads. The fill
// and its tensor.empty go with it.
// CHECK: func.func private @shlo_matmul_f32(memref<f32>, memref<f32>, memref<f32>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) attributes {llvm.bareptr}
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: tensor<4x3xf32>, %[[B:.+]]: tensor<3x8xf32>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[AB:.+]] = bufferization.to_buffer %[[A]] read_only : tensor<4x3xf32> to memref<4x3xf32>
// CHECK-DAG: %[[BB:.+]] = bufferization.to_buffer %[[B]] read_only : tensor<3x8xf32> to memref<3x8xf32>
// CHECK-DAG: %[[C:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[PA:.+]] = memref.reinterpret_cast %[[AB]] to offset: [0], sizes: [], strides: [] : memref<4x3xf32> to memref<f32>
// CHECK-DAG: %[[PB:.+]] = memref.reinterpret_cast %[[BB]] to offset: [0], sizes: [], strides: [] : memref<3x8xf32> to memref<f32>
// CHECK-DAG: %[[PC:.+]] = memref.reinterpret_cast %[[C]] to offset: [0], sizes: [], strides: [] : memref<4x8xf32> to memref<f32>
// CHECK: call @shlo_matmul_f32(%[[PA]], %[[PB]], %[[PC]], %[[C1]], %[[C4]], %[[C8]], %[[C3]], %[[C0]], %[[C3]], %[[C1]], %[[C0]], %[[C8]], %[[C1]], %[[C2]])
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[C]] restrict writable : memref<4x8xf32> to tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @main(%a: tensor<4x3xf32>, %b: tensor<3x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// A batch matmul whose rhs is a transpose that only it reads: the kernel
// reads the transpose's input, k[b, n, k], with the strides of the rhs's
// dimensions (b, k, n) in it: 96, 1, 6. The transpose is erased.
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#swap = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:.+]]: tensor<2x16x6xf32>, %[[K:.+]]: tensor<2x16x6xf32>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: bufferization.to_buffer %[[K]] read_only : tensor<2x16x6xf32> to memref<2x16x6xf32>
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C6:.+]] = arith.constant 6 : i64
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : i64
// CHECK-DAG: %[[C96:.+]] = arith.constant 96 : i64
// CHECK: call @shlo_matmul_f32(%{{.+}}, %{{.+}}, %{{.+}}, %[[C2]], %[[C16]], %[[C16]], %[[C6]], %[[C96]], %[[C6]], %[[C1]], %[[C96]], %[[C1]], %[[C6]], %[[C2]])
// CHECK: bufferization.to_tensor %{{.+}} restrict writable : memref<2x16x16xf32> to tensor<2x16x16xf32>
func.func @main(%q: tensor<2x16x6xf32>, %k: tensor<2x16x6xf32>) -> tensor<2x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %te = tensor.empty() : tensor<2x6x16xf32>
  %t = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k : tensor<2x16x6xf32>) outs(%te : tensor<2x6x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x6x16xf32>
  %e = tensor.empty() : tensor<2x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
  %m = linalg.batch_matmul ins(%q, %t : tensor<2x16x6xf32>, tensor<2x6x16xf32>) outs(%f : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
  return %m : tensor<2x16x16xf32>
}

// -----

// Left as they are: an f64 matmul, a matmul accumulating into an argument,
// and one whose init is a fill with -0.0 (the kernel starts from +0.0).
// CHECK-LABEL: func.func @main
// CHECK-NOT: call @shlo_matmul_f32
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT: call @shlo_matmul_f32
func.func @main(%a: tensor<4x3xf64>, %b: tensor<3x8xf64>, %x: tensor<4x3xf32>, %y: tensor<3x8xf32>,
                %acc: tensor<4x8xf32>) -> (tensor<4x8xf64>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x8xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<4x8xf64>) -> tensor<4x8xf64>
  %m = linalg.matmul ins(%a, %b : tensor<4x3xf64>, tensor<3x8xf64>) outs(%f : tensor<4x8xf64>) -> tensor<4x8xf64>
  %n = linalg.matmul ins(%x, %y : tensor<4x3xf32>, tensor<3x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %negative_zero = arith.constant -0.0 : f32
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%negative_zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = linalg.matmul ins(%x, %y : tensor<4x3xf32>, tensor<3x8xf32>) outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m, %n, %o : tensor<4x8xf64>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A 2-D convolution whose input is padded with zeros that only it reads: the
// kernel reads the unpadded input, with the top and left padding (2, 1) among
// its sizes: n 1, h 6, w 5, c 3; kh 3, kw 2, f 4; oh 6, ow 4; top 2, left 1;
// strides 1, 2; dilations 1, 1; threads 2. The pad is erased.
// CHECK: func.func private @shlo_conv2d_f32(memref<f32>, memref<f32>, memref<f32>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) attributes {llvm.bareptr}
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.+]]: tensor<1x6x5x3xf32>, %[[W:.+]]: tensor<3x2x3x4xf32>)
// CHECK-NOT: tensor.pad
// CHECK-DAG: bufferization.to_buffer %[[X]] read_only : tensor<1x6x5x3xf32> to memref<1x6x5x3xf32>
// CHECK-DAG: bufferization.to_buffer %[[W]] read_only : tensor<3x2x3x4xf32> to memref<3x2x3x4xf32>
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[C5:.+]] = arith.constant 5 : i64
// CHECK-DAG: %[[C6:.+]] = arith.constant 6 : i64
// CHECK: call @shlo_conv2d_f32(%{{.+}}, %{{.+}}, %{{.+}}, %[[C1]], %[[C6]], %[[C5]], %[[C3]], %[[C3]], %[[C2]], %[[C4]], %[[C6]], %[[C4]], %[[C2]], %[[C1]], %[[C1]], %[[C2]], %[[C1]], %[[C1]], %[[C2]])
// CHECK: bufferization.to_tensor %{{.+}} restrict writable : memref<1x6x4x4xf32> to tensor<1x6x4x4xf32>
func.func @main(%x: tensor<1x6x5x3xf32>, %w: tensor<3x2x3x4xf32>) -> tensor<1x6x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 2, 1, 0] high[0, 0, 2, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x5x3xf32> to tensor<1x8x8x3xf32>
  %e = tensor.empty() : tensor<1x6x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<[1, 2]> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x8x8x3xf32>, tensor<3x2x3x4xf32>) outs(%f : tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  return %c : tensor<1x6x4x4xf32>
}

// -----

// Padding with ones is not the kernel's: it reads the padded tensor, and pads
// nothing more (top and left 0).
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.+]] = tensor.pad
// CHECK: bufferization.to_buffer %[[P]] read_only : tensor<1x8x8x3xf32> to memref<1x8x8x3xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[C6:.+]] = arith.constant 6 : i64
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : i64
// CHECK: call @shlo_conv2d_f32(%{{.+}}, %{{.+}}, %{{.+}}, %[[C1]], %[[C8]], %[[C8]], %[[C3]], %[[C3]], %[[C2]], %[[C4]], %[[C6]], %[[C4]], %[[C0]], %[[C0]], %[[C1]], %[[C2]], %[[C1]], %[[C1]], %[[C2]])
func.func @main(%x: tensor<1x6x5x3xf32>, %w: tensor<3x2x3x4xf32>) -> tensor<1x6x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %x low[0, 2, 1, 0] high[0, 0, 2, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %one : f32
  } : tensor<1x6x5x3xf32> to tensor<1x8x8x3xf32>
  %e = tensor.empty() : tensor<1x6x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<[1, 2]> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x8x8x3xf32>, tensor<3x2x3x4xf32>) outs(%f : tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  return %c : tensor<1x6x4x4xf32>
}

// -----

// A 1-D convolution without padding is a 2-D one of height 1: n 2, h 1,
// w 9, c 3; kh 1, kw 2, f 4; oh 1, ow 3; top 0, left 0; strides 1, 3;
// dilations 1, 2; threads 2.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[C9:.+]] = arith.constant 9 : i64
// CHECK: call @shlo_conv2d_f32(%{{.+}}, %{{.+}}, %{{.+}}, %[[C2]], %[[C1]], %[[C9]], %[[C3]], %[[C1]], %[[C2]], %[[C4]], %[[C1]], %[[C3]], %[[C0]], %[[C0]], %[[C1]], %[[C3]], %[[C1]], %[[C2]], %[[C2]])
// CHECK: bufferization.to_tensor %{{.+}} restrict writable : memref<2x3x4xf32> to tensor<2x3x4xf32>
func.func @main(%x: tensor<2x9x3xf32>, %w: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %c = linalg.conv_1d_nwc_wcf {dilations = dense<2> : tensor<1xi64>, strides = dense<3> : tensor<1xi64>}
      ins(%x, %w : tensor<2x9x3xf32>, tensor<2x3x4xf32>) outs(%f : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %c : tensor<2x3x4xf32>
}
