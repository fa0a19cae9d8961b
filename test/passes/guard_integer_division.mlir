// RUN: shlo-opt %s --split-input-file --pass-pipeline='builtin.module(shlo-guard-integer-division)' | FileCheck %s

// CHECK-LABEL: func @signed_divide
// CHECK-SAME: (%[[X:.+]]: tensor<2xi8>, %[[Y:.+]]: tensor<2xi8>)
func.func @signed_divide(%x: tensor<2xi8>, %y: tensor<2xi8>) -> tensor<2xi8> {
  // CHECK-DAG: %[[ZERO:.+]] = stablehlo.compare EQ, %[[Y]], %{{.+}}
  // CHECK-DAG: %[[MIN:.+]] = stablehlo.constant dense<-128> : tensor<2xi8>
  // CHECK-DAG: %[[OVERFLOW:.+]] = stablehlo.and
  // CHECK: %[[BAD:.+]] = stablehlo.or %[[ZERO]], %[[OVERFLOW]]
  // CHECK: %[[SAFE:.+]] = stablehlo.select %[[BAD]], %{{.+}}, %[[Y]]
  // CHECK: %[[Q:.+]] = stablehlo.divide %[[X]], %[[SAFE]]
  // CHECK: %[[WRAPPED:.+]] = stablehlo.select %[[OVERFLOW]], %{{.+}}, %[[Q]]
  // CHECK: %[[ONES:.+]] = stablehlo.not
  // CHECK: %[[R:.+]] = stablehlo.select %[[ZERO]], %[[ONES]], %[[WRAPPED]]
  // CHECK: return %[[R]]
  %0 = stablehlo.divide %x, %y : tensor<2xi8>
  return %0 : tensor<2xi8>
}

// -----

// Unsigned division cannot overflow; a remainder by zero is the dividend.
// CHECK-LABEL: func @unsigned_remainder
// CHECK-SAME: (%[[X:.+]]: tensor<2xui16>, %[[Y:.+]]: tensor<2xui16>)
func.func @unsigned_remainder(%x: tensor<2xui16>, %y: tensor<2xui16>) -> tensor<2xui16> {
  // CHECK-NOT: stablehlo.and
  // CHECK: %[[ZERO:.+]] = stablehlo.compare EQ, %[[Y]]
  // CHECK: %[[SAFE:.+]] = stablehlo.select %[[ZERO]], %{{.+}}, %[[Y]]
  // CHECK: %[[R:.+]] = stablehlo.remainder %[[X]], %[[SAFE]]
  // CHECK: stablehlo.select %[[ZERO]], %[[X]], %[[R]]
  %0 = stablehlo.remainder %x, %y : tensor<2xui16>
  return %0 : tensor<2xui16>
}

// -----

// CHECK-LABEL: func @floats_are_left_alone
func.func @floats_are_left_alone(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK-NEXT: stablehlo.divide
  // CHECK-NEXT: return
  %0 = stablehlo.divide %x, %y : tensor<2xf32>
  return %0 : tensor<2xf32>
}
