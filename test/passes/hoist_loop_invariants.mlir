// RUN: shlo-opt %s --shlo-hoist-loop-invariants --split-input-file | FileCheck %s

// A weight the body returns unchanged is read from outside, its carry is
// dropped, and its transpose moves before the loop; the constant it needs
// for nothing else stays. The loop's result for it is the weight itself.
// CHECK-LABEL: func.func @weight
// CHECK-SAME: (%[[W:.+]]: tensor<4x8xf32>, %[[X:.+]]: tensor<2x4xf32>)
// CHECK: %[[T:.+]] = stablehlo.transpose %[[W]], dims = [1, 0]
// CHECK: %[[R:.+]]:2 = stablehlo.while(%[[I:.+]] = %{{.+}}, %[[XX:.+]] = %[[X]]) : tensor<i32>, tensor<2x4xf32>
// CHECK: } do {
// CHECK-NOT: stablehlo.transpose
// CHECK: stablehlo.dot_general %[[XX]], %[[T]]
// CHECK: stablehlo.return %{{.+}}, %{{.+}} : tensor<i32>, tensor<2x4xf32>
// CHECK: return %[[R]]#1, %[[W]]
func.func @weight(%w: tensor<4x8xf32>, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x8xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %ww = %w, %xx = %x) : tensor<i32>, tensor<4x8xf32>, tensor<2x4xf32>
    cond {
      %c = stablehlo.constant dense<3> : tensor<i32>
      %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %t = stablehlo.transpose %ww, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
      %d = stablehlo.dot_general %xx, %t, contracting_dims = [1] x [1] : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
      %s = stablehlo.slice %d [0:2, 0:4] : (tensor<2x8xf32>) -> tensor<2x4xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n, %ww, %s : tensor<i32>, tensor<4x8xf32>, tensor<2x4xf32>
    }
  return %r#2, %r#1 : tensor<2x4xf32>, tensor<4x8xf32>
}

// -----

// A bound the loop carries unchanged is read from outside in the condition too.
// CHECK-LABEL: func.func @bound
// CHECK-SAME: (%[[N:.+]]: tensor<i32>)
// CHECK: stablehlo.while(%{{.+}} = %{{.+}}) : tensor<i32>
// CHECK: stablehlo.compare LT, %{{.+}}, %[[N]]
func.func @bound(%n: tensor<i32>) -> tensor<i32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %m = %n) : tensor<i32>, tensor<i32>
    cond {
      %p = stablehlo.compare LT, %i, %m : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %next, %m : tensor<i32>, tensor<i32>
    }
  return %r#0 : tensor<i32>
}

// -----

// What stays: a broadcast (its result is larger than its operand, so it
// would be materialized), a random number (it differs per iteration), ops
// on carried values, and an op whose operand stays.
// CHECK-LABEL: func.func @stays
// CHECK: stablehlo.while
// CHECK: } do {
// CHECK: stablehlo.broadcast_in_dim
// CHECK: stablehlo.rng
// CHECK: stablehlo.add
// CHECK: stablehlo.negate
func.func @stays(%x: tensor<f32>, %v: tensor<16xf32>) -> tensor<16xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %xx = %x, %vv = %v) : tensor<i32>, tensor<f32>, tensor<16xf32>
    cond {
      %c = stablehlo.constant dense<3> : tensor<i32>
      %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %b = stablehlo.broadcast_in_dim %xx, dims = [] : (tensor<f32>) -> tensor<16xf32>
      %lo = stablehlo.constant dense<0.0> : tensor<f32>
      %hi = stablehlo.constant dense<1.0> : tensor<f32>
      %shape = stablehlo.constant dense<16> : tensor<1xi64>
      %u = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<16xf32>
      %s = stablehlo.add %vv, %b : tensor<16xf32>
      %t = stablehlo.add %s, %u : tensor<16xf32>
      %neg = stablehlo.negate %t : tensor<16xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n, %xx, %neg : tensor<i32>, tensor<f32>, tensor<16xf32>
    }
  return %r#2 : tensor<16xf32>
}

// -----

// Nested loops, inside out: the inner loop's invariant leaves both loops.
// CHECK-LABEL: func.func @nested
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8xf32>
// CHECK: %[[E:.+]] = stablehlo.exponential %[[W]]
// CHECK: stablehlo.while
// CHECK: stablehlo.while
// CHECK: stablehlo.add %{{.+}}, %[[E]]
func.func @nested(%w: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %ww = %w, %vv = %v) : tensor<i32>, tensor<8xf32>, tensor<8xf32>
    cond {
      %c = stablehlo.constant dense<3> : tensor<i32>
      %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %s:3 = stablehlo.while(%j = %c0, %www = %ww, %acc = %vv) : tensor<i32>, tensor<8xf32>, tensor<8xf32>
        cond {
          %c = stablehlo.constant dense<2> : tensor<i32>
          %p = stablehlo.compare LT, %j, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %p : tensor<i1>
        } do {
          %e = stablehlo.exponential %www : tensor<8xf32>
          %a = stablehlo.add %acc, %e : tensor<8xf32>
          %one = stablehlo.constant dense<1> : tensor<i32>
          %n = stablehlo.add %j, %one : tensor<i32>
          stablehlo.return %n, %www, %a : tensor<i32>, tensor<8xf32>, tensor<8xf32>
        }
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n, %ww, %s#2 : tensor<i32>, tensor<8xf32>, tensor<8xf32>
    }
  return %r#2 : tensor<8xf32>
}
