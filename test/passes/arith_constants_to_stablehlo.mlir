// RUN: shlo-opt %s --shlo-arith-constants-to-stablehlo | FileCheck %s

// Tensor constants become StableHLO's; scalars and index tensors stay.
// CHECK-LABEL: func.func @constants
// CHECK-DAG: %[[T:.+]] = stablehlo.constant dense<1> : tensor<1xi64>
// CHECK-DAG: %[[F:.+]] = stablehlo.constant dense<5.000000e-01> : tensor<2xf32>
// CHECK-DAG: arith.constant 0 : index
// CHECK-DAG: arith.constant dense<[1, 2]> : tensor<2xindex>
// CHECK-NOT: arith.constant dense<{{.*}}> : tensor<{{.*}}xi64>
// CHECK: stablehlo.convert %[[T]]
func.func @constants() -> (tensor<1xf32>, tensor<2xf32>, index, tensor<2xindex>) {
  %t = arith.constant dense<1> : tensor<1xi64>
  %f = arith.constant dense<0.5> : tensor<2xf32>
  %i = arith.constant 0 : index
  %s = arith.constant dense<[1, 2]> : tensor<2xindex>
  %c = stablehlo.convert %t : (tensor<1xi64>) -> tensor<1xf32>
  return %c, %f, %i, %s : tensor<1xf32>, tensor<2xf32>, index, tensor<2xindex>
}
