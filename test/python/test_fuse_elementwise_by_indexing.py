"""shlo-fuse-elementwise-by-indexing: the indexing analysis deciding fusion in the CPU pipeline.

A shared cheap producer is copied when every fusion reading it reads it
through one distinct indexing map, once per element, so linalg's elementwise
fusion (single-use producers only) fuses it everywhere; when one fusion would
read it through two maps, the producer stays shared and materialized.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import shlo
from shlo.analysis import IndexingMap
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, CpuPipeline
from shlo.frontend import FRONTEND
from shlo.passes.linalg.fuse_elementwise_by_indexing import reads_each_element_once
from shlo.pipeline import run_pipeline

PASS = "shlo-fuse-elementwise-by-indexing"

# x*x feeds two reductions (one map each) and p + transpose(p) (two maps).
SOURCE = """
func.func @main(%x: tensor<16x8xf32>, %y: tensor<8x8xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<8x8xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %c = stablehlo.multiply %x, %x : tensor<16x8xf32>
  %s = stablehlo.reduce(%c init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<16x8xf32>, tensor<f32>) -> tensor<16xf32>
  %m = stablehlo.reduce(%c init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<16x8xf32>, tensor<f32>) -> tensor<16xf32>
  %p = stablehlo.subtract %y, %y : tensor<8x8xf32>
  %q = stablehlo.add %p, %y : tensor<8x8xf32>
  %t = stablehlo.transpose %q, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = stablehlo.add %q, %t : tensor<8x8xf32>
  %r = stablehlo.reduce(%q init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
  %out = stablehlo.add %a, %rb : tensor<8x8xf32>
  return %s, %m, %out : tensor<16xf32>, tensor<16xf32>, tensor<8x8xf32>
}
"""


@dataclasses.dataclass(frozen=True)
class WithoutThePass(CpuPipeline):
    def stages(self) -> list[tuple[str, list[str]]]:
        return [(name, [e for e in stage if e != PASS]) for name, stage in super().stages()]


def tensor_codegen_ir(pipeline: CpuPipeline) -> str:
    module = shlo.load_module(SOURCE)
    run_pipeline(module, FRONTEND + pipeline.elements(through="tensor-codegen"))
    return str(module)


def generics(ir_text: str) -> list[str]:
    """The linalg.generic ops, each from its line to the end of its region."""
    return [
        "linalg.generic" + chunk.split("} ->")[0] for chunk in ir_text.split("linalg.generic")[1:]
    ]


def test_pass_is_in_the_cpu_pipeline() -> None:
    stage = dict(CpuPipeline().stages())["legalize-to-linalg"]
    assert stage.index(PASS) == stage.index("stablehlo-legalize-to-linalg") - 1


def test_one_map_copies_and_fuses_two_maps_stay_shared() -> None:
    # Kernels as fusion leaves them, before a strategy tiles and vectorizes them.
    with_pass = generics(tensor_codegen_ir(CpuPipeline(strategy=SCALAR_LOOPS)))
    without = generics(tensor_codegen_ir(WithoutThePass(strategy=SCALAR_LOOPS)))
    # Without the pass x*x is its own kernel, written once and read by both reductions.
    assert sum("arith.mulf" in g and "reduction" not in g for g in without) == 1
    # With it, each reduction computes x*x itself: no x*x kernel remains.
    assert sum("arith.mulf" in g and "reduction" not in g for g in with_pass) == 0
    assert sum("arith.mulf" in g and "reduction" in g for g in with_pass) == 2
    # q = (y - y) + y is read by the add through two maps, (d0, d1) and (d1, d0):
    # it stays one kernel, computed once, in both pipelines; the column
    # reduction, which alone would take a copy, reads it from memory too.
    for kernels in (without, with_pass):
        assert len([g for g in kernels if "arith.subf" in g]) == 1
        assert not any("arith.subf" in g for g in kernels if "reduction" in g)
    assert len(with_pass) == len(without) - 1


def test_numerics_unchanged() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    y = rng.standard_normal((8, 8)).astype(np.float32)
    c = x * x
    q = (y - y) + y
    want = (c.sum(1), c.max(1), q + q.T + q.sum(0)[None, :])
    for pipeline in (CpuPipeline(), WithoutThePass()):
        got = shlo.compile(SOURCE, isolate=False, pipeline=pipeline)(x, y)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_reads_each_element_once() -> None:
    with shlo.new_context():
        assert reads_each_element_once(IndexingMap("(d0)[s0] -> (d0, s0)", [(0, 9)], [(0, 3)]))
        assert reads_each_element_once(IndexingMap("(d0, d1) -> (d1 + 2, d0)", [(0, 9), (0, 3)]))
        # A broadcast rereads: d0 is not used.
        assert not reads_each_element_once(IndexingMap("(d0, d1) -> (d1)", [(0, 9), (0, 3)]))
        # ...unless that dim has one value.
        assert reads_each_element_once(IndexingMap("(d0, d1) -> (d1)", [(0, 0), (0, 3)]))
        assert not reads_each_element_once(IndexingMap("(d0, d1) -> (d0, d0)", [(0, 9), (0, 9)]))
        # Not recognized (though injective): refused, which is safe.
        assert not reads_each_element_once(
            IndexingMap("(d0) -> (d0 floordiv 4, d0 mod 4)", [(0, 15)])
        )
