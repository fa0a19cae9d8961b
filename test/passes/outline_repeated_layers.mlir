// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-outline-repeated-layers{min-layer-ops=3 min-saved-ops=6})' | FileCheck %s

// Three layers of the same five ops, each with its own weight and the
// shared constant, and a residual connection: one function, called once per
// layer with the residual stream and the layer's weight (the constant is
// copied in). The layers are cut where only the stream crosses, not between
// the tanh and the multiply, which both read the add. The op before them
// (the negate) and the one after (the abs) stay in place.
// CHECK-LABEL: func.func @layers
// CHECK-SAME: (%[[X:.+]]: tensor<8xf32>, %[[W1:.+]]: tensor<8xf32>, %[[W2:.+]]: tensor<8xf32>, %[[W3:.+]]: tensor<8xf32>)
func.func @layers(%x: tensor<8xf32>, %w1: tensor<8xf32>, %w2: tensor<8xf32>, %w3: tensor<8xf32>) -> tensor<8xf32> {
  %c = stablehlo.constant dense<2.0> : tensor<8xf32>
  // CHECK: %[[N:.+]] = stablehlo.negate %[[X]]
  // CHECK-NEXT: %[[L1:.+]] = call @shlo_layer_0(%[[N]], %[[W1]]) {no_inline}
  // CHECK-NEXT: %[[L2:.+]] = call @shlo_layer_0(%[[L1]], %[[W2]]) {no_inline}
  // CHECK-NEXT: %[[L3:.+]] = call @shlo_layer_0(%[[L2]], %[[W3]]) {no_inline}
  // CHECK-NEXT: %[[R:.+]] = stablehlo.abs %[[L3]]
  // CHECK-NEXT: return %[[R]]
  %n = stablehlo.negate %x : tensor<8xf32>
  %a1 = stablehlo.add %n, %w1 : tensor<8xf32>
  %t1 = stablehlo.tanh %a1 : tensor<8xf32>
  %m1 = stablehlo.multiply %a1, %c : tensor<8xf32>
  %s1 = stablehlo.subtract %t1, %m1 : tensor<8xf32>
  %o1 = stablehlo.add %s1, %n : tensor<8xf32>
  %a2 = stablehlo.add %o1, %w2 : tensor<8xf32>
  %t2 = stablehlo.tanh %a2 : tensor<8xf32>
  %m2 = stablehlo.multiply %a2, %c : tensor<8xf32>
  %s2 = stablehlo.subtract %t2, %m2 : tensor<8xf32>
  %o2 = stablehlo.add %s2, %o1 : tensor<8xf32>
  %a3 = stablehlo.add %o2, %w3 : tensor<8xf32>
  %t3 = stablehlo.tanh %a3 : tensor<8xf32>
  %m3 = stablehlo.multiply %a3, %c : tensor<8xf32>
  %s3 = stablehlo.subtract %t3, %m3 : tensor<8xf32>
  %o3 = stablehlo.add %s3, %o2 : tensor<8xf32>
  %r = stablehlo.abs %o3 : tensor<8xf32>
  return %r : tensor<8xf32>
}

// The same layers without the residual connection: each layer's result has
// one reader, a link of an elementwise chain that fusion makes one loop, so
// calls would store it: nothing is outlined.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: call
// CHECK: return
func.func @chain(%x: tensor<8xf32>, %w1: tensor<8xf32>, %w2: tensor<8xf32>, %w3: tensor<8xf32>) -> tensor<8xf32> {
  %c = stablehlo.constant dense<2.0> : tensor<8xf32>
  %a1 = stablehlo.add %x, %w1 : tensor<8xf32>
  %t1 = stablehlo.tanh %a1 : tensor<8xf32>
  %m1 = stablehlo.multiply %a1, %c : tensor<8xf32>
  %s1 = stablehlo.subtract %t1, %m1 : tensor<8xf32>
  %a2 = stablehlo.add %s1, %w2 : tensor<8xf32>
  %t2 = stablehlo.tanh %a2 : tensor<8xf32>
  %m2 = stablehlo.multiply %a2, %c : tensor<8xf32>
  %s2 = stablehlo.subtract %t2, %m2 : tensor<8xf32>
  %a3 = stablehlo.add %s2, %w3 : tensor<8xf32>
  %t3 = stablehlo.tanh %a3 : tensor<8xf32>
  %m3 = stablehlo.multiply %a3, %c : tensor<8xf32>
  %s3 = stablehlo.subtract %t3, %m3 : tensor<8xf32>
  return %s3 : tensor<8xf32>
}

