// Text, bytecode and portable artifacts are read alike, from files or stdin.
// RUN: shlo-opt %s --emit-bytecode | shlo-opt - | FileCheck %s
// RUN: shlo-opt %s --emit-bytecode -o %t.mlirbc && shlo-opt %t.mlirbc --shlo-simplify | FileCheck %s --check-prefix=SIMPLE
// RUN: shlo-opt %s --emit-portable-artifact --target-version=1.0.0 -o %t.vhlo && shlo-opt %t.vhlo | FileCheck %s
// RUN: shlo-opt %s --emit-portable-artifact --target-version=1.0.0 | shlo-opt - --shlo-simplify | FileCheck %s --check-prefix=SIMPLE
// RUN: not shlo-opt %s --emit-portable-artifact --target-version=99.0.0 2>&1 | FileCheck %s --check-prefix=VERSION
// RUN: not shlo-opt %s --emit-portable-artifact --target-version=99999999999999999999.0.0 2>&1 | FileCheck %s --check-prefix=BIG-VERSION
// RUN: not shlo-opt %s --emit-portable-artifact --target-version=1.0 2>&1 | FileCheck %s --check-prefix=BAD-VERSION
// RUN: shlo-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @scale
// CHECK: stablehlo.broadcast_in_dim
// SIMPLE-LABEL: func.func @scale
// SIMPLE: stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
// SIMPLE-NOT: broadcast_in_dim
// VERSION: shlo-opt: error: --target-version: StableHLO target version 99.0.0 is not supported; this StableHLO writes versions {{[0-9.]+}} to {{[0-9.]+}}
// BIG-VERSION: shlo-opt: error: --target-version: invalid StableHLO target version '99999999999999999999.0.0'; expected X.Y.Z
// BIG-VERSION-NOT: LLVM ERROR
// BAD-VERSION: shlo-opt: error: --target-version: invalid StableHLO target version '1.0'; expected X.Y.Z
// DEBUG: loc("{{.*}}shlo_opt_formats.mlir":[[# @LINE + 1]]:
func.func @scale(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<2.0> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
