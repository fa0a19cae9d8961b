"""shlo-fuse-elementwise-trees: long chains become one op, and the results do not change."""

from __future__ import annotations

import numpy as np
import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.interpreter import interpret
from shlo.ir_utils import ops_named


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


def test_fused_chain_matches_interpreter() -> None:
    source = chain_program(40)
    rng = np.random.default_rng(0)
    args = [
        rng.uniform(0.5, 1.5, 8).astype(np.float32),
        rng.standard_normal((2, 8)).astype(np.float32),
    ]
    got = shlo.compile(source, isolate=False)(*args)
    (want,) = interpret(source, "main", args)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
