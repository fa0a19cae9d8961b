// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-scatter)' | FileCheck %s

// One loop per update dimension; out-of-bounds elements keep the result as it is:
// an elementwise computation runs at index 0 instead, whose element is written back.
// CHECK-LABEL: func @scatter_add
func.func @scatter_add(%arg0: tensor<5xf32>, %arg1: tensor<2x1xi64>, %arg2: tensor<2xf32>) -> tensor<5xf32> {
  // CHECK: %[[LOOP:.+]] = scf.for %[[K:[a-z0-9_]+]] = {{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %arg0) -> (tensor<5xf32>)
  // CHECK: %[[START:.+]] = tensor.extract %arg1[%[[K]], %{{.+}}] : tensor<2x1xi64>
  // CHECK: %[[ABOVE:.+]] = arith.cmpi sge, %[[START]]
  // CHECK: %[[BELOW:.+]] = arith.cmpi slt, %[[START]]
  // CHECK: %[[IN:.+]] = arith.andi %[[ABOVE]], %[[BELOW]] : i1
  // CHECK: %[[I:.+]] = arith.index_cast %[[START]] : i64 to index
  // CHECK: %[[J:.+]] = arith.select %[[IN]], %[[I]], %{{.+}} : index
  // CHECK-NOT: scf.if
  // CHECK: %[[OLD:.+]] = tensor.extract %[[ACC]][%[[J]]] : tensor<5xf32>
  // CHECK: %[[A:.+]] = tensor.from_elements %[[OLD]] : tensor<f32>
  // CHECK: %[[UPDATE:.+]] = tensor.extract %arg2[%[[K]]] : tensor<2xf32>
  // CHECK: %[[B:.+]] = tensor.from_elements %[[UPDATE]] : tensor<f32>
  // CHECK: %[[SUM:.+]] = stablehlo.add %[[A]], %[[B]] : tensor<f32>
  // CHECK: %[[VALUE:.+]] = tensor.extract %[[SUM]][] : tensor<f32>
  // CHECK: %[[KEPT:.+]] = tensor.extract %[[ACC]][%[[J]]] : tensor<5xf32>
  // CHECK: %[[CHOSEN:.+]] = arith.select %[[IN]], %[[VALUE]], %[[KEPT]] : f32
  // CHECK: %[[INSERTED:.+]] = tensor.insert %[[CHOSEN]] into %[[ACC]][%[[J]]] : tensor<5xf32>
  // CHECK: scf.yield %[[INSERTED]] : tensor<5xf32>
  // CHECK: return %[[LOOP]]
  // CHECK-NOT: stablehlo.scatter
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Unsigned values are carried as signless; indices of any type are read as i64.
// CHECK-LABEL: func @scatter_unsigned
func.func @scatter_unsigned(%arg0: tensor<5xui8>, %arg1: tensor<2x1xui32>, %arg2: tensor<2xui8>) -> tensor<5xui8> {
  // CHECK: %[[INDICES:.+]] = stablehlo.convert %arg1 : (tensor<2x1xui32>) -> tensor<2x1xi64>
  // CHECK: %[[INIT:.+]] = stablehlo.bitcast_convert %arg0 : (tensor<5xui8>) -> tensor<5xi8>
  // CHECK: %[[UPDATES:.+]] = stablehlo.bitcast_convert %arg2 : (tensor<2xui8>) -> tensor<2xi8>
  // CHECK: %[[LOOP:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[INIT]]) -> (tensor<5xi8>)
  // CHECK: tensor.extract %[[INDICES]]
  // CHECK: tensor.extract %[[UPDATES]]
  // CHECK: stablehlo.bitcast_convert %{{.+}} : (tensor<i8>) -> tensor<ui8>
  // CHECK: %[[OUT:.+]] = stablehlo.bitcast_convert %[[LOOP]] : (tensor<5xi8>) -> tensor<5xui8>
  // CHECK: return %[[OUT]]
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<ui8>, %b: tensor<ui8>):
    stablehlo.return %b : tensor<ui8>
  }) : (tensor<5xui8>, tensor<2x1xui32>, tensor<2xui8>) -> tensor<5xui8>
  return %0 : tensor<5xui8>
}

// -----

