"""shlo-write-over-dead-inputs: an input that dies at an elementwise op lends it its buffer,
and only one whose elements are read where they are written."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.interpreter import interpret
from shlo.ir_utils import ops_named

SOFTMAX = """
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
      : (tensor<64x256xf32>, tensor<f32>) -> tensor<64xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<64xf32>) -> tensor<64x256xf32>
  %d = stablehlo.subtract %x, %mb : tensor<64x256xf32>
  %e = stablehlo.exponential %d : tensor<64x256xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
      : (tensor<64x256xf32>, tensor<f32>) -> tensor<64xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<64xf32>) -> tensor<64x256xf32>
  %r = stablehlo.divide %e, %sb : tensor<64x256xf32>
  return %r : tensor<64x256xf32>
}
"""

# %e is also a result: it must keep its own buffer.
READ_AFTER = SOFTMAX.replace(
    "-> tensor<64x256xf32> {", "-> (tensor<64x256xf32>, tensor<64x256xf32>) {"
).replace(
    "  return %r : tensor<64x256xf32>", "  return %r, %e : tensor<64x256xf32>, tensor<64x256xf32>"
)

# The last op reads %e twice, once transposed: writing over %e would read
# elements it has already overwritten.
TRANSPOSED = """
func.func @main(%x: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %e = stablehlo.exponential %x : tensor<128x128xf32>
  %s = stablehlo.sine %e : tensor<128x128xf32>
  %c = stablehlo.cosine %e : tensor<128x128xf32>
  %t = stablehlo.transpose %c, dims = [1, 0] : (tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = stablehlo.add %s, %t : tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}
"""


def allocations_and_copies(source: str, with_pass: bool = True) -> tuple[int, int]:
    """memref.alloc and memref.copy ops left after bufferization, of the generated code
    (a softmax would call a precompiled kernel)."""
    module = shlo.load_module(source)
    elements = CpuPipeline(precompiled_kernels=False).elements(through="bufferize")
    if not with_pass:
        elements = [e for e in elements if e != "shlo-write-over-dead-inputs"]
    shlo.run_pipeline(module, elements)
    root = module.operation
    return len(ops_named(root, "memref.alloc")), len(ops_named(root, "memref.copy"))


def test_the_pass_is_in_the_cpu_pipeline() -> None:
    assert "shlo-write-over-dead-inputs" in CpuPipeline().elements(through="tensor-codegen")


def test_softmax_writes_its_result_over_the_exponentials() -> None:
    # Without the pass the exponentials have a [64, 256] buffer of their own.
    allocations, copies = allocations_and_copies(SOFTMAX)
    before, copies_before = allocations_and_copies(SOFTMAX, with_pass=False)
    assert (allocations, copies) == (before - 1, copies_before)


@pytest.mark.parametrize(
    "source", [SOFTMAX, READ_AFTER, TRANSPOSED], ids=["softmax", "read_after", "transposed"]
)
def test_results_match_the_interpreter(source: str) -> None:
    shape = (128, 128) if source is TRANSPOSED else (64, 256)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = shlo.compile(source, isolate=False)(x)
    got = got if isinstance(got, tuple) else (got,)
    want = interpret(source, "main", [x])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


def test_a_value_read_later_is_not_written_over() -> None:
    # Writing over %e would make bufferization copy it first: a copy more, no gain.
    assert allocations_and_copies(READ_AFTER) == allocations_and_copies(READ_AFTER, with_pass=False)
