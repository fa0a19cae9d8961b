// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-select-and-scatter)' | FileCheck %s

// The select region decides between the selection so far and the current
// element; the scatter region gets (source, result) at the selected index.
// CHECK-LABEL: func @max_pool_gradient
func.func @max_pool_gradient(%arg0: tensor<4xf32>, %arg1: tensor<2xf32>) -> tensor<4xf32> {
  // CHECK: %[[INIT:.+]] = stablehlo.broadcast_in_dim %{{.+}}, dims = [] : (tensor<f32>) -> tensor<4xf32>
  // CHECK: scf.for %[[W:[a-z0-9_]+]] = %{{.+}} iter_args(%[[ACC:[a-z0-9_]+]] = %[[INIT]]) -> (tensor<4xf32>)
  // CHECK: %[[PICK:.+]]:2 = scf.for %{{.+}} -> (i1, index)
  // CHECK: %[[CURRENT:.+]] = tensor.extract %arg0[%{{.+}}] : tensor<4xf32>
  // CHECK: %[[BEST:.+]] = tensor.extract %arg0[%{{.+}}] : tensor<4xf32>
  // CHECK: %[[A:.+]] = tensor.from_elements %[[BEST]] : tensor<f32>
  // CHECK: %[[B:.+]] = tensor.from_elements %[[CURRENT]] : tensor<f32>
  // CHECK: stablehlo.compare GE, %[[A]], %[[B]]
  // CHECK: scf.if %[[PICK]]#0 -> (tensor<4xf32>)
  // CHECK: %[[SRC:.+]] = tensor.extract %arg1[%[[W]]] : tensor<2xf32>
  // CHECK: %[[OLD:.+]] = tensor.extract %[[ACC]][%[[PICK]]#1] : tensor<4xf32>
  // CHECK: %[[S:.+]] = tensor.from_elements %[[SRC]] : tensor<f32>
  // CHECK: %[[O:.+]] = tensor.from_elements %[[OLD]] : tensor<f32>
  // CHECK: %[[SUM:.+]] = stablehlo.add %[[S]], %[[O]] : tensor<f32>
  // CHECK: %[[NEW:.+]] = tensor.extract %[[SUM]][] : tensor<f32>
  // CHECK: tensor.insert %[[NEW]] into %[[ACC]][%[[PICK]]#1] : tensor<4xf32>
  // CHECK-NOT: stablehlo.select_and_scatter
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.select_and_scatter"(%arg0, %arg1, %zero) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %sum : tensor<f32>
  }) : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Padding shifts the window: operand index = window * stride + offset - low.
// Unsigned values cross the loops as signless. The first windows lie entirely
// in the padding and scatter nothing.
// CHECK-LABEL: func @padded_unsigned
func.func @padded_unsigned(%arg0: tensor<6x2xui8>, %arg1: tensor<8x2xui8>) -> tensor<6x2xui8> {
  // CHECK: stablehlo.bitcast_convert %arg0 : (tensor<6x2xui8>) -> tensor<6x2xi8>
  // CHECK: %[[LOW:.+]] = arith.constant 5 : index
  // CHECK: scf.for
  // CHECK: %[[SHIFTED:.+]] = arith.addi
  // CHECK: arith.subi %[[SHIFTED]], %[[LOW]] : index
  // CHECK: stablehlo.bitcast_convert %{{.+}} : (tensor<i8>) -> tensor<ui8>
  // CHECK: stablehlo.compare GT
  // CHECK: stablehlo.maximum {{.*}} : tensor<ui8>
  // CHECK: stablehlo.bitcast_convert %{{.+}} : (tensor<ui8>) -> tensor<i8>
  // CHECK: %[[BACK:.+]] = stablehlo.bitcast_convert %{{.+}} : (tensor<6x2xi8>) -> tensor<6x2xui8>
  // CHECK: return %[[BACK]]
  %init = stablehlo.constant dense<0> : tensor<ui8>
  %0 = "stablehlo.select_and_scatter"(%arg0, %arg1, %init) <{window_dimensions = array<i64: 4, 1>, window_strides = array<i64: 1, 1>, padding = dense<[[5, 0], [0, 0]]> : tensor<2x2xi64>}> ({
  ^bb0(%a: tensor<ui8>, %b: tensor<ui8>):
    %gt = stablehlo.compare GT, %a, %b : (tensor<ui8>, tensor<ui8>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }, {
  ^bb0(%a: tensor<ui8>, %b: tensor<ui8>):
    %m = stablehlo.maximum %a, %b : tensor<ui8>
    stablehlo.return %m : tensor<ui8>
  }) : (tensor<6x2xui8>, tensor<8x2xui8>, tensor<ui8>) -> tensor<6x2xui8>
  return %0 : tensor<6x2xui8>
}

// -----

func.func @dynamic(%arg0: tensor<?xf32>, %arg1: tensor<2xf32>) -> tensor<?xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  // expected-error@+1 {{expected statically shaped operand and source}}
  %0 = "stablehlo.select_and_scatter"(%arg0, %arg1, %zero) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %sum : tensor<f32>
  }) : (tensor<?xf32>, tensor<2xf32>, tensor<f32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
