"""Collective ops through the CPU pipeline, checked against numpy.

Single-process programs go through shlo.compile (shlo-lower-collectives);
several processes are written as ``interpreter.run_parallel`` custom calls
and unrolled first (shlo-unroll-replicas), as the conformance runner does.
"""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo._mlir_compat import ir, new_context
from shlo.diagnostics import ShloError
from shlo.pipeline import run_pipeline

RNG = np.random.default_rng(7)
ELEMENTS = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.uint8): "ui8"}


def tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{size}x" for size in shape) + f"{element}>"


def groups(ids: list[list[int]]) -> str:
    return f"dense<{ids}> : tensor<{len(ids)}x{len(ids[0])}xi64>"


def run_parallel(
    program: str, grid: tuple[int, int], inputs: list[np.ndarray], result: str
) -> list[np.ndarray]:
    """Run ``program`` (``@program(%x) -> result``) on every process of ``grid``.

    ``inputs`` holds one array per process, replica-major.
    """
    element = ELEMENTS[inputs[0].dtype]
    operand = tensor(inputs[0].shape, element)
    count = grid[0] * grid[1]
    row = ", ".join(["@program"] * grid[1])
    programs = ", ".join([f"[{row}]"] * grid[0])
    params = ", ".join(f"%a{i}: {operand}" for i in range(count))
    operands = ", ".join(f"%a{i}" for i in range(count))
    results = ", ".join([result] * count)
    returned = ", ".join(f"%r#{i}" for i in range(count))
    text = f"""
{program}
func.func @main({params}) -> ({results}) {{
  %r:{count} = stablehlo.custom_call @interpreter.run_parallel({operands}) {{programs = [{programs}]}}
      : ({", ".join([operand] * count)}) -> ({results})
  return {returned} : {results}
}}
"""
    module = ir.Module.parse(text, new_context())
    run_pipeline(module, ["inline", "shlo-unroll-replicas"])
    outputs = shlo.compile(module, isolate=False)(*inputs)
    return list(outputs) if isinstance(outputs, tuple) else [outputs]


def random(shape: tuple[int, ...], dtype: type, count: int) -> list[np.ndarray]:
    return [(RNG.integers(0, 50, shape)).astype(dtype) for _ in range(count)]


# --- several processes ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_all_reduce_groups_fold_in_group_order(dtype: type) -> None:
    # subtract is not commutative: the fold is ((x@3 - x@1)) and ((x@0 - x@2)).
    element = ELEMENTS[np.dtype(dtype)]
    program = f"""
func.func @program(%x: {tensor((3, 2), element)}) -> {tensor((3, 2), element)} {{
  %0 = "stablehlo.all_reduce"(%x) ({{
    ^bb0(%a: tensor<{element}>, %b: tensor<{element}>):
      %s = stablehlo.subtract %a, %b : tensor<{element}>
      stablehlo.return %s : tensor<{element}>
  }}) {{replica_groups = {groups([[0, 2], [3, 1]])}}} : ({tensor((3, 2), element)}) -> {tensor((3, 2), element)}
  return %0 : {tensor((3, 2), element)}
}}"""
    x = random((3, 2), dtype, 4)
    got = run_parallel(program, (4, 1), x, tensor((3, 2), element))
    first, second = x[0] - x[2], x[3] - x[1]
    for actual, want in zip(got, [first, second, first, second]):
        np.testing.assert_array_equal(actual, want)


def test_all_gather_cross_replica_and_partition() -> None:
    # A channel without use_global_device_ids: one group of all four processes,
    # ordered partition-major: (0,0), (1,0), (0,1), (1,1).
    program = f"""
func.func @program(%x: tensor<2x3xi32>) -> tensor<2x12xi32> {{
  %0 = "stablehlo.all_gather"(%x) {{all_gather_dim = 1 : i64, replica_groups = {groups([[0, 1]])},
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}} : (tensor<2x3xi32>) -> tensor<2x12xi32>
  return %0 : tensor<2x12xi32>
}}"""
    x = random((2, 3), np.int32, 4)  # (0,0), (0,1), (1,0), (1,1)
    want = np.concatenate([x[0], x[2], x[1], x[3]], axis=1)
    for actual in run_parallel(program, (2, 2), x, "tensor<2x12xi32>"):
        np.testing.assert_array_equal(actual, want)


def test_reduce_scatter_flattened_ids() -> None:
    program = f"""
func.func @program(%x: tensor<4x2xf32>) -> tensor<2x2xf32> {{
  %0 = "stablehlo.reduce_scatter"(%x) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }}) {{scatter_dimension = 0 : i64, replica_groups = {groups([[3, 0], [1, 2]])},
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids}}
      : (tensor<4x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}}"""
    x = random((4, 2), np.float32, 4)
    got = run_parallel(program, (2, 2), x, "tensor<2x2xf32>")
    total_a, total_b = x[3] + x[0], x[1] + x[2]
    # Group [3, 0]: process 3 gets the first half, process 0 the second.
    np.testing.assert_allclose(got[3], total_a[:2])
    np.testing.assert_allclose(got[0], total_a[2:])
    np.testing.assert_allclose(got[1], total_b[:2])
    np.testing.assert_allclose(got[2], total_b[2:])


def test_all_to_all_reversed_group() -> None:
    program = f"""
func.func @program(%x: tensor<2x4xui8>) -> tensor<4x2xui8> {{
  %0 = "stablehlo.all_to_all"(%x) {{split_dimension = 1 : i64, concat_dimension = 0 : i64,
      split_count = 2 : i64, replica_groups = {groups([[1, 0]])}}} : (tensor<2x4xui8>) -> tensor<4x2xui8>
  return %0 : tensor<4x2xui8>
}}"""
    x = random((2, 4), np.uint8, 2)
    got = run_parallel(program, (2, 1), x, "tensor<4x2xui8>")
    # Process 1 is index 0 of the group: it receives the first quarters.
    np.testing.assert_array_equal(got[1], np.concatenate([x[1][:, :2], x[0][:, :2]]))
    np.testing.assert_array_equal(got[0], np.concatenate([x[1][:, 2:], x[0][:, 2:]]))