// Several inputs are carried together and updated by one computation.
// CHECK-LABEL: func @scatter_variadic
func.func @scatter_variadic(%arg0: tensor<3x4xf32>, %arg1: tensor<3x4xi32>, %arg2: tensor<2x2xi64>, %arg3: tensor<2xf32>, %arg4: tensor<2xi32>) -> (tensor<3x4xf32>, tensor<3x4xi32>) {
  // CHECK: %[[LOOP:.+]]:2 = scf.for {{.*}} iter_args(%[[X:.+]] = %arg0, %[[Y:.+]] = %arg1) -> (tensor<3x4xf32>, tensor<3x4xi32>)
  // CHECK: %[[ROW:.+]] = tensor.extract %arg2[%{{.+}}, %{{.+}}] : tensor<2x2xi64>
  // CHECK: %[[COL:.+]] = tensor.extract %arg2[%{{.+}}, %{{.+}}] : tensor<2x2xi64>
  // CHECK-NOT: scf.if
  // CHECK: stablehlo.add %{{.+}}, %{{.+}} : tensor<f32>
  // CHECK: stablehlo.add %{{.+}}, %{{.+}} : tensor<i32>
  // CHECK: %[[NX:.+]] = tensor.insert %{{.+}} into %[[X]][%{{.+}}, %{{.+}}] : tensor<3x4xf32>
  // CHECK: %[[NY:.+]] = tensor.insert %{{.+}} into %[[Y]][%{{.+}}, %{{.+}}] : tensor<3x4xi32>
  // CHECK: scf.yield %[[NX]], %[[NY]]
  // CHECK: return %[[LOOP]]#0, %[[LOOP]]#1
  %0:2 = "stablehlo.scatter"(%arg0, %arg1, %arg2, %arg3, %arg4) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
    %s = stablehlo.add %a, %c : tensor<f32>
    %t = stablehlo.add %b, %d : tensor<i32>
    stablehlo.return %s, %t : tensor<f32>, tensor<i32>
  }) : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<2x2xi64>, tensor<2xf32>, tensor<2xi32>) -> (tensor<3x4xf32>, tensor<3x4xi32>)
  return %0#0, %0#1 : tensor<3x4xf32>, tensor<3x4xi32>
}

// -----

// Window dimensions add the loop index to the start index; batching
// dimensions take the scatter index as it is.
// CHECK-LABEL: func @scatter_window_and_batching
func.func @scatter_window_and_batching(%arg0: tensor<2x5x3xf32>, %arg1: tensor<2x1xi64>, %arg2: tensor<2x2xf32>) -> tensor<2x5x3xf32> {
  // CHECK: scf.for %[[B:[a-z0-9_]+]] =
  // CHECK: scf.for %[[W:[a-z0-9_]+]] =
  // CHECK: %[[START:.+]] = tensor.extract %arg1[%[[B]], %{{.+}}] : tensor<2x1xi64>
  // CHECK: %[[I:.+]] = arith.index_cast %[[START]] : i64 to index
  // CHECK: %[[ROW:.+]] = arith.addi %[[I]], %[[W]] : index
  // CHECK: %[[BATCH:.+]] = arith.select %{{.+}}, %[[B]], %{{.+}} : index
  // CHECK: %[[IN_ROW:.+]] = arith.select %{{.+}}, %[[ROW]], %{{.+}} : index
  // CHECK: tensor.extract %{{.+}}[%[[BATCH]], %[[IN_ROW]], %{{.+}}] : tensor<2x5x3xf32>
  // CHECK: tensor.extract %arg2[%[[B]], %[[W]]] : tensor<2x2xf32>
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [2], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<2x5x3xf32>, tensor<2x1xi64>, tensor<2x2xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

// A computation of other ops than elementwise ones runs only in bounds, in a branch.
// CHECK-LABEL: func @scatter_in_a_branch
func.func @scatter_in_a_branch(%arg0: tensor<5xf32>, %arg1: tensor<1x1xi64>, %arg2: tensor<1xf32>) -> tensor<5xf32> {
  // CHECK: %[[IN:.+]] = arith.andi
  // CHECK-NOT: arith.select
  // CHECK: %[[NEW:.+]] = scf.if %[[IN]] -> (tensor<5xf32>)
  // CHECK: stablehlo.reshape
  // CHECK: %[[INSERTED:.+]] = tensor.insert
  // CHECK: scf.yield %[[INSERTED]] : tensor<5xf32>
  // CHECK: } else {
  // CHECK: scf.yield %{{.+}} : tensor<5xf32>
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.reshape %b : (tensor<f32>) -> tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) : (tensor<5xf32>, tensor<1x1xi64>, tensor<1xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// No updates: the result is the operand.
// CHECK-LABEL: func @scatter_empty_updates
func.func @scatter_empty_updates(%arg0: tensor<5xf32>, %arg1: tensor<0x1xi64>, %arg2: tensor<0xf32>) -> tensor<5xf32> {
  // CHECK-NOT: scf.for
  // CHECK: return %arg0
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<5xf32>, tensor<0x1xi64>, tensor<0xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @scatter_dynamic(%arg0: tensor<?xf32>, %arg1: tensor<2x1xi64>, %arg2: tensor<2xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{expected statically shaped operands}}
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<?xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
