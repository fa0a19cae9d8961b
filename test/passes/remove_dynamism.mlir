// The dynamism seed's add_one example, stage by stage, then the whole pipeline.
// RUN: shlo-opt %s --stablehlo-refine-arguments='types=tensor<16xf32>' | FileCheck %s --check-prefix=ARGS
// RUN: shlo-opt %s --stablehlo-refine-arguments='types=tensor<16xf32>' --stablehlo-refine-shapes | FileCheck %s --check-prefix=SHAPES
// RUN: shlo-opt %s --stablehlo-refine-arguments='types=tensor<16xf32>' --stablehlo-refine-shapes --stablehlo-canonicalize-dynamism | FileCheck %s --check-prefix=STATIC
// RUN: shlo-opt %s --stablehlo-refine-arguments='types=tensor<16xf32>' --stablehlo-refine-shapes --stablehlo-canonicalize-dynamism --shlo-simplify | FileCheck %s --check-prefix=SIMPLE
// RUN: shlo-opt %s --shlo-remove-dynamism='types=tensor<16xf32>' | FileCheck %s
// RUN: shlo-opt %s --pass-pipeline='builtin.module(shlo-remove-dynamism{types=tensor<16xf32>})' | FileCheck %s

// ARGS-LABEL: func.func public @main
// ARGS-SAME: (%[[ARG:.+]]: tensor<16xf32>) -> tensor<?xf32>
// ARGS: %[[SHAPE:.+]] = stablehlo.constant dense<16> : tensor<1xi64>
// ARGS: %[[WRAPPED:.+]] = stablehlo.custom_call @stablehlo.shape_refinement_operand_wrapper(%[[ARG]], %[[SHAPE]]) {indices_of_shape_operands = dense<1> : tensor<1xi64>} : (tensor<16xf32>, tensor<1xi64>) -> tensor<?xf32>
// ARGS: stablehlo.dynamic_broadcast_in_dim {{.*}} -> tensor<?xf32>
// ARGS: stablehlo.add %[[WRAPPED]], {{.*}} : tensor<?xf32>

// SHAPES-LABEL: func.func public @main
// SHAPES-SAME: (%[[ARG:.+]]: tensor<16xf32>) -> tensor<16xf32>
// SHAPES: %[[ONE:.+]] = stablehlo.constant dense<1.000000e+00> : tensor<f32>
// SHAPES: %[[SIZE:.+]] = stablehlo.constant dense<16> : tensor<1xi32>
// SHAPES: %[[BCAST:.+]] = stablehlo.dynamic_broadcast_in_dim %[[ONE]], %[[SIZE]], dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<16xf32>
// SHAPES: stablehlo.add %[[ARG]], %[[BCAST]] : tensor<16xf32>

// STATIC-LABEL: func.func public @main
// STATIC: %[[ONE:.+]] = stablehlo.constant dense<1.000000e+00> : tensor<f32>
// STATIC: %[[BCAST:.+]] = stablehlo.broadcast_in_dim %[[ONE]], dims = [] : (tensor<f32>) -> tensor<16xf32>
// STATIC-NOT: dynamic_broadcast_in_dim
// STATIC: stablehlo.add %{{.+}}, %[[BCAST]] : tensor<16xf32>

// SIMPLE-LABEL: func.func public @main
// SIMPLE-NEXT: %[[ONE:.+]] = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
// SIMPLE-NEXT: %[[SUM:.+]] = stablehlo.add %arg0, %[[ONE]] : tensor<16xf32>
// SIMPLE-NEXT: return %[[SUM]] : tensor<16xf32>

// The seed's final static program, exactly.
// CHECK-LABEL: func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {
// CHECK-NEXT:    %[[CST:.+]] = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
// CHECK-NEXT:    %[[SUM:.+]] = stablehlo.add %arg0, %[[CST]] : tensor<16xf32>
// CHECK-NEXT:    return %[[SUM]] : tensor<16xf32>
// CHECK-NEXT:  }
func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %cst = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %2 = stablehlo.dynamic_broadcast_in_dim %cst, %1, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
  %3 = stablehlo.add %arg0, %2 : tensor<?xf32>
  return %3 : tensor<?xf32>
}
