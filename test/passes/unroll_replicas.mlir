// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-unroll-replicas)' | FileCheck %s

func.func @gather_and_sum(%x: tensor<2xi64>) -> (tensor<4xi64>, tensor<2xi64>, tensor<ui32>) {
  %r = stablehlo.replica_id : tensor<ui32>
  %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<4xi64>
  %1 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %0, %1, %r : tensor<4xi64>, tensor<2xi64>, tensor<ui32>
}
// CHECK-LABEL: func @two_replicas
func.func @two_replicas(%a: tensor<2xi64>, %b: tensor<2xi64>) -> (tensor<4xi64>, tensor<2xi64>, tensor<ui32>, tensor<4xi64>, tensor<2xi64>, tensor<ui32>) {
  // CHECK-DAG: %[[R0:.+]] = stablehlo.constant dense<0> : tensor<ui32>
  // CHECK-DAG: %[[R1:.+]] = stablehlo.constant dense<1> : tensor<ui32>
  // CHECK: %[[G:.+]] = stablehlo.concatenate %arg0, %arg1, dim = 0
  // CHECK: %[[S:.+]] = "stablehlo.map"(%arg0, %arg1)
  // CHECK: stablehlo.add
  // CHECK: return %[[G]], %[[S]], %[[R0]], %[[G]], %[[S]], %[[R1]]
  // CHECK-NOT: custom_call
  %r:6 = stablehlo.custom_call @interpreter.run_parallel(%a, %b) {programs = [[@gather_and_sum], [@gather_and_sum]]} : (tensor<2xi64>, tensor<2xi64>) -> (tensor<4xi64>, tensor<2xi64>, tensor<ui32>, tensor<4xi64>, tensor<2xi64>, tensor<ui32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5 : tensor<4xi64>, tensor<2xi64>, tensor<ui32>, tensor<4xi64>, tensor<2xi64>, tensor<ui32>
}

// -----

// The second collective of each process uses the first one's results: the
// programs are interleaved at every collective.
func.func @permute_twice(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.add %0, %x : tensor<2xf32>
  %2 = "stablehlo.collective_permute"(%1) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %2 : tensor<2xf32>
}
// CHECK-LABEL: func @interleaved
func.func @interleaved(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // CHECK-DAG: %[[A:.+]] = stablehlo.add %arg1, %arg0
  // CHECK-DAG: %[[B:.+]] = stablehlo.add %arg0, %arg1
  // CHECK: %[[Z:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<2xf32>
  // CHECK: return %[[Z]], %[[A]]
  %r:2 = stablehlo.custom_call @interpreter.run_parallel(%a, %b) {programs = [[@permute_twice], [@permute_twice]]} : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return %r#0, %r#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// Two partitions: a channel makes all_to_all cross-partition.
func.func @all_to_all(%x: tensor<2x4xi32>) -> tensor<4x2xi32> {
  %0 = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2x4xi32>) -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}
// CHECK-LABEL: func @two_partitions
func.func @two_partitions(%a: tensor<2x4xi32>, %b: tensor<2x4xi32>) -> (tensor<4x2xi32>, tensor<4x2xi32>) {
  // CHECK-DAG: %[[A0:.+]] = stablehlo.slice %arg0 [0:2, 0:2]
  // CHECK-DAG: %[[B0:.+]] = stablehlo.slice %arg1 [0:2, 0:2]
  // CHECK-DAG: %[[P0:.+]] = stablehlo.concatenate %[[A0]], %[[B0]], dim = 0
  // CHECK-DAG: %[[A1:.+]] = stablehlo.slice %arg0 [0:2, 2:4]
  // CHECK-DAG: %[[B1:.+]] = stablehlo.slice %arg1 [0:2, 2:4]
  // CHECK-DAG: %[[P1:.+]] = stablehlo.concatenate %[[A1]], %[[B1]], dim = 0
  // CHECK: return %[[P0]], %[[P1]]
  %r:2 = stablehlo.custom_call @interpreter.run_parallel(%a, %b) {programs = [[@all_to_all, @all_to_all]]} : (tensor<2x4xi32>, tensor<2x4xi32>) -> (tensor<4x2xi32>, tensor<4x2xi32>)
  return %r#0, %r#1 : tensor<4x2xi32>, tensor<4x2xi32>
}

// -----

// Send and recv meet on their channel; tokens pass through and the infeed
// reads the queue functions in order; outfeed is dropped.
func.func @send(%x: tensor<2xi64>, %t: !stablehlo.token) -> !stablehlo.token {
  %0 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>, is_host_transfer = true} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
  %1 = "stablehlo.outfeed"(%x, %0) : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
  return %1 : !stablehlo.token
}
func.func @recv(%t: !stablehlo.token) -> (tensor<2xi64>, tensor<2xi64>) {
  %0:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  %1:2 = "stablehlo.recv"(%0#1) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 3>, is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  return %0#0, %1#0 : tensor<2xi64>, tensor<2xi64>
}
func.func @queue() -> tensor<2xi64> {
  %0 = stablehlo.constant dense<[7, 8]> : tensor<2xi64>
  return %0 : tensor<2xi64>
}
// CHECK-LABEL: func @send_recv
func.func @send_recv(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>) {
  // CHECK-NOT: after_all
  // CHECK: %[[Q:.+]] = stablehlo.constant dense<[7, 8]> : tensor<2xi64>
  // CHECK: return %[[Q]], %arg0
  %t = stablehlo.after_all : !stablehlo.token
  %r:3 = stablehlo.custom_call @interpreter.run_parallel(%x, %t, %t) {infeed = [@queue], programs = [[@send], [@recv]]} : (tensor<2xi64>, !stablehlo.token, !stablehlo.token) -> (!stablehlo.token, tensor<2xi64>, tensor<2xi64>)
  return %r#1, %r#2 : tensor<2xi64>, tensor<2xi64>
}

// -----

func.func @gather(%x: tensor<2xi64>) -> tensor<4xi64> {
  // expected-error@+1 {{expected the programs of run_parallel to reach matching collectives; process (0, 0) waits forever at stablehlo.all_gather}}
  %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
func.func @concat(%x: tensor<2xi64>) -> tensor<4xi64> {
  %0 = stablehlo.concatenate %x, %x, dim = 0 : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
func.func @deadlock(%a: tensor<2xi64>, %b: tensor<2xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %r:2 = stablehlo.custom_call @interpreter.run_parallel(%a, %b) {programs = [[@gather], [@concat]]} : (tensor<2xi64>, tensor<2xi64>) -> (tensor<4xi64>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xi64>, tensor<4xi64>
}

// -----

func.func @in_a_loop(%x: tensor<2xi64>) -> tensor<2xi64> {
  %0 = stablehlo.while(%iter = %x) : tensor<2xi64>
   cond {
    %c = stablehlo.constant dense<false> : tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    // expected-error@+1 {{expected stablehlo.collective_permute at the top level of a run_parallel program, outside control flow}}
    %1 = "stablehlo.collective_permute"(%iter) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
    stablehlo.return %1 : tensor<2xi64>
  }
  return %0 : tensor<2xi64>
}
func.func @nested(%a: tensor<2xi64>, %b: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>) {
  %r:2 = stablehlo.custom_call @interpreter.run_parallel(%a, %b) {programs = [[@in_a_loop], [@in_a_loop]]} : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  return %r#0, %r#1 : tensor<2xi64>, tensor<2xi64>
}

// -----

func.func @id() -> tensor<ui32> {
  %0 = stablehlo.replica_id : tensor<ui32>
  return %0 : tensor<ui32>
}
func.func @ragged_programs() -> (tensor<ui32>, tensor<ui32>, tensor<ui32>) {
  // expected-error@+1 {{expected programs as equally long lists of function symbols}}
  %r:3 = stablehlo.custom_call @interpreter.run_parallel() {programs = [[@id, @id], [@id]]} : () -> (tensor<ui32>, tensor<ui32>, tensor<ui32>)
  return %r#0, %r#1, %r#2 : tensor<ui32>, tensor<ui32>, tensor<ui32>
}

// -----

func.func @id() -> tensor<ui32> {
  %0 = stablehlo.replica_id : tensor<ui32>
  return %0 : tensor<ui32>
}
func.func @wrong_results() -> tensor<ui32> {
  // expected-error@+1 {{expected the results to be the programs' results in order}}
  %r = stablehlo.custom_call @interpreter.run_parallel() {programs = [[@id], [@id]]} : () -> tensor<ui32>
  return %r : tensor<ui32>
}
