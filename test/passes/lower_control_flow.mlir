// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-lower-control-flow)' | FileCheck %s

// CHECK-LABEL: func @while_loop
func.func @while_loop(%init: tensor<i64>, %limit: tensor<i64>) -> (tensor<i64>, tensor<4xf32>) {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %zeros = stablehlo.constant dense<0.0> : tensor<4xf32>
  // CHECK: %[[R:.+]]:2 = scf.while (%[[I:.+]] = %{{.+}}, %[[ACC:.+]] = %{{.+}}) : (tensor<i64>, tensor<4xf32>) -> (tensor<i64>, tensor<4xf32>) {
  // CHECK:   %[[LT:.+]] = stablehlo.compare LT, %[[I]], %{{.+}}
  // CHECK:   %[[P:.+]] = tensor.extract %[[LT]][] : tensor<i1>
  // CHECK:   scf.condition(%[[P]]) %[[I]], %[[ACC]] : tensor<i64>, tensor<4xf32>
  // CHECK: } do {
  // CHECK: ^bb0(%[[BI:.+]]: tensor<i64>, %[[BACC:.+]]: tensor<4xf32>):
  // CHECK:   %[[NEXT:.+]] = stablehlo.add %[[BI]], %{{.+}} : tensor<i64>
  // CHECK:   scf.yield %[[NEXT]], %[[BACC]] : tensor<i64>, tensor<4xf32>
  // CHECK: }
  // CHECK-NOT: stablehlo.while
  // CHECK: return %[[R]]#0, %[[R]]#1
  %r:2 = stablehlo.while(%i = %init, %acc = %zeros) : tensor<i64>, tensor<4xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %limit : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %next, %acc : tensor<i64>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<i64>, tensor<4xf32>
}

// -----

// A counted loop (a constant start, `i < constant`, `i + 1`), as jax's
// fori_loop and scan export it, becomes an scf.for: its final count is a
// constant and the body sees the count as a tensor.
// CHECK-LABEL: func @counted_loop
func.func @counted_loop(%x: tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>) {
  %start = stablehlo.constant dense<3> : tensor<i32>
  %limit = stablehlo.constant dense<10> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  // CHECK-DAG: %[[LB:.+]] = arith.constant 0 : index
  // CHECK-DAG: %[[UB:.+]] = arith.constant 7 : index
  // CHECK-DAG: %[[STEP:.+]] = arith.constant 1 : index
  // CHECK: %[[R:.+]] = scf.for %[[IV:.+]] = %[[LB]] to %[[UB]] step %[[STEP]] iter_args(%[[ACC:.+]] = %arg0) -> (tensor<4xf32>) {
  // CHECK:   %[[N:.+]] = arith.index_cast %[[IV]] : index to i32
  // CHECK:   %[[I:.+]] = arith.addi %[[N]], %{{.+}} : i32
  // CHECK:   %[[T:.+]] = tensor.from_elements %[[I]] : tensor<i32>
  // CHECK:   %[[F:.+]] = stablehlo.convert %[[T]] : (tensor<i32>) -> tensor<f32>
  // CHECK:   %[[B:.+]] = stablehlo.broadcast_in_dim %[[F]]
  // CHECK:   %[[SUM:.+]] = stablehlo.add %[[ACC]], %[[B]]
  // CHECK:   scf.yield %[[SUM]] : tensor<4xf32>
  // CHECK: }
  // CHECK: %[[COUNT:.+]] = stablehlo.constant dense<10> : tensor<i32>
  // CHECK-NOT: scf.while
  // CHECK: return %[[COUNT]], %[[R]]
  %r:2 = stablehlo.while(%i = %start, %acc = %x) : tensor<i32>, tensor<4xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %limit, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %f = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %sum = stablehlo.add %acc, %b : tensor<4xf32>
    %next = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %next, %sum : tensor<i32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<i32>, tensor<4xf32>
}

// -----

// An unsigned comparison, a step of 2 or a condition that computes more
// than the comparison keeps the scf.while.
// CHECK-LABEL: func @not_counted
func.func @not_counted(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %limit = stablehlo.constant dense<10> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  // CHECK: scf.while
  %a:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i32>, tensor<4xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %limit, UNSIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %next, %acc : tensor<i32>, tensor<4xf32>
  }
  // CHECK: scf.while
  %b:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i32>, tensor<4xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %limit, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %two : tensor<i32>
    stablehlo.return %next, %acc : tensor<i32>, tensor<4xf32>
  }
  // CHECK: scf.while
  %c:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i32>, tensor<4xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %limit, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %first = stablehlo.slice %acc [0:1] : (tensor<4xf32>) -> tensor<1xf32>
    %zf = stablehlo.constant dense<0.0> : tensor<1xf32>
    %pos = stablehlo.compare GT, %first, %zf : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>
    %p = stablehlo.reshape %pos : (tensor<1xi1>) -> tensor<i1>
    %go = stablehlo.and %lt, %p : tensor<i1>
    stablehlo.return %go : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %next, %acc : tensor<i32>, tensor<4xf32>
  }
  // CHECK-NOT: scf.for
  return %a#1, %b#1, %c#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Unsigned values are carried as signless ones and bitcast at the boundaries.
