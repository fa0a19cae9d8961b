"""shlo-fuse-elementwise-trees: long chains become one op, and the results do not change."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.interpreter import interpret
from shlo.ir_utils import ops_named
from shlo.linalg_stages import ELEMENTWISE_FUSION
from shlo.passes.linalg.fuse_elementwise_trees import MAX_FUSED_BODY_OPS


def chain_program(n: int) -> str:
    lines = ["func.func @main(%a: tensor<8xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {"]
    previous = "%a"
    for index in range(n):
        op = ("add", "multiply", "subtract", "maximum")[index % 4]
        lines.append(f"  %v{index} = stablehlo.{op} {previous}, %a : tensor<8xf32>")
        previous = f"%v{index}"
    lines += [
        f"  %bc = stablehlo.broadcast_in_dim {previous}, dims = [1] : (tensor<8xf32>) -> tensor<2x8xf32>",
        "  %t = stablehlo.tanh %bc : tensor<2x8xf32>",
        "  %r = stablehlo.add %t, %b : tensor<2x8xf32>",
        "  return %r : tensor<2x8xf32>",
        "}",
    ]
    return "\n".join(lines)


def test_a_chain_becomes_one_generic_before_upstream_fusion() -> None:
    module = shlo.load_module(chain_program(300))
    elements = CpuPipeline().elements(through="legalize-to-linalg")
    shlo.run_pipeline(module, [*elements, "shlo-fuse-elementwise-trees", "canonicalize"])
    # The 300-op chain is one op; the broadcast read and the last two ops are another.
    assert len(ops_named(module.operation, "linalg.generic")) == 2


def test_a_chain_longer_than_the_limit_is_cut_and_stays_cut() -> None:
    # 2500 ops: cut into bodies of at most MAX_FUSED_BODY_OPS; the fences keep
    # upstream fusion (which runs next) from joining the pieces again.
    module = shlo.load_module(chain_program(2500))
    elements = CpuPipeline().elements(through="legalize-to-linalg")
    shlo.run_pipeline(module, [*elements, *ELEMENTWISE_FUSION])
    sizes = [
        len(op.regions[0].blocks[0].operations) - 1
        for op in ops_named(module.operation, "linalg.generic")
    ]
    assert max(sizes) <= MAX_FUSED_BODY_OPS
    assert len(sizes) == 4  # 1000 + 1000 + 500, and the broadcast, tanh and add
    assert not ops_named(module.operation, "func.call")  # the fences are gone


# (ops, seed, input range, tolerance): one fused chain, and one cut in three
# (inputs near 1 keep its 2100 multiplies finite).
@pytest.mark.parametrize(
    ("ops", "seed", "low", "high", "tolerance"),
    [(40, 0, 0.5, 1.5, 1e-6), (2100, 1, 0.9, 1.1, 1e-5)],
    ids=["fused", "cut"],
)
def test_chain_matches_interpreter(
    ops: int, seed: int, low: float, high: float, tolerance: float
) -> None:
    source = chain_program(ops)
    rng = np.random.default_rng(seed)
    args = [
        rng.uniform(low, high, 8).astype(np.float32),
        rng.standard_normal((2, 8)).astype(np.float32),
    ]
    got = shlo.compile(source, isolate=False)(*args)
    (want,) = interpret(source, "main", args)
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


SHARED_BROADCAST = """
func.func @main(%x: tensor<4x6x8xf32>, %m: tensor<4x8xf32>, %w: tensor<8x5xf32>)
    -> (tensor<4x6x8xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x6x5xf32>) {
  %b = stablehlo.broadcast_in_dim %m, dims = [0, 2] : (tensor<4x8xf32>) -> tensor<4x6x8xf32>
  %d = stablehlo.subtract %x, %b : tensor<4x6x8xf32>
  %sq = stablehlo.multiply %d, %d : tensor<4x6x8xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s1 = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1]
      : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = stablehlo.multiply %b, %x : tensor<4x6x8xf32>
  %s2 = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [2]
      : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x6xf32>
  %mm = stablehlo.dot_general %b, %w, contracting_dims = [2] x [0]
      : (tensor<4x6x8xf32>, tensor<8x5xf32>) -> tensor<4x6x5xf32>
  %t = stablehlo.tanh %d : tensor<4x6x8xf32>
  return %t, %s1, %s2, %mm : tensor<4x6x8xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x6x5xf32>
}
"""


def _readers_of_full_size_broadcasts(module) -> list[str]:
    """The ops reading a linalg.generic that only copies its input into a 4x6x8 result."""
    readers = []
    for op in ops_named(module.operation, "linalg.generic"):
        body = list(op.regions[0].blocks[0].operations)
        if (
            len(body) == 1
            and len(op.operands) == 2
            and str(op.results[0].type) == "tensor<4x6x8xf32>"
        ):
            readers += [use.owner.operation.name for use in op.results[0].uses]
    return readers


def test_a_broadcast_read_by_several_ops_is_fused_into_each() -> None:
    module = shlo.load_module(SHARED_BROADCAST)
    shlo.run_pipeline(module, CpuPipeline().elements(through="legalize-to-linalg"))
    readers = sorted(_readers_of_full_size_broadcasts(module))
    assert readers == ["linalg.generic"] * 3 + ["tensor.collapse_shape"]
    shlo.run_pipeline(module, list(ELEMENTWISE_FUSION))
    # Only the contraction's operand (reshaped to a matmul's) is still written out.
    assert _readers_of_full_size_broadcasts(module) == ["tensor.collapse_shape"]


def test_a_shared_broadcast_matches_interpreter() -> None:
    rng = np.random.default_rng(0)
    args = [
        rng.standard_normal((4, 6, 8)).astype(np.float32),
        rng.standard_normal((4, 8)).astype(np.float32),
        rng.standard_normal((8, 5)).astype(np.float32),
    ]
    got = shlo.compile(SHARED_BROADCAST, isolate=False)(*args)
    want = interpret(SHARED_BROADCAST, "main", args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
