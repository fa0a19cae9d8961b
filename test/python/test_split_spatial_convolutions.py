"""shlo-split-spatial-convolutions end to end: 3-D and 4-D convolutions against jax.jit."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from jax import export, jit, lax
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.interpreter import interpret
from shlo.pipeline import run_pipeline

# (input shape, kernel shape, layouts, feature groups, convolution keywords)
CASES = [
    ((1, 6, 9, 9, 4), (3, 3, 3, 4, 5), ("NDHWC", "DHWIO", "NDHWC"), 1, dict(padding="SAME")),
    # Strides, uneven and negative padding, kernel dilation in the split dimension.
    (
        (2, 11, 7, 8, 3),
        (3, 2, 3, 3, 4),
        ("NDHWC", "DHWIO", "NDHWC"),
        1,
        dict(
            window_strides=(2, 1, 2),
            padding=((2, -1), (0, 1), (1, 1)),
            rhs_dilation=(2, 1, 1),
        ),
    ),
    # Channels first, and feature groups (grouped, then depthwise).
    ((2, 6, 5, 6, 7), (6, 2, 3, 3, 2), ("NCDHW", "OIDHW", "NCDHW"), 3, dict(padding="VALID")),
    ((1, 4, 5, 6, 6), (3, 1, 3, 1, 6), ("NDHWC", "DHWIO", "NDHWC"), 6, dict(padding="SAME")),
    # A layout with the batch last and the features between spatial dimensions.
    ((5, 3, 6, 7, 2), (2, 3, 2, 2, 4), ("DCHWN", "HIDWO", "HDCWN"), 1, dict(padding="SAME")),
    # Four spatial dimensions: split twice.
    ((1, 4, 5, 6, 5, 3), (2, 3, 2, 3, 3, 2), ("NDTHWC", "DTHWIO", "NDTHWC"), 1, dict()),
    # Input dilation along the first dimension (a transposed convolution): left alone.
    (
        (1, 4, 5, 5, 2),
        (3, 3, 3, 2, 3),
        ("NDHWC", "DHWIO", "NDHWC"),
        1,
        dict(padding=((2, 2), (1, 1), (1, 1)), lhs_dilation=(2, 1, 2)),
    ),
]
IDS = ["same", "strided-dilated", "grouped-ncdhw", "depthwise", "odd-layout", "4d", "transposed"]


def convolution(layouts, groups, keywords):
    def conv(x, w):
        keywords.setdefault("window_strides", (1,) * (x.ndim - 2))
        keywords.setdefault("padding", "VALID")
        return lax.conv_general_dilated(
            x, w, dimension_numbers=layouts, feature_group_count=groups, **keywords
        )

    return conv


@pytest.mark.parametrize(("x_shape", "w_shape", "layouts", "groups", "keywords"), CASES, ids=IDS)
def test_spatial_convolutions_match_jax(x_shape, w_shape, layouts, groups, keywords) -> None:
    rng = np.random.default_rng(len(x_shape) + groups)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    conv = jit(convolution(layouts, groups, dict(keywords)))
    source = export.export(conv)(x, w).mlir_module()
    np.testing.assert_allclose(shlo.compile(source)(x, w), conv(x, w), rtol=1e-5, atol=1e-4)


def test_integer_3d_convolution_is_exact() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, (1, 5, 6, 6, 3)).astype(np.int32)
    w = rng.integers(-50, 50, (3, 3, 3, 3, 2)).astype(np.int32)
    conv = jit(convolution(("NDHWC", "DHWIO", "NDHWC"), 1, dict(padding="SAME")))
    source = export.export(conv)(x, w).mlir_module()
    np.testing.assert_array_equal(shlo.compile(source)(x, w), conv(x, w))


def linalg_ir(x_shape, w_shape, layouts, keywords) -> str:
    x, w = np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32)
    conv = jit(convolution(layouts, 1, dict(keywords)))
    module = shlo.load_module(export.export(conv)(x, w).mlir_module())
    run_pipeline(module, FRONTEND + CpuPipeline().elements(through="legalize-to-linalg"))
    return str(module)


def test_a_3d_convolution_becomes_one_2d_convolution_per_kernel_plane() -> None:
    ir = linalg_ir(*CASES[0][:3], CASES[0][4])
    assert ir.count("linalg.conv_2d_nhwc_hwcf") == 3 and "conv_3d" not in ir


def test_a_transposed_3d_convolution_is_left_to_the_transposed_split() -> None:
    x_shape, w_shape, layouts, _, keywords = CASES[-1]
    x, w = np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32)
    conv = jit(convolution(layouts, 1, dict(keywords)))
    module = shlo.load_module(export.export(conv)(x, w).mlir_module())
    run_pipeline(module, [*FRONTEND, "shlo-split-spatial-convolutions"])
    assert str(module).count("stablehlo.convolution") == 1 and "lhs_dilate" in str(module)
    # The pipeline splits its phases first; they are 3-D, and split next.
    assert "conv_3d" not in linalg_ir(x_shape, w_shape, layouts, keywords)


def test_window_reversal_takes_the_kernel_planes_in_reverse() -> None:
    source = """
    func.func @main(%x: tensor<1x5x4x4x2xf32>, %w: tensor<3x2x2x2x3xf32>) -> tensor<1x4x3x3x3xf32> {
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f],
             window = {pad = [[1, 0], [0, 0], [0, 0]], reverse = [true, false, true]}
             {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
             : (tensor<1x5x4x4x2xf32>, tensor<3x2x2x2x3xf32>) -> tensor<1x4x3x3x3xf32>
      return %0 : tensor<1x4x3x3x3xf32>
    }
    """
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 4, 4, 2)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 2, 3)).astype(np.float32)
    want = interpret(source, "main", [x, w])[0]
    np.testing.assert_allclose(shlo.compile(source)(x, w), want, rtol=1e-5, atol=1e-5)