// Repeats whose layers read values an elementwise op makes outside them (a
// training step's activations): calls would store what fusion keeps in
// registers, so nothing is outlined.
// CHECK-LABEL: func.func @activations
// CHECK-NOT: call
// CHECK: return
func.func @activations(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %e1 = stablehlo.exponential %y : tensor<8xf32>
  %e2 = stablehlo.sine %y : tensor<8xf32>
  %e3 = stablehlo.cosine %y : tensor<8xf32>
  %a1 = stablehlo.add %x, %e1 : tensor<8xf32>
  %t1 = stablehlo.tanh %a1 : tensor<8xf32>
  %m1 = stablehlo.multiply %t1, %a1 : tensor<8xf32>
  %a2 = stablehlo.add %m1, %e2 : tensor<8xf32>
  %t2 = stablehlo.tanh %a2 : tensor<8xf32>
  %m2 = stablehlo.multiply %t2, %a2 : tensor<8xf32>
  %a3 = stablehlo.add %m2, %e3 : tensor<8xf32>
  %t3 = stablehlo.tanh %a3 : tensor<8xf32>
  %m3 = stablehlo.multiply %t3, %a3 : tensor<8xf32>
  return %m3 : tensor<8xf32>
}

// Copies of the same ops where one reads other values (the second multiply
// squares its tanh) are not the same layer.
// CHECK-LABEL: func.func @different
// CHECK-NOT: call
// CHECK: return
func.func @different(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a1 = stablehlo.add %x, %x : tensor<8xf32>
  %t1 = stablehlo.tanh %a1 : tensor<8xf32>
  %m1 = stablehlo.multiply %t1, %a1 : tensor<8xf32>
  %a2 = stablehlo.add %m1, %m1 : tensor<8xf32>
  %t2 = stablehlo.tanh %a2 : tensor<8xf32>
  %m2 = stablehlo.multiply %t2, %t2 : tensor<8xf32>
  %a3 = stablehlo.add %m2, %m2 : tensor<8xf32>
  %t3 = stablehlo.tanh %a3 : tensor<8xf32>
  %m3 = stablehlo.multiply %t3, %a3 : tensor<8xf32>
  return %m3 : tensor<8xf32>
}

// A constant of complex numbers, whose value the bindings cannot read
// (reading it aborted the process), is passed to the layers, not copied.
// CHECK-LABEL: func.func @complex_constant
// CHECK: %[[CC:.+]] = stablehlo.constant dense<(1.000000e+00,2.000000e+00)>
// CHECK: call @shlo_layer_1(%{{.+}}, %[[CC]]) {no_inline}
// CHECK: call @shlo_layer_1(%{{.+}}, %[[CC]]) {no_inline}
func.func @complex_constant(%x: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  %c = stablehlo.constant dense<(1.0, 2.0)> : tensor<2xcomplex<f32>>
  %a1 = stablehlo.add %x, %c : tensor<2xcomplex<f32>>
  %m1 = stablehlo.multiply %a1, %a1 : tensor<2xcomplex<f32>>
  %s1 = stablehlo.subtract %m1, %c : tensor<2xcomplex<f32>>
  %o1 = stablehlo.add %s1, %x : tensor<2xcomplex<f32>>
  %a2 = stablehlo.add %o1, %c : tensor<2xcomplex<f32>>
  %m2 = stablehlo.multiply %a2, %a2 : tensor<2xcomplex<f32>>
  %s2 = stablehlo.subtract %m2, %c : tensor<2xcomplex<f32>>
  %o2 = stablehlo.add %s2, %o1 : tensor<2xcomplex<f32>>
  %a3 = stablehlo.add %o2, %c : tensor<2xcomplex<f32>>
  %m3 = stablehlo.multiply %a3, %a3 : tensor<2xcomplex<f32>>
  %s3 = stablehlo.subtract %m3, %c : tensor<2xcomplex<f32>>
  %o3 = stablehlo.add %s3, %o2 : tensor<2xcomplex<f32>>
  return %o3 : tensor<2xcomplex<f32>>
}

