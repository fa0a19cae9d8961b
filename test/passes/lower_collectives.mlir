// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-lower-collectives)' | FileCheck %s

// CHECK-LABEL: func @process_ids
func.func @process_ids() -> (tensor<ui32>, tensor<ui32>) {
  // CHECK-DAG: %[[R:.+]] = stablehlo.constant dense<0> : tensor<ui32>
  // CHECK-DAG: %[[P:.+]] = stablehlo.constant dense<0> : tensor<ui32>
  // CHECK: return %[[R]], %[[P]]
  %0 = stablehlo.replica_id : tensor<ui32>
  %1 = stablehlo.partition_id : tensor<ui32>
  return %0, %1 : tensor<ui32>, tensor<ui32>
}

// -----

// A group of one process: the operands come back unchanged.
// CHECK-LABEL: func @identities
func.func @identities(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  // CHECK-NOT: stablehlo.all_gather
  // CHECK-NOT: stablehlo.all_to_all
  // CHECK-NOT: stablehlo.collective_broadcast
  // CHECK-NOT: stablehlo.reduce_scatter
  // CHECK: return %arg0, %arg0, %arg0, %arg0
  %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = "stablehlo.collective_broadcast"(%x) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {scatter_dimension = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// The reduction of one value is that value, in the computation's element type.
// CHECK-LABEL: func @all_reduce_promotes
func.func @all_reduce_promotes(%x: tensor<3xf16>) -> tensor<3xf32> {
  // CHECK: %[[C:.+]] = stablehlo.convert %arg0 : (tensor<3xf16>) -> tensor<3xf32>
  // CHECK: return %[[C]]
  %0 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<> : tensor<0x0xi64>} : (tensor<3xf16>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func @collective_permute
func.func @collective_permute(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
  // CHECK: %[[Z:.+]] = stablehlo.constant dense<0> : tensor<2xi32>
  // CHECK: return %arg0, %[[Z]]
  %0 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<2xi32>) -> tensor<2xi32>
  %1 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<> : tensor<0x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2xi32>) -> tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func @collective_reduce
func.func @collective_reduce(%x: tensor<2xi64>) -> tensor<2xi64> {
  // CHECK: return %arg0
  %0 = "stablehlo.collective_reduce"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// Tokens nothing uses any more are dropped.
// CHECK-LABEL: func @dead_tokens
func.func @dead_tokens(%t: !stablehlo.token) -> tensor<ui32> {
  // CHECK-NOT: after_all
  // CHECK-NOT: create_token
  %0 = stablehlo.after_all %t : !stablehlo.token
  %1 = stablehlo.create_token : !stablehlo.token
  %2 = stablehlo.after_all %0, %1 : !stablehlo.token
  %3 = stablehlo.replica_id : tensor<ui32>
  return %3 : tensor<ui32>
}

// -----

module attributes {mhlo.num_replicas = 2 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @two_replicas() -> tensor<ui32> {
    // expected-error@+1 {{expected a single replica and a single partition, got mhlo.num_replicas = 2 and mhlo.num_partitions = 1}}
    %0 = stablehlo.replica_id : tensor<ui32>
    return %0 : tensor<ui32>
  }
}

// -----

func.func @group_beyond_the_grid(%x: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{expected replica ids in [0, 1), got 1}}
  %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @infeed(%t: !stablehlo.token) -> tensor<2xf32> {
  // expected-error@+1 {{expected no infeed: the CPU backend has no infeed queue}}
  %0:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @outfeed(%x: tensor<2xf32>, %t: !stablehlo.token) -> !stablehlo.token {
  // expected-error@+1 {{expected no outfeed: the CPU backend has no outfeed queue}}
  %0 = "stablehlo.outfeed"(%x, %t) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %0 : !stablehlo.token
}

// -----

func.func @host_send(%x: tensor<2xf32>, %t: !stablehlo.token) -> !stablehlo.token {
  // expected-error@+1 {{expected no host transfer: the CPU backend has no host send channel}}
  %0 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>, is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %0 : !stablehlo.token
}

// -----

func.func @device_recv(%t: !stablehlo.token) -> tensor<2xf32> {
  // expected-error@+1 {{expected no recv: a single process has no peer to receive from}}
  %0:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @global_ids_without_channel(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{expected a positive channel_id with use_global_device_ids}}
  %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>, use_global_device_ids} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Billions of empty groups are no groups: nothing iterates over the rows
// (the fuzzer found a hang here).
// CHECK-LABEL: func @many_empty_groups
func.func @many_empty_groups(%x: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK-NOT: stablehlo.all_reduce
  %0 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<> : tensor<4294967297x0xi64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A splat claiming billions of (padding) ids is refused, not expanded.
func.func @splat_of_billions_of_ids(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{expected replica_groups with at most 1048576 ids, got [4294967297, 2]}}
  %0 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<-1> : tensor<4294967297x2xi64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
