// RUN: shlo-opt %s --shlo-scalar-loop-state | FileCheck %s

// The 0-d tensors a loop carries become scalars (extracted before the loop,
// rebuilt as tensors where the regions and the loop's users take them); the
// vector stays a tensor.
// CHECK-LABEL: func.func @carries
// CHECK-SAME: (%[[N:.+]]: tensor<i32>, %[[V:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<f32>)
// CHECK: %[[I0:.+]] = tensor.extract %{{.+}}[] : tensor<i32>
// CHECK: %[[X0:.+]] = tensor.extract %[[X]][] : tensor<f32>
// CHECK: %[[W:.+]]:3 = scf.while (%[[I:.+]] = %[[I0]], %[[VB:.+]] = %[[V]], %[[XB:.+]] = %[[X0]]) : (i32, tensor<4xf32>, f32) -> (i32, tensor<4xf32>, f32) {
// CHECK: %[[XT:.+]] = tensor.from_elements %[[XB]] : tensor<f32>
// CHECK: %[[IT:.+]] = tensor.from_elements %[[I]] : tensor<i32>
// CHECK: %[[LT:.+]] = stablehlo.compare LT, %[[IT]], %[[N]]
// CHECK: %[[IC:.+]] = tensor.extract %[[IT]][] : tensor<i32>
// CHECK: %[[XC:.+]] = tensor.extract %[[XT]][] : tensor<f32>
// CHECK: scf.condition(%{{.+}}) %[[IC]], %[[VB]], %[[XC]] : i32, tensor<4xf32>, f32
// CHECK: } do {
// CHECK: ^bb0(%[[IA:.+]]: i32, %[[VA:.+]]: tensor<4xf32>, %[[XA:.+]]: f32):
// CHECK: %[[NEXT:.+]] = stablehlo.add
// CHECK: %[[Y:.+]] = stablehlo.multiply
// CHECK: %[[NEXTS:.+]] = tensor.extract %[[NEXT]][] : tensor<i32>
// CHECK: %[[YS:.+]] = tensor.extract %[[Y]][] : tensor<f32>
// CHECK: scf.yield %[[NEXTS]], %[[VA]], %[[YS]] : i32, tensor<4xf32>, f32
// CHECK: %[[XR:.+]] = tensor.from_elements %[[W]]#2 : tensor<f32>
// CHECK: %[[IR:.+]] = tensor.from_elements %[[W]]#0 : tensor<i32>
// CHECK: return %[[IR]], %[[W]]#1, %[[XR]]
func.func @carries(%n: tensor<i32>, %v: tensor<4xf32>, %x: tensor<f32>) -> (tensor<i32>, tensor<4xf32>, tensor<f32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = scf.while (%i = %c0, %w = %v, %y = %x) : (tensor<i32>, tensor<4xf32>, tensor<f32>) -> (tensor<i32>, tensor<4xf32>, tensor<f32>) {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %p = tensor.extract %lt[] : tensor<i1>
    scf.condition(%p) %i, %w, %y : tensor<i32>, tensor<4xf32>, tensor<f32>
  } do {
  ^bb0(%i: tensor<i32>, %w: tensor<4xf32>, %y: tensor<f32>):
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    %z = stablehlo.multiply %y, %y : tensor<f32>
    scf.yield %next, %w, %z : tensor<i32>, tensor<4xf32>, tensor<f32>
  }
  return %r#0, %r#1, %r#2 : tensor<i32>, tensor<4xf32>, tensor<f32>
}
