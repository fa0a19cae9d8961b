"""Swapping the code-generation strategy: per-op-kind recipes change only their ops."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import shlo
from shlo.cpu_pipeline import SCALAR_LOOPS, CpuPipeline
from shlo.lowering import FRONTEND
from shlo.pipeline import run_pipeline

MATMUL_RELU = """
func.func @main(%a: tensor<64x40xf32>, %b: tensor<40x48xf32>) -> tensor<64x48xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x40xf32>, tensor<40x48xf32>) -> tensor<64x48xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<64x48xf32>
  %1 = stablehlo.maximum %0, %zero : tensor<64x48xf32>
  return %1 : tensor<64x48xf32>
}
"""
TILED = dataclasses.replace(SCALAR_LOOPS, name="tiled-matmul", recipes=("tile-matmul-32",))


def tensor_codegen_ir(pipeline: CpuPipeline) -> str:
    module = shlo.load_module(MATMUL_RELU)
    run_pipeline(module, FRONTEND + pipeline.elements(through="tensor-codegen"))
    return str(module)


def test_recipe_tiles_only_contractions() -> None:
    default = tensor_codegen_ir(CpuPipeline())
    tiled = tensor_codegen_ir(CpuPipeline(strategy=TILED))
    assert "scf.for" not in default
    assert tiled.count("scf.for") == 2
    # 32x32 output tiles; the last column tile is partial (48 = 32 + 16).
    assert re.search(r"linalg.matmul ins\(.* : tensor<32x40xf32>, tensor<40x\?xf32>\)", tiled)
    # The elementwise maximum is not a contraction: it stays whole.
    assert "tensor<64x48xf32>) outs(" in tiled
    assert "transform." not in tiled


def test_swapped_strategy_gives_the_same_results() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 40)).astype(np.float32)
    b = rng.standard_normal((40, 48)).astype(np.float32)
    want = np.maximum(a @ b, 0)
    for pipeline in (CpuPipeline(), CpuPipeline(strategy=TILED)):
        got = shlo.compile(MATMUL_RELU, isolate=False, pipeline=pipeline)(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unknown_recipe_is_reported() -> None:
    bad = dataclasses.replace(SCALAR_LOOPS, recipes=("tile-everything",))
    with pytest.raises(shlo.ShloError, match="unknown codegen recipe 'tile-everything'"):
        shlo.compile(MATMUL_RELU, isolate=False, pipeline=CpuPipeline(strategy=bad))