def test_collective_permute_and_ids() -> None:
    # A cycle over three partitions, plus each process's own ids.
    program = """
func.func @program(%x: tensor<3xi32>) -> tensor<3xi32> {
  %0 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<3xi32>) -> tensor<3xi32>
  %r = stablehlo.replica_id : tensor<ui32>
  %p = stablehlo.partition_id : tensor<ui32>
  %rp = stablehlo.multiply %r, %p : tensor<ui32>
  %i = stablehlo.convert %rp : (tensor<ui32>) -> tensor<i32>
  %b = stablehlo.broadcast_in_dim %i, dims = [] : (tensor<i32>) -> tensor<3xi32>
  %1 = stablehlo.add %0, %b : tensor<3xi32>
  return %1 : tensor<3xi32>
}"""
    x = random((3,), np.int32, 6)  # (0,0) (0,1) (0,2) (1,0) (1,1) (1,2)
    got = run_parallel(program, (2, 3), x, "tensor<3xi32>")
    want = [0 * x[0], x[0], x[1], 0 * x[3], x[3] + 1, x[4] + 2]
    for actual, expected in zip(got, want):
        np.testing.assert_array_equal(actual, expected)


def test_collective_broadcast_outside_the_group_gets_zeros() -> None:
    program = f"""
func.func @program(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {{
  %0 = "stablehlo.collective_broadcast"(%x) {{replica_groups = {groups([[2, 1]])}}} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}}"""
    x = random((1, 2), np.float32, 4)
    got = run_parallel(program, (4, 1), x, "tensor<1x2xf32>")
    for actual, expected in zip(got, [0 * x[0], x[2], x[2], 0 * x[0]]):
        np.testing.assert_array_equal(actual, expected)


def test_collective_reduce_dynamic_root() -> None:
    # Each process names the root with its own root operand; here all say 1.
    text = """
func.func @program(%x: tensor<2xi32>, %root: tensor<1xi32>) -> tensor<2xi32> {
  %0 = "stablehlo.collective_reduce"(%x, %root) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.add %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>, has_dynamic_root} : (tensor<2xi32>, tensor<1xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>, %c: tensor<2xi32>, %root: tensor<1xi32>)
    -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) {
  %r:3 = stablehlo.custom_call @interpreter.run_parallel(%a, %root, %b, %root, %c, %root)
      {programs = [[@program], [@program], [@program]]}
      : (tensor<2xi32>, tensor<1xi32>, tensor<2xi32>, tensor<1xi32>, tensor<2xi32>, tensor<1xi32>)
      -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>)
  return %r#0, %r#1, %r#2 : tensor<2xi32>, tensor<2xi32>, tensor<2xi32>
}
"""
    module = ir.Module.parse(text, new_context())
    run_pipeline(module, ["shlo-unroll-replicas"])
    x = random((2,), np.int32, 3)
    got = shlo.compile(module, isolate=False)(*x, np.array([1], np.int32))
    zero = np.zeros(2, np.int32)
    for actual, expected in zip(got, [zero, x[0] + x[1] + x[2], zero]):
        np.testing.assert_array_equal(actual, expected)


# --- a single process -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4,), (2, 3), (1, 1, 5)])
def test_single_process(shape: tuple[int, ...]) -> None:
    t = tensor(shape, "f32")
    text = f"""
module attributes {{mhlo.num_replicas = 1 : i32, mhlo.num_partitions = 1 : i32}} {{
  func.func @main(%x: {t}) -> ({t}, {t}, {t}, {t}, tensor<ui32>) {{
    %0 = "stablehlo.all_reduce"(%x) ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }}) {{replica_groups = dense<0> : tensor<1x1xi64>}} : ({t}) -> {t}
    %1 = "stablehlo.all_gather"(%x) {{all_gather_dim = {len(shape) - 1} : i64,
        replica_groups = dense<0> : tensor<1x1xi64>}} : ({t}) -> {t}
    %2 = "stablehlo.collective_permute"(%x) {{source_target_pairs = dense<0> : tensor<1x2xi64>}} : ({t}) -> {t}
    %3 = "stablehlo.collective_permute"(%2) {{source_target_pairs = dense<> : tensor<0x2xi64>}} : ({t}) -> {t}
    %4 = stablehlo.replica_id : tensor<ui32>
    return %0, %1, %2, %3, %4 : {t}, {t}, {t}, {t}, tensor<ui32>
  }}
}}
"""
    x = RNG.standard_normal(shape).astype(np.float32)
    reduced, gathered, permuted, zeros, replica = shlo.compile(text, isolate=False)(x)
    np.testing.assert_array_equal(reduced, x)
    np.testing.assert_array_equal(gathered, x)
    np.testing.assert_array_equal(permuted, x)
    np.testing.assert_array_equal(zeros, np.zeros(shape, np.float32))
    assert replica == 0


def test_several_replicas_are_not_compiled() -> None:
    text = """
module attributes {mhlo.num_replicas = 4 : i32} {
  func.func @main() -> tensor<ui32> {
    %0 = stablehlo.replica_id : tensor<ui32>
    return %0 : tensor<ui32>
  }
}
"""
    with pytest.raises(ShloError, match="expected a single replica and a single partition"):
        shlo.compile(text, isolate=False)
