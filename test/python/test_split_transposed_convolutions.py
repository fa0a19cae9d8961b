"""shlo-split-transposed-convolutions end to end: input-dilated convolutions against jax.jit."""

from __future__ import annotations

import numpy as np
import pytest
import shlo
from jax import export, jit, lax
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.pipeline import run_pipeline

RNG = np.random.default_rng(0)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def transposed(strides, padding, layouts=("NHWC", "HWIO", "NHWC")):
    def conv(x, w):
        return lax.conv_transpose(x, w, strides, padding, dimension_numbers=layouts)

    return conv


def dilated(lhs_dilation, padding, layouts, groups=1):
    def conv(x, w):
        return lax.conv_general_dilated(
            x,
            w,
            (1,) * len(lhs_dilation),
            padding,
            lhs_dilation=lhs_dilation,
            dimension_numbers=layouts,
            feature_group_count=groups,
        )

    return conv


CASES = [
    (transposed((2, 2), "SAME"), (1, 7, 7, 8), (3, 3, 8, 5)),
    (transposed((2, 2), "VALID"), (2, 5, 6, 3), (4, 3, 3, 4)),
    (transposed((3, 2), "SAME"), (1, 5, 4, 2), (3, 5, 2, 3)),
    # Stride 1 in one dimension; a kernel smaller than the stride (phases without taps).
    (transposed((1, 3), "VALID"), (1, 4, 5, 2), (2, 2, 2, 3)),
    (transposed((2,), "SAME", ("NWC", "WIO", "NWC")), (2, 9, 3), (5, 3, 4)),
    # Uneven and negative padding, channels first, feature groups.
    (
        dilated((2, 3), ((3, -1), (0, 2)), ("NCHW", "OIHW", "NCHW"), groups=2),
        (1, 4, 5, 6),
        (6, 2, 3, 4),
    ),
    # 3-D: the phases are 3-D convolutions, which the 3-D split takes next.
    (transposed((2, 2, 2), "SAME", ("NDHWC", "DHWIO", "NDHWC")), (1, 3, 4, 4, 2), (3, 3, 3, 2, 3)),
]
IDS = ["same", "valid", "strides-3x2", "no-taps", "1d", "padding-groups", "3d"]


@pytest.mark.parametrize(("function", "x_shape", "w_shape"), CASES, ids=IDS)
def test_transposed_convolutions_match_jax(function, x_shape, w_shape) -> None:
    x, w = floats(*x_shape), floats(*w_shape)
    conv = jit(function)
    source = export.export(conv)(x, w).mlir_module()
    np.testing.assert_allclose(shlo.compile(source)(x, w), conv(x, w), rtol=1e-5, atol=1e-4)


def test_each_phase_is_a_convolution_without_input_dilation() -> None:
    x, w = np.zeros((1, 7, 7, 8), np.float32), np.zeros((3, 3, 8, 5), np.float32)
    module = shlo.load_module(export.export(jit(transposed((2, 2), "SAME")))(x, w).mlir_module())
    run_pipeline(module, FRONTEND + CpuPipeline().elements(through="legalize-to-linalg"))
    text = str(module)
    assert text.count("linalg.conv_2d_nhwc_hwcf") == 4 and "interior" not in text
