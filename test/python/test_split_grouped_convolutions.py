"""shlo-split-grouped-convolutions end to end: grouped convolutions against jax.jit."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from jax import export, jit, lax
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.pipeline import run_pipeline

# (input shape, kernel shape, layouts, groups, convolution keywords)
CASES = [
    ((1, 9, 9, 12), (3, 3, 4, 6), ("NHWC", "HWIO", "NHWC"), 3, dict(padding="SAME")),
    (
        (2, 8, 7, 7),
        (8, 4, 3, 3),
        ("NCHW", "OIHW", "NCHW"),
        2,
        dict(window_strides=(2, 1), padding=((1, 2), (0, 1)), rhs_dilation=(1, 2)),
    ),
    # Transposed (lhs dilation), as a grouped deconvolution.
    (
        (1, 5, 5, 8),
        (3, 3, 2, 8),
        ("NHWC", "HWIO", "NHWC"),
        4,
        dict(padding=((1, 1), (2, 1)), lhs_dilation=(2, 2)),
    ),
    ((2, 20, 6), (5, 3, 4), ("NWC", "WIO", "NWC"), 2, dict(padding="VALID")),
    # Depthwise with a multiplier of 2: left to the depthwise lowering.
    ((1, 6, 6, 4), (3, 3, 1, 8), ("NHWC", "HWIO", "NHWC"), 4, dict(padding="SAME")),
]


def grouped(layouts, groups, keywords):
    def conv(x, w):
        keywords.setdefault("window_strides", (1,) * (x.ndim - 2))
        return lax.conv_general_dilated(
            x, w, dimension_numbers=layouts, feature_group_count=groups, **keywords
        )

    return conv


@pytest.mark.parametrize(("x_shape", "w_shape", "layouts", "groups", "keywords"), CASES)
def test_grouped_convolutions_match_jax(x_shape, w_shape, layouts, groups, keywords) -> None:
    rng = np.random.default_rng(groups)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    conv = jit(grouped(layouts, groups, dict(keywords)))
    source = export.export(conv)(x, w).mlir_module()
    np.testing.assert_allclose(shlo.compile(source)(x, w), conv(x, w), rtol=1e-5, atol=1e-5)


def test_each_group_is_an_ordinary_convolution() -> None:
    x, w = np.zeros((1, 9, 9, 12), np.float32), np.zeros((3, 3, 4, 6), np.float32)
    conv = jit(grouped(("NHWC", "HWIO", "NHWC"), 3, dict(padding="SAME")))
    module = shlo.load_module(export.export(conv)(x, w).mlir_module())
    run_pipeline(module, FRONTEND + CpuPipeline().elements(through="legalize-to-linalg"))
    # Three named convolutions, which the convolution recipe vectorizes,
    # instead of one linalg.generic with a group dimension.
    assert str(module).count("linalg.conv_2d_nhwc_hwcf") == 3