// Each layer reads its own row of a small stacked array (Flax BERT's layers
// each slice their row of the head mask): the slices differ from layer to
// layer and broke every repeat. They move before the first call, which
// takes each its slice; the layer keeps the reshape all copies share.
// CHECK-LABEL: func.func @rows_of_a_mask
// CHECK-SAME: (%[[RX:.+]]: tensor<8xf32>, %[[M:.+]]: tensor<3x8xf32>)
// CHECK: %[[RN:.+]] = stablehlo.negate %[[RX]]
// CHECK-NEXT: %[[R1:.+]] = stablehlo.slice %[[M]] [0:1, 0:8]
// CHECK-NEXT: %[[R2:.+]] = stablehlo.slice %[[M]] [1:2, 0:8]
// CHECK-NEXT: %[[R3:.+]] = stablehlo.slice %[[M]] [2:3, 0:8]
// CHECK-NEXT: %[[Q1:.+]] = call @shlo_layer_2(%[[R1]], %[[RN]]) {no_inline}
// CHECK-NEXT: %[[Q2:.+]] = call @shlo_layer_2(%[[R2]], %[[Q1]]) {no_inline}
// CHECK-NEXT: %[[Q3:.+]] = call @shlo_layer_2(%[[R3]], %[[Q2]]) {no_inline}
// CHECK-NEXT: stablehlo.abs %[[Q3]]
func.func @rows_of_a_mask(%x: tensor<8xf32>, %m: tensor<3x8xf32>) -> tensor<8xf32> {
  %c = stablehlo.constant dense<2.0> : tensor<8xf32>
  %n = stablehlo.negate %x : tensor<8xf32>
  %r1 = stablehlo.slice %m [0:1, 0:8] : (tensor<3x8xf32>) -> tensor<1x8xf32>
  %w1 = stablehlo.reshape %r1 : (tensor<1x8xf32>) -> tensor<8xf32>
  %a1 = stablehlo.add %n, %w1 : tensor<8xf32>
  %t1 = stablehlo.tanh %a1 : tensor<8xf32>
  %m1 = stablehlo.multiply %a1, %c : tensor<8xf32>
  %s1 = stablehlo.subtract %t1, %m1 : tensor<8xf32>
  %o1 = stablehlo.add %s1, %n : tensor<8xf32>
  %r2 = stablehlo.slice %m [1:2, 0:8] : (tensor<3x8xf32>) -> tensor<1x8xf32>
  %w2 = stablehlo.reshape %r2 : (tensor<1x8xf32>) -> tensor<8xf32>
  %a2 = stablehlo.add %o1, %w2 : tensor<8xf32>
  %t2 = stablehlo.tanh %a2 : tensor<8xf32>
  %m2 = stablehlo.multiply %a2, %c : tensor<8xf32>
  %s2 = stablehlo.subtract %t2, %m2 : tensor<8xf32>
  %o2 = stablehlo.add %s2, %o1 : tensor<8xf32>
  %r3 = stablehlo.slice %m [2:3, 0:8] : (tensor<3x8xf32>) -> tensor<1x8xf32>
  %w3 = stablehlo.reshape %r3 : (tensor<1x8xf32>) -> tensor<8xf32>
  %a3 = stablehlo.add %o2, %w3 : tensor<8xf32>
  %t3 = stablehlo.tanh %a3 : tensor<8xf32>
  %m3 = stablehlo.multiply %a3, %c : tensor<8xf32>
  %s3 = stablehlo.subtract %t3, %m3 : tensor<8xf32>
  %o3 = stablehlo.add %s3, %o2 : tensor<8xf32>
  %r = stablehlo.abs %o3 : tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func private @shlo_layer_0
// CHECK-SAME: (%[[IN:.+]]: tensor<8xf32>, %[[W:.+]]: tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[C:.+]] = stablehlo.constant dense<2.000000e+00>
// CHECK-NEXT: %[[A:.+]] = stablehlo.add %[[IN]], %[[W]]
// CHECK-NEXT: %[[T:.+]] = stablehlo.tanh %[[A]]
// CHECK-NEXT: %[[M:.+]] = stablehlo.multiply %[[A]], %[[C]]
// CHECK-NEXT: %[[S:.+]] = stablehlo.subtract %[[T]], %[[M]]
// CHECK-NEXT: %[[O:.+]] = stablehlo.add %[[S]], %[[IN]]
// CHECK-NEXT: return %[[O]]
// CHECK-LABEL: func.func private @shlo_layer_1
// CHECK-SAME: (%[[CIN:.+]]: tensor<2xcomplex<f32>>, %[[CARG:.+]]: tensor<2xcomplex<f32>>)
// CHECK-NEXT: %[[CA:.+]] = stablehlo.add %[[CIN]], %[[CARG]]
// CHECK-LABEL: func.func private @shlo_layer_2
// CHECK-SAME: (%[[ROW:.+]]: tensor<1x8xf32>, %[[STREAM:.+]]: tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: stablehlo.constant dense<2.000000e+00>
// CHECK-NEXT: %[[RW:.+]] = stablehlo.reshape %[[ROW]]
// CHECK-NEXT: stablehlo.add %[[STREAM]], %[[RW]]
// CHECK-NOT: func.func
