"""stablehlo.concatenate through the CPU pipeline, checked against numpy.

Materialized concatenations become inserts into slices
(shlo-lower-concatenate), and the inserts copies that the vector plan
threads (shlo-copy-into-slices); fused ones keep upstream's lowering.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.ir_utils import tensor_type_text

ELEMENTS = {
    np.dtype(np.float32): "f32",
    np.dtype(np.int8): "i8",
    np.dtype(np.int64): "i64",
    np.dtype(np.bool_): "i1",
    np.dtype(ml_dtypes.bfloat16): "bf16",
}


def concatenate_program(shapes: list[tuple[int, ...]], element: str, dimension: int) -> str:
    result = list(shapes[0])
    result[dimension] = sum(shape[dimension] for shape in shapes)
    types = [tensor_type_text(shape, element) for shape in shapes]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    operands = ", ".join(f"%a{i}" for i in range(len(shapes)))
    out = tensor_type_text(result, element)
    return f"""
func.func @main({params}) -> {out} {{
  %r = stablehlo.concatenate {operands}, dim = {dimension} : ({", ".join(types)}) -> {out}
  return %r : {out}
}}
"""


def _arrays(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 50).astype(dtype) for shape in shapes]


@pytest.mark.parametrize(
    ("shapes", "dimension"),
    [
        # Rows of 100 and 57: vector tiles straddle the operands' edges.
        ([(300, 100), (300, 57), (300, 100)], 1),
        ([(4096, 512), (4096, 512)], 1),
        ([(1000, 70), (24, 70), (0, 70), (3000, 70)], 0),
        ([(2, 33, 130), (2, 33, 70)], 2),
        ([(2, 70, 65), (2, 1, 65), (2, 90, 65)], 1),
    ],
)
def test_concatenate_matches_numpy(shapes, dimension) -> None:
    arrays = _arrays(shapes, np.float32)
    program = concatenate_program(shapes, "f32", dimension)
    got = shlo.compile(program, isolate=False)(*arrays)
    np.testing.assert_array_equal(got, np.concatenate(arrays, axis=dimension))


@pytest.mark.parametrize("dtype", list(ELEMENTS), ids=str)
def test_concatenate_element_types(dtype) -> None:
    shapes = [(64, 100), (64, 129)]
    arrays = _arrays(shapes, dtype, seed=1)
    program = concatenate_program(shapes, ELEMENTS[np.dtype(dtype)], 1)
    got = shlo.compile(program, isolate=False)(*arrays)
    want = np.concatenate(arrays, axis=1)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_concatenate_of_computed_and_fused_operands() -> None:
    # An operand computed by an elementwise op, the same operand twice, and a
    # second concatenation that an elementwise op reads (upstream's fused lowering).
    source = """
func.func @main(%a: tensor<256x96xf32>, %b: tensor<256x32xf32>) -> (tensor<256x224xf32>, tensor<256x128xf32>) {
  %n = stablehlo.negate %a : tensor<256x96xf32>
  %r = stablehlo.concatenate %n, %b, %a, dim = 1 : (tensor<256x96xf32>, tensor<256x32xf32>, tensor<256x96xf32>) -> tensor<256x224xf32>
  %c = stablehlo.concatenate %b, %a, dim = 1 : (tensor<256x32xf32>, tensor<256x96xf32>) -> tensor<256x128xf32>
  %s = stablehlo.multiply %c, %c : tensor<256x128xf32>
  return %r, %s : tensor<256x224xf32>, tensor<256x128xf32>
}
"""
    a, b = _arrays([(256, 96), (256, 32)], np.float32, seed=2)
    got_r, got_s = shlo.compile(source, isolate=False)(a, b)
    np.testing.assert_array_equal(got_r, np.concatenate([-a, b, a], axis=1))
    c = np.concatenate([b, a], axis=1)
    np.testing.assert_array_equal(got_s, c * c)
