// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-reduce-window-scan)' | FileCheck %s

// A forward scan along the last axis carries its running value in a register.
// CHECK-LABEL: func @cumsum_last_axis
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>)
func.func @cumsum_last_axis(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: %[[ZERO:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  // CHECK: %[[INIT:.+]] = tensor.extract %[[ZERO]][] : tensor<f32>
  // CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<2x4xf32>
  // CHECK: %[[R:.+]] = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[OUT:.+]] = %[[EMPTY]]) -> (tensor<2x4xf32>) {
  // CHECK:   %[[ROW:.+]]:2 = scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[INIT]], %[[O:.+]] = %[[OUT]]) -> (f32, tensor<2x4xf32>) {
  // CHECK:     %[[XK:.+]] = tensor.extract %[[X]][%[[I]], %[[K]]] : tensor<2x4xf32>
  // CHECK:     %[[NEXT:.+]] = arith.addf %[[ACC]], %[[XK]] : f32
  // CHECK:     %[[O2:.+]] = tensor.insert %[[NEXT]] into %[[O]][%[[I]], %[[K]]] : tensor<2x4xf32>
  // CHECK:     scf.yield %[[NEXT]], %[[O2]] : f32, tensor<2x4xf32>
  // CHECK:   scf.yield %[[ROW]]#1 : tensor<2x4xf32>
  // CHECK-NOT: stablehlo.reduce_window
  // CHECK: return %[[R]] : tensor<2x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[0, 0], [3, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 4>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// A reverse scan along another axis: the last row combines the init, then
// each row the row after it; a window longer than the axis is still a scan.
// CHECK-LABEL: func @cumprod_reverse_first_axis
// CHECK-SAME: (%[[X:.+]]: tensor<3x2xi32>)
func.func @cumprod_reverse_first_axis(%x: tensor<3x2xi32>) -> tensor<3x2xi32> {
  // CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
  // CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
  // CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
  // CHECK: %[[INIT:.+]] = tensor.extract %{{.+}}[] : tensor<i32>
  // CHECK: %[[FIRST:.+]] = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %[[C1]] iter_args(%[[O:.+]] = %{{.+}}) -> (tensor<3x2xi32>) {
  // CHECK:   %[[XJ:.+]] = tensor.extract %[[X]][%[[C2]], %[[J]]] : tensor<3x2xi32>
  // CHECK:   %[[P:.+]] = arith.muli %[[INIT]], %[[XJ]] : i32
  // CHECK:   tensor.insert %[[P]] into %[[O]][%[[C2]], %[[J]]] : tensor<3x2xi32>
  // CHECK: %[[R:.+]] = scf.for %[[K:.+]] = %[[C1]] to %[[C3]] step %[[C1]] iter_args(%[[OUT:.+]] = %[[FIRST]]) -> (tensor<3x2xi32>) {
  // CHECK:   %[[AT:.+]] = arith.subi %[[C2]], %[[K]] : index
  // CHECK:   %[[BEFORE:.+]] = arith.addi %[[AT]], %[[C1]] : index
  // CHECK:   scf.for %[[J2:.+]] = %{{.+}} to %{{.+}} step %[[C1]] iter_args(%[[O2:.+]] = %[[OUT]]) -> (tensor<3x2xi32>) {
  // CHECK:     %[[PREV:.+]] = tensor.extract %[[O2]][%[[BEFORE]], %[[J2]]] : tensor<3x2xi32>
  // CHECK:     %[[XK:.+]] = tensor.extract %[[X]][%[[AT]], %[[J2]]] : tensor<3x2xi32>
  // CHECK:     %[[Q:.+]] = arith.muli %[[PREV]], %[[XK]] : i32
  // CHECK:     tensor.insert %[[Q]] into %[[O2]][%[[AT]], %[[J2]]] : tensor<3x2xi32>
  // CHECK: return %[[R]] : tensor<3x2xi32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %0 = "stablehlo.reduce_window"(%x, %one) <{padding = dense<[[0, 3], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 4, 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.multiply %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<3x2xi32>, tensor<i32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// Idempotent ops take any init; unsigned values are scanned as signless
// ones with unsigned comparisons.
// CHECK-LABEL: func @cummax_unsigned_runtime_init
// CHECK-SAME: (%[[X:.+]]: tensor<5xui8>, %[[INIT:.+]]: tensor<ui8>)
func.func @cummax_unsigned_runtime_init(%x: tensor<5xui8>, %init: tensor<ui8>) -> tensor<5xui8> {
  // CHECK: %[[XS:.+]] = stablehlo.bitcast_convert %[[X]] : (tensor<5xui8>) -> tensor<5xi8>
  // CHECK: %[[IS:.+]] = stablehlo.bitcast_convert %[[INIT]] : (tensor<ui8>) -> tensor<i8>
  // CHECK: %[[I:.+]] = tensor.extract %[[IS]][] : tensor<i8>
  // CHECK: %[[R:.+]]:2 = scf.for {{.+}} iter_args(%[[ACC:.+]] = %[[I]], %{{.+}} = %{{.+}}) -> (i8, tensor<5xi8>) {
  // CHECK:   tensor.extract %[[XS]]
  // CHECK:   arith.maxui %[[ACC]], %{{.+}} : i8
  // CHECK: %[[U:.+]] = stablehlo.bitcast_convert %[[R]]#1 : (tensor<5xi8>) -> tensor<5xui8>
  // CHECK: return %[[U]] : tensor<5xui8>
  %0 = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[4, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 5>}> ({
  ^bb0(%a: tensor<ui8>, %b: tensor<ui8>):
    %s = stablehlo.maximum %b, %a : tensor<ui8>
    stablehlo.return %s : tensor<ui8>
  }) : (tensor<5xui8>, tensor<ui8>) -> tensor<5xui8>
  return %0 : tensor<5xui8>
}

// -----

// Booleans add with OR, as the spec says.
// CHECK-LABEL: func @any_so_far
func.func @any_so_far(%x: tensor<6xi1>) -> tensor<6xi1> {
  // CHECK: arith.ori %{{.+}}, %{{.+}} : i1
  // CHECK-NOT: stablehlo.reduce_window
  %false = stablehlo.constant dense<false> : tensor<i1>
  %0 = "stablehlo.reduce_window"(%x, %false) <{padding = dense<[[5, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 6>}> ({
  ^bb0(%a: tensor<i1>, %b: tensor<i1>):
    %s = stablehlo.add %a, %b : tensor<i1>
    stablehlo.return %s : tensor<i1>
  }) : (tensor<6xi1>, tensor<i1>) -> tensor<6xi1>
  return %0 : tensor<6xi1>
}

// -----

// CHECK-LABEL: func @complex_cumsum
func.func @complex_cumsum(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  // CHECK: complex.add %{{.+}}, %{{.+}} : complex<f32>
  // CHECK-NOT: stablehlo.reduce_window
  %zero = stablehlo.constant dense<(0.0, 0.0)> : tensor<complex<f32>>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[3, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 4>}> ({
  ^bb0(%a: tensor<complex<f32>>, %b: tensor<complex<f32>>):
    %s = stablehlo.add %a, %b : tensor<complex<f32>>
    stablehlo.return %s : tensor<complex<f32>>
  }) : (tensor<4xcomplex<f32>>, tensor<complex<f32>>) -> tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}

// -----

// A sliding window of 3 is not a scan.
// CHECK-LABEL: func @sliding_window
func.func @sliding_window(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK-NOT: scf.for
  // CHECK: stablehlo.reduce_window
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[2, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 3>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// The padding repeats an init that is not add's identity: left alone.
// CHECK-LABEL: func @add_with_init_one
func.func @add_with_init_one(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK-NOT: scf.for
  // CHECK: stablehlo.reduce_window
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %one) <{padding = dense<[[7, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 8>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func @strided
func.func @strided(%x: tensor<8xf32>) -> tensor<4xf32> {
  // CHECK-NOT: scf.for
  // CHECK: stablehlo.reduce_window
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[7, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 8>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<8xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
