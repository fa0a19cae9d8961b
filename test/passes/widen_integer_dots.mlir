// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-widen-integer-dots)' | FileCheck %s

// int8 x uint8 over 3: every sum is an integer below 2^24, so the dot is an
// f32 dot, converted back to i32.
// CHECK-LABEL: func @int8
func.func @int8(%a: tensor<4x3xi8>, %b: tensor<3x6xui8>) -> tensor<4x6xi32> {
  // CHECK: %[[A:.+]] = stablehlo.convert %arg0 : (tensor<4x3xi8>) -> tensor<4x3xf32>
  // CHECK: %[[B:.+]] = stablehlo.convert %arg1 : (tensor<3x6xui8>) -> tensor<3x6xf32>
  // CHECK: %[[D:.+]] = stablehlo.dot_general %[[A]], %[[B]], contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  // CHECK: %[[R:.+]] = stablehlo.convert %[[D]] : (tensor<4x6xf32>) -> tensor<4x6xi32>
  // CHECK: return %[[R]]
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi8>, tensor<3x6xui8>) -> tensor<4x6xi32>
  return %0 : tensor<4x6xi32>
}

// -----

// int8 x int8 over 2000, batched: sums of 1024 products are exact in f32 and
// 1025 may not be, so the contracted dimension is cut at 1024 and the two
// f32 dots are added in i32.
// CHECK-LABEL: func @chunks
func.func @chunks(%a: tensor<2x4x2000xi8>, %b: tensor<2x2000x6xi8>) -> tensor<2x4x6xi32> {
  // CHECK: %[[A0:.+]] = stablehlo.slice %arg0 [0:2, 0:4, 0:1024]
  // CHECK: %[[A0F:.+]] = stablehlo.convert %[[A0]] : (tensor<2x4x1024xi8>) -> tensor<2x4x1024xf32>
  // CHECK: %[[B0:.+]] = stablehlo.slice %arg1 [0:2, 0:1024, 0:6]
  // CHECK: %[[B0F:.+]] = stablehlo.convert %[[B0]]
  // CHECK: %[[D0:.+]] = stablehlo.dot_general %[[A0F]], %[[B0F]], batching_dims = [0] x [0], contracting_dims = [2] x [1] {{.*}} -> tensor<2x4x6xf32>
  // CHECK: %[[P0:.+]] = stablehlo.convert %[[D0]] : (tensor<2x4x6xf32>) -> tensor<2x4x6xi32>
  // CHECK: stablehlo.slice %arg0 [0:2, 0:4, 1024:2000]
  // CHECK: stablehlo.slice %arg1 [0:2, 1024:2000, 0:6]
  // CHECK: %[[D1:.+]] = stablehlo.dot_general {{.*}} : (tensor<2x4x976xf32>, tensor<2x976x6xf32>) -> tensor<2x4x6xf32>
  // CHECK: %[[P1:.+]] = stablehlo.convert %[[D1]]
  // CHECK: %[[SUM:.+]] = stablehlo.add %[[P0]], %[[P1]] : tensor<2x4x6xi32>
  // CHECK: return %[[SUM]]
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x2000xi8>, tensor<2x2000x6xi8>) -> tensor<2x4x6xi32>
  return %0 : tensor<2x4x6xi32>
}

// -----

// int16 x uint8 products reach 2^23: f32 sums of only two are exact, too
// short to pay, so the operands are converted to i32 (sign- or
// zero-extended) for the i32 matmul.
// CHECK-LABEL: func @int16
func.func @int16(%a: tensor<4x3xi16>, %b: tensor<3x6xui8>) -> tensor<4x6xi32> {
  // CHECK: %[[A:.+]] = stablehlo.convert %arg0 : (tensor<4x3xi16>) -> tensor<4x3xi32>
  // CHECK: %[[B:.+]] = stablehlo.convert %arg1 : (tensor<3x6xui8>) -> tensor<3x6xi32>
  // CHECK: stablehlo.dot_general %[[A]], %[[B]], contracting_dims = [1] x [0] : (tensor<4x3xi32>, tensor<3x6xi32>) -> tensor<4x6xi32>
  // CHECK-NOT: f32
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi16>, tensor<3x6xui8>) -> tensor<4x6xi32>
  return %0 : tensor<4x6xi32>
}

// -----

// Past the bound over two contracted dimensions (1024 x 2 int8 products):
// i32 operands.
// CHECK-LABEL: func @two_contracted
func.func @two_contracted(%a: tensor<4x1024x2xi8>, %b: tensor<1024x2x6xi8>) -> tensor<4x6xi32> {
  // CHECK: stablehlo.convert %arg0 : (tensor<4x1024x2xi8>) -> tensor<4x1024x2xi32>
  // CHECK-NOT: f32
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1, 2] x [0, 1] : (tensor<4x1024x2xi8>, tensor<1024x2x6xi8>) -> tensor<4x6xi32>
  return %0 : tensor<4x6xi32>
}

// -----

// Results narrower or wider than 32 bits, and float dots, are left alone.
// CHECK-LABEL: func @left_alone
func.func @left_alone(%a: tensor<4x3xi8>, %b: tensor<3x6xi8>, %c: tensor<4x3xf32>, %d: tensor<3x6xf32>) -> (tensor<4x6xi8>, tensor<4x6xi64>, tensor<4x6xf32>) {
  // CHECK-NOT: stablehlo.convert
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi8>, tensor<3x6xi8>) -> tensor<4x6xi8>
  %1 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xi8>, tensor<3x6xi8>) -> tensor<4x6xi64>
  %2 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<4x6xi8>, tensor<4x6xi64>, tensor<4x6xf32>
}
