// RUN: shlo-opt %s --split-input-file --shlo-fuse-elementwise-by-indexing | FileCheck %s
// RUN: shlo-opt %s --split-input-file --shlo-fuse-elementwise-by-indexing='max-recompute=3' | FileCheck %s --check-prefix=BUDGET

// Two reductions read the product once per element: each fusion gets its own
// copy (the first keeps the original).
// CHECK-LABEL: func @copied_into_two_reductions
func.func @copied_into_two_reductions(%x: tensor<8x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK:      %[[COPY:.+]] = stablehlo.multiply %arg0, %arg0
  // CHECK-NEXT: %[[ORIGINAL:.+]] = stablehlo.multiply %arg0, %arg0
  // CHECK-NEXT: stablehlo.reduce(%[[COPY]] init:
  // CHECK-NEXT: stablehlo.reduce(%[[ORIGINAL]] init:
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %c = stablehlo.multiply %x, %x : tensor<8x8xf32>
  %s = stablehlo.reduce(%c init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = stablehlo.reduce(%c init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  return %s, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// p0 + transpose(p0): the add would read the product through two distinct
// maps, (d0, d1) -> (d0, d1) and (d0, d1) -> (d1, d0): nothing is copied.
// CHECK-LABEL: func @two_maps_refused
func.func @two_maps_refused(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK:      %[[P:.+]] = stablehlo.multiply %arg0, %arg0
  // CHECK-NEXT: %[[T:.+]] = stablehlo.transpose %[[P]]
  // CHECK-NEXT: stablehlo.add %[[P]], %[[T]]
  // CHECK-NOT:  stablehlo.multiply
  %p = stablehlo.multiply %x, %x : tensor<8x8xf32>
  %t = stablehlo.transpose %p, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = stablehlo.add %p, %t : tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}

// -----

// One fusion would read the product through two maps: the product stays
// materialized, so copying it into the reduction would only recompute it.
// CHECK-LABEL: func @one_refusal_blocks_every_copy
func.func @one_refusal_blocks_every_copy(%x: tensor<8x8xf32>) -> (tensor<8xf32>, tensor<8x8xf32>) {
  // CHECK-COUNT-1: stablehlo.multiply
  // CHECK-NOT:     stablehlo.multiply
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %c = stablehlo.multiply %x, %x : tensor<8x8xf32>
  %s = stablehlo.reduce(%c init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  %t = stablehlo.transpose %c, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = stablehlo.add %c, %t : tensor<8x8xf32>
  return %s, %a : tensor<8xf32>, tensor<8x8xf32>
}

// -----

// Maps that only look different are one map: transpose(transpose(p)) reads p
// at (d0, d1) like the direct use, so the fusion reads it once per element;
// it is its only fusion and keeps the original, with no copy needed.
// CHECK-LABEL: func @one_map_after_simplification
func.func @one_map_after_simplification(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-COUNT-1: stablehlo.multiply
  // CHECK-NOT:     stablehlo.multiply
  %p = stablehlo.multiply %x, %x : tensor<4x8xf32>
  %t = stablehlo.transpose %p, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %tt = stablehlo.transpose %t, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %a = stablehlo.add %p, %tt : tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// A broadcast reads each element of the product several times: no copy.
// CHECK-LABEL: func @broadcast_rereads
func.func @broadcast_rereads(%x: tensor<8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // CHECK-COUNT-1: stablehlo.multiply
  // CHECK-NOT:     stablehlo.multiply
  %p = stablehlo.multiply %x, %x : tensor<8xf32>
  %b = stablehlo.broadcast_in_dim %p, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %a = stablehlo.add %b, %y : tensor<4x8xf32>
  %n = stablehlo.negate %p : tensor<8xf32>
  return %a, %n : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// A returned value is materialized anyway: no copy.
// CHECK-LABEL: func @returned_and_fused
func.func @returned_and_fused(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-COUNT-1: stablehlo.multiply
  // CHECK-NOT:     stablehlo.multiply
  %p = stablehlo.multiply %x, %x : tensor<8xf32>
  %n = stablehlo.negate %p : tensor<8xf32>
  return %p, %n : tensor<8xf32>, tensor<8xf32>
}

// -----

// Expensive producers are never copied.
// CHECK-LABEL: func @expensive_not_copied
func.func @expensive_not_copied(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-COUNT-1: stablehlo.exponential
  // CHECK-NOT:     stablehlo.exponential
  %e = stablehlo.exponential %x : tensor<8xf32>
  %n = stablehlo.negate %e : tensor<8xf32>
  %a = stablehlo.abs %e : tensor<8xf32>
  return %n, %a : tensor<8xf32>, tensor<8xf32>
}

// -----

// A chain: the consumer is copied first, then its producer once per copy.
// CHECK-LABEL: func @chain
func.func @chain(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-COUNT-2: stablehlo.multiply
  // CHECK-COUNT-2: stablehlo.add
  // CHECK:         stablehlo.negate
  // CHECK-NEXT:    stablehlo.abs
  %p = stablehlo.multiply %x, %x : tensor<8xf32>
  %q = stablehlo.add %p, %x : tensor<8xf32>
  %n = stablehlo.negate %q : tensor<8xf32>
  %a = stablehlo.abs %q : tensor<8xf32>
  return %n, %a : tensor<8xf32>, tensor<8xf32>
}

// -----

// Three ops would be duplicated: over the default budget of two.
// CHECK-LABEL: func @over_budget
// BUDGET-LABEL: func @over_budget
func.func @over_budget(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-COUNT-1: stablehlo.multiply
  // CHECK-NOT:     stablehlo.multiply
  // BUDGET-COUNT-2: stablehlo.multiply
  // BUDGET-COUNT-2: stablehlo.add
  // BUDGET-COUNT-2: stablehlo.subtract
  %p = stablehlo.multiply %x, %x : tensor<8xf32>
  %q = stablehlo.add %p, %x : tensor<8xf32>
  %r = stablehlo.subtract %q, %x : tensor<8xf32>
  %n = stablehlo.negate %r : tensor<8xf32>
  %a = stablehlo.abs %r : tensor<8xf32>
  return %n, %a : tensor<8xf32>, tensor<8xf32>
}