// CHECK-LABEL: func @while_unsigned
func.func @while_unsigned(%init: tensor<2xui32>, %n: tensor<i1>) -> tensor<2xui32> {
  // CHECK: %[[INIT:.+]] = stablehlo.bitcast_convert %arg0 : (tensor<2xui32>) -> tensor<2xi32>
  // CHECK: %[[R:.+]] = scf.while (%[[X:.+]] = %[[INIT]]) : (tensor<2xi32>) -> tensor<2xi32> {
  // CHECK:   stablehlo.bitcast_convert %[[X]] : (tensor<2xi32>) -> tensor<2xui32>
  // CHECK:   scf.condition(%{{.+}}) %[[X]] : tensor<2xi32>
  // CHECK: } do {
  // CHECK: ^bb0(%[[BX:.+]]: tensor<2xi32>):
  // CHECK:   %[[U:.+]] = stablehlo.bitcast_convert %[[BX]] : (tensor<2xi32>) -> tensor<2xui32>
  // CHECK:   %[[SUM:.+]] = stablehlo.add %[[U]], %[[U]] : tensor<2xui32>
  // CHECK:   %[[S:.+]] = stablehlo.bitcast_convert %[[SUM]] : (tensor<2xui32>) -> tensor<2xi32>
  // CHECK:   scf.yield %[[S]] : tensor<2xi32>
  // CHECK: }
  // CHECK: %[[OUT:.+]] = stablehlo.bitcast_convert %[[R]] : (tensor<2xi32>) -> tensor<2xui32>
  // CHECK: return %[[OUT]]
  %r = stablehlo.while(%x = %init) : tensor<2xui32>
  cond {
    stablehlo.return %n : tensor<i1>
  } do {
    %sum = stablehlo.add %x, %x : tensor<2xui32>
    stablehlo.return %sum : tensor<2xui32>
  }
  return %r : tensor<2xui32>
}

// -----

// CHECK-LABEL: func @if_op
func.func @if_op(%pred: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: %[[P:.+]] = tensor.extract %arg0[] : tensor<i1>
  // CHECK: %[[R:.+]] = scf.if %[[P]] -> (tensor<3xf32>) {
  // CHECK:   %[[NEG:.+]] = stablehlo.negate %arg1
  // CHECK:   scf.yield %[[NEG]] : tensor<3xf32>
  // CHECK: } else {
  // CHECK:   scf.yield %arg1 : tensor<3xf32>
  // CHECK: }
  // CHECK: return %[[R]]
  %r = "stablehlo.if"(%pred) ({
    %neg = stablehlo.negate %x : tensor<3xf32>
    stablehlo.return %neg : tensor<3xf32>
  }, {
    stablehlo.return %x : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

// The last branch is the default, which is what an out-of-range index selects.
// CHECK-LABEL: func @case_op
func.func @case_op(%index: tensor<i32>, %x: tensor<ui8>) -> tensor<ui8> {
  // CHECK: %[[I:.+]] = tensor.extract %arg0[] : tensor<i32>
  // CHECK: %[[IDX:.+]] = arith.index_cast %[[I]] : i32 to index
  // CHECK: %[[R:.+]] = scf.index_switch %[[IDX]] -> tensor<i8>
  // CHECK: case 0 {
  // CHECK:   stablehlo.negate
  // CHECK: case 1 {
  // CHECK:   stablehlo.add
  // CHECK: default {
  // CHECK:   stablehlo.multiply
  // CHECK: %[[OUT:.+]] = stablehlo.bitcast_convert %[[R]] : (tensor<i8>) -> tensor<ui8>
  // CHECK: return %[[OUT]]
  %r = "stablehlo.case"(%index) ({
    %0 = stablehlo.negate %x : tensor<ui8>
    stablehlo.return %0 : tensor<ui8>
  }, {
    %0 = stablehlo.add %x, %x : tensor<ui8>
    stablehlo.return %0 : tensor<ui8>
  }, {
    %0 = stablehlo.multiply %x, %x : tensor<ui8>
    stablehlo.return %0 : tensor<ui8>
  }) : (tensor<i32>) -> tensor<ui8>
  return %r : tensor<ui8>
}

// -----

// CHECK-LABEL: func @nested
func.func @nested(%pred: tensor<i1>, %x: tensor<i32>) -> tensor<i32> {
  // CHECK: scf.if
  // CHECK:   scf.while
  // CHECK-NOT: stablehlo.while
  // CHECK-NOT: stablehlo.if
  %r = "stablehlo.if"(%pred) ({
    %w = stablehlo.while(%i = %x) : tensor<i32>
    cond {
      stablehlo.return %pred : tensor<i1>
    } do {
      stablehlo.return %i : tensor<i32>
    }
    stablehlo.return %w : tensor<i32>
  }, {
    stablehlo.return %x : tensor<i32>
  }) : (tensor<i1>) -> tensor<i32>
  return %r : tensor<i32>
}

// -----

// CHECK-LABEL: func @optimization_barrier
func.func @optimization_barrier(%x: tensor<f32>, %y: tensor<2xi32>) -> (tensor<2xi32>, tensor<f32>) {
  // CHECK-NOT: optimization_barrier
  // CHECK: return %arg1, %arg0
  %r:2 = stablehlo.optimization_barrier %x, %y : tensor<f32>, tensor<2xi32>
  return %r#1, %r#0 : tensor<2xi32>, tensor<f32>
}
