// RUN: shlo-opt %s --split-input-file --shlo-legalize-shape-computations | FileCheck %s

// torch-mlir's i64 size arithmetic: a reshape to [batch, 4].
// CHECK-LABEL: func.func @reshape_to_batch
// CHECK-NOT: tensor.
// CHECK-NOT: arith.
// CHECK: %[[D:.+]] = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
// CHECK: %[[D64:.+]] = stablehlo.convert %[[D]] : (tensor<i32>) -> tensor<i64>
// CHECK: %[[B:.+]] = stablehlo.reshape %[[D64]] : (tensor<i64>) -> tensor<1xi64>
// CHECK: %[[FOUR:.+]] = stablehlo.reshape %{{.+}} : (tensor<i64>) -> tensor<1xi64>
// CHECK: %[[S:.+]] = stablehlo.concatenate %[[B]], %[[FOUR]], dim = 0
// CHECK: stablehlo.dynamic_reshape %arg1, %[[S]] : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
func.func @reshape_to_batch(%arg0: tensor<?x4xf32>, %arg1: tensor<?xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : i64
  %d = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %n = arith.index_cast %d : index to i64
  %s = tensor.from_elements %n, %c4 : tensor<2xi64>
  %r = stablehlo.dynamic_reshape %arg1, %s : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// A broadcast under shape.assuming: the region is inlined, the constraint is
// an assertion, and index extents reach the broadcast as i64.
// CHECK-LABEL: func.func @assuming_broadcast
// CHECK-NOT: shape.
// CHECK: stablehlo.custom_call @shape_assertion(%{{.+}}, %{{.+}}, %{{.+}}) {error_message = "shapes {0} and {1} do not broadcast", has_side_effect = true}
// CHECK: %[[ONES:.+]] = stablehlo.constant dense<1> : tensor<2xi64>
// CHECK: %[[EQ:.+]] = stablehlo.compare EQ, %[[L:.+]], %[[ONES]]
// CHECK: %[[SHAPE:.+]] = stablehlo.select %[[EQ]], %{{.+}}, %[[L]] : tensor<2xi1>, tensor<2xi64>
// CHECK: stablehlo.dynamic_broadcast_in_dim %arg0, %[[SHAPE]], dims = [0, 1] : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
// CHECK: stablehlo.add
// CHECK-NEXT: return
func.func @assuming_broadcast(%arg0: tensor<?x3xf32>, %arg1: tensor<3xf32>) -> tensor<?x3xf32> {
  %0 = shape.shape_of %arg0 : tensor<?x3xf32> -> tensor<2xindex>
  %1 = shape.const_shape [3] : tensor<1xindex>
  %w = shape.cstr_broadcastable %0, %1 : tensor<2xindex>, tensor<1xindex>
  %r = shape.assuming %w -> (tensor<?x3xf32>) {
    %2 = shape.broadcast %0, %1 : tensor<2xindex>, tensor<1xindex> -> tensor<2xindex>
    %3 = stablehlo.dynamic_broadcast_in_dim %arg0, %2, dims = [0, 1] : (tensor<?x3xf32>, tensor<2xindex>) -> tensor<?x3xf32>
    %4 = stablehlo.dynamic_broadcast_in_dim %arg1, %2, dims = [1] : (tensor<3xf32>, tensor<2xindex>) -> tensor<?x3xf32>
    %5 = stablehlo.add %3, %4 : tensor<?x3xf32>
    shape.assuming_yield %5 : tensor<?x3xf32>
  }
  return %r : tensor<?x3xf32>
}

// -----

// Floor division of sizes rounds toward minus infinity, not zero.
// CHECK-LABEL: func.func @floor_division
// CHECK: %[[Q:.+]] = stablehlo.divide
// CHECK: %[[R:.+]] = stablehlo.remainder
// CHECK: %[[LOWER:.+]] = stablehlo.subtract %[[Q]]
// CHECK: stablehlo.select %{{.+}}, %[[LOWER]], %[[Q]]
func.func @floor_division(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %d = tensor.dim %arg0, %c0 : tensor<?xf32>
  %q = arith.floordivsi %d, %c3 : index
  %s = tensor.from_elements %q : tensor<1xindex>
  %r = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xindex>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Integer data is not a size: tensor.extract of a data tensor stays, and so
// does the size a non-StableHLO op takes (refinement then names that op).
// CHECK-LABEL: func.func @not_sizes
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: tensor.extract %arg0[%[[C0]]] : tensor<3xi64>
// CHECK: %[[D:.+]] = tensor.dim %arg1, %[[C0]]
// CHECK: tensor.empty(%[[D]]) : tensor<?xf32>
func.func @not_sizes(%arg0: tensor<3xi64>, %arg1: tensor<?xf32>) -> (i64, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %arg0[%c0] : tensor<3xi64>
  %d = tensor.dim %arg1, %c0 : tensor<?xf32>
  %t = tensor.empty(%d) : tensor<?xf32>
  return %e, %t : i64, tensor<?xf32>
}

// -----

// torch-mlir infers a reshape's -1 with unsigned ops on the element count:
// sizes are never negative, so they are the signed StableHLO ops.
// CHECK-LABEL: func.func @unsigned_size_arithmetic
// CHECK-NOT: arith.
// CHECK: %[[COUNT:.+]] = stablehlo.multiply
// CHECK: %[[ROWS:.+]] = stablehlo.divide %[[COUNT]], %{{.+}} : tensor<i64>
// CHECK: %[[LEFT:.+]] = stablehlo.remainder %[[COUNT]], %{{.+}} : tensor<i64>
// CHECK: stablehlo.maximum %[[ROWS]], %[[LEFT]] : tensor<i64>
// CHECK: stablehlo.minimum %[[ROWS]], %[[LEFT]] : tensor<i64>
func.func @unsigned_size_arithmetic(%arg0: tensor<?x6xf32>) -> (tensor<?x3xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : i64
  %c6 = arith.constant 6 : i64
  %d = tensor.dim %arg0, %c0 : tensor<?x6xf32>
  %n = arith.index_cast %d : index to i64
  %count = arith.muli %n, %c6 : i64
  %rows = arith.divui %count, %c3 : i64
  %left = arith.remui %count, %c3 : i64
  %most = arith.maxui %rows, %left : i64
  %least = arith.minui %rows, %left : i64
  %s = tensor.from_elements %most, %c3 : tensor<2xi64>
  %r = stablehlo.dynamic_reshape %arg0, %s : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  %t = tensor.from_elements %least : tensor<1xi64>
  %f = stablehlo.dynamic_reshape %arg0, %t : (tensor<?x6xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %r, %f : tensor<?x3xf32>, tensor<?xf32>
}
