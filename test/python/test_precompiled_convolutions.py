"""f32 1-D and 2-D convolutions as calls of the kernel built once per machine (shlo_conv2d_f32)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import shlo
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import precompiled, runtime
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.pipeline import CpuPipeline
from test_precompiled_matmuls import object_symbol_kinds

pytestmark = pytest.mark.skipif(not precompiled.enabled(), reason="no C compiler")


def _tensor(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _output_shape(x, w, strides, padding, dilation) -> tuple[int, ...]:
    sizes = []
    for d in range(2):
        span = (w[d] - 1) * dilation[d] + 1
        sizes.append((x[1 + d] + sum(padding[d]) - span) // strides[d] + 1)
    return (x[0], *sizes, w[3])


def conv_source(x, w, strides=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1)) -> str:
    """A StableHLO NHWC x HWIO -> NHWC convolution, as jax exports one."""
    out = _output_shape(x, w, strides, padding, dilation)
    pad = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
    return (
        f"func.func @main(%x: {_tensor(x)}, %w: {_tensor(w)}) -> {_tensor(out)} {{\n"
        f"  %r = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
        f"[b, 0, 1, f], window = {{stride = {list(strides)}, pad = [{pad}], "
        f"rhs_dilate = {list(dilation)}}} {{batch_group_count = 1 : i64, "
        f"feature_group_count = 1 : i64}} : ({_tensor(x)}, {_tensor(w)}) -> {_tensor(out)}\n"
        f"  return %r : {_tensor(out)}\n}}\n"
    )


def reference(x, w, strides=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1)) -> np.ndarray:
    """The convolution in float64, the padding's zeros multiplied like any input."""
    xp = np.pad(x.astype(np.float64), ((0, 0), *padding, (0, 0)))
    out = _output_shape(x.shape, w.shape, strides, padding, dilation)
    y = np.zeros(out)
    for kh in range(w.shape[0]):
        for kw in range(w.shape[1]):
            rows = kh * dilation[0] + np.arange(out[1]) * strides[0]
            columns = kw * dilation[1] + np.arange(out[2]) * strides[1]
            window = xp[:, rows][:, :, columns]
            with np.errstate(invalid="ignore"):  # inf x 0
                y += window @ w[kh, kw].astype(np.float64)
    return y


def inputs(x, w, seed=0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal(x).astype(np.float32),
        rng.standard_normal(w).astype(np.float32),
    )


CASES = [
    # Rows of 28 columns or more are computed directly. bench's conv2d: whole 14-column
    # tiles, padded rows and columns; one past them.
    ((1, 56, 56, 64), (3, 3, 64, 64), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((2, 5, 29, 24), (3, 3, 24, 40), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    # Shorter rows: windows (im2col) and the matmul kernel, the positions shared by the
    # threads, or the channels when there are few positions (a dense layer as a 1x1
    # convolution, one position per image; a 1-D convolution, one column).
    ((8, 1, 1, 256), (1, 1, 256, 96), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((4, 40, 1, 16), (5, 1, 16, 48), (1, 1), ((2, 2), (0, 0)), (1, 1)),
    # ResNet's downsampling: stride 2, padding after only; and its 1x1 shortcut
    ((1, 16, 16, 32), (3, 3, 32, 64), (2, 2), ((0, 1), (0, 1)), (1, 1)),
    ((1, 16, 16, 32), (1, 1, 32, 64), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    # channels past whole tiles (37), columns past them (5, 19), batches, dilation
    ((2, 9, 7, 5), (3, 2, 5, 37), (1, 2), ((2, 1), (0, 3)), (2, 3)),
    ((3, 17, 13, 33), (5, 5, 33, 70), (2, 3), ((0, 0), (0, 0)), (1, 1)),
    ((1, 4, 19, 1), (2, 3, 1, 3), (1, 1), ((0, 0), (1, 1)), (1, 1)),
    # One filter row, taps side by side, no padding, deep windows: the windows are rows
    # of the input, multiplied in place; evenly apart across rows and images (a 1x1
    # convolution, 3 taps by 3), rows of 28 or more positions a product each: of images
    # apart, of rows evenly apart in one image; padding after the rows: the other ways.
    ((2, 6, 7, 256), (1, 1, 256, 40), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((1, 4, 9, 128), (1, 3, 128, 16), (1, 3), ((0, 0), (0, 0)), (1, 1)),
    ((2, 5, 100, 64), (1, 4, 64, 48), (2, 3), ((0, 0), (0, 0)), (1, 1)),
    ((1, 6, 71, 128), (1, 2, 128, 40), (1, 2), ((0, 0), (0, 0)), (1, 1)),
    ((1, 3, 40, 64), (1, 4, 64, 32), (1, 1), ((0, 2), (0, 0)), (1, 1)),
    # padding wider than the input: whole rows and columns of zeros
    ((1, 3, 2, 4), (3, 3, 4, 8), (1, 1), ((3, 3), (4, 4)), (1, 1)),
    # no input channel: zeros
    ((1, 5, 30, 0), (3, 3, 0, 16), (1, 1), ((1, 1), (1, 1)), (1, 1)),
]


@pytest.mark.parametrize(("x", "w", "strides", "padding", "dilation"), CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_convolutions_match_numpy(x, w, strides, padding, dilation, threads) -> None:
    args = inputs(x, w)
    source = conv_source(x, w, strides, padding, dilation)
    got = shlo.compile(source, threads=threads, isolate=False)(*args)
    want = reference(*args, strides, padding, dilation)
    depth = max(w[0] * w[1] * w[2], 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * depth**0.5 * 4)


def test_the_program_calls_the_kernel_and_has_no_convolution_code_of_its_own() -> None:
    # The padding is the kernel's too: no loop is left at all.
    source = conv_source((1, 12, 12, 16), (3, 3, 16, 32), padding=((1, 1), (1, 1)))
    lowered = lower_to_llvm(source, "main", None, CpuPipeline(threads=2))
    text = str(ir.Module.parse(lowered.llvm_bytecode, new_context()))
    assert "llvm.call @shlo_conv2d_f32" in text
    assert "vector<" not in text and "llvm.cond_br" not in text


@pytest.mark.parametrize("width", [6, 30])  # windows; direct
def test_padding_zeros_times_infinity_are_nan(width) -> None:
    # The padding is multiplied like the input, as the op multiplies it: a filter tap
    # that is infinite makes NaN where it reads the padding, and +-inf elsewhere.
    x, w = inputs((1, 6, width, 2), (3, 3, 2, 4), seed=2)
    x = np.abs(x) + 0.5
    w[0, 0, 1, 3] = np.inf
    padding = ((1, 1), (1, 1))
    source = conv_source(x.shape, w.shape, padding=padding)
    got = shlo.compile(source, threads=1, isolate=False)(x, w)
    want = reference(x, w, padding=padding)
    assert np.isnan(got[0, 0, :, 3]).all() and np.isnan(got[0, :, 0, 3]).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shape",
    [
        ((2, 30, 30, 24), (3, 3, 24, 40), (1, 1), ((1, 1), (1, 1)), (1, 1)),  # direct
        ((2, 30, 21, 24), (3, 3, 24, 40), (1, 1), ((1, 1), (1, 1)), (1, 1)),  # positions
        ((4, 1, 1, 200), (1, 1, 200, 130), (1, 1), ((0, 0), (0, 0)), (1, 1)),  # channels
        ((1, 1, 301, 384), (1, 3, 384, 64), (1, 2), ((0, 0), (0, 0)), (1, 1)),  # in place
    ],
)
def test_threads_change_no_bit(shape) -> None:
    # Each result is summed by one thread, in the same order, however the work is split.
    args = inputs(*shape[:2], seed=3)
    source = conv_source(*shape)
    one = shlo.compile(source, threads=1, isolate=False)(*args)
    for threads in (2, 3):
        np.testing.assert_array_equal(
            shlo.compile(source, threads=threads, isolate=False)(*args), one
        )


def test_llvm_code_run_by_the_jit_finds_the_kernel() -> None:
    # The conformance runner's path: LLVM-dialect bytecode compiled in this process.
    shape = ((1, 9, 30, 8), (3, 3, 8, 16), (1, 1), ((1, 1), (1, 1)), (1, 1))
    args = inputs(*shape[:2], seed=4)
    lowered = lower_to_llvm(conv_source(*shape), "main", None, CpuPipeline(threads=2))
    assert b"shlo_conv2d_f32" in lowered.llvm_bytecode
    function = runtime.LoadedFunction(
        lowered.llvm_bytecode, lowered.input_types, lowered.result_types
    )
    np.testing.assert_allclose(
        function(list(args))[0], reference(*args, *shape[2:]), rtol=1e-5, atol=1e-5
    )


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
def test_code_compiled_ahead_of_time_carries_the_kernel(tmp_path) -> None:
    program = conv_source((1, 6, 6, 4), (3, 3, 4, 8), padding=((1, 1), (1, 1)))
    kinds = object_symbol_kinds(tmp_path, program)
    assert kinds["shlo_conv2d_f32"] == "W"  # defined, weak


def conv1d_source(x, w, stride: int, padding: tuple[int, int], dilation: int) -> str:
    """A StableHLO NWC x WIO -> NWC convolution, as jax exports one."""
    span = (w[0] - 1) * dilation + 1
    out = (x[0], (x[1] + sum(padding) - span) // stride + 1, w[2])
    return (
        f"func.func @main(%x: {_tensor(x)}, %w: {_tensor(w)}) -> {_tensor(out)} {{\n"
        f"  %r = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
        f"window = {{stride = [{stride}], pad = [[{padding[0]}, {padding[1]}]], "
        f"rhs_dilate = [{dilation}]}} {{batch_group_count = 1 : i64, "
        f"feature_group_count = 1 : i64}} : ({_tensor(x)}, {_tensor(w)}) -> {_tensor(out)}\n"
        f"  return %r : {_tensor(out)}\n}}\n"
    )


@pytest.mark.parametrize(
    ("x", "w", "stride", "padding", "dilation"),
    [
        ((4, 50, 16), (3, 16, 32), 2, (1, 2), 1),  # windows
        ((2, 70, 24), (5, 24, 40), 1, (2, 2), 2),  # direct: 66 columns
        # Whisper's stem (80 mel channels, then stride 2) and wav2vec2's positional
        # convolution (one group: 128 taps of 24 channels), without padding.
        ((1, 300, 80), (3, 80, 384), 1, (1, 1), 1),
        ((1, 301, 384), (3, 384, 384), 2, (1, 1), 1),
        ((1, 227, 24), (128, 24, 24), 1, (0, 0), 1),
        # wav2vec2's feature encoder (512 channels, 3 taps, stride 2), shorter, and in a
        # batch: windows read in place
        ((1, 199, 512), (3, 512, 512), 2, (0, 0), 1),
        ((3, 50, 96), (3, 96, 70), 2, (0, 0), 1),
    ],
)
def test_1d_convolutions_are_2d_ones_of_height_1(x, w, stride, padding, dilation) -> None:
    args = inputs(x, w, seed=5)
    source = conv1d_source(x, w, stride, padding, dilation)
    lowered = lower_to_llvm(source, "main", None, CpuPipeline(threads=2))
    assert b"shlo_conv2d_f32" in lowered.llvm_bytecode
    got = shlo.compile(source, threads=2, isolate=False)(*args)
    want = reference(
        args[0][:, None], args[1][None], (1, stride), ((0, 0), padding), (1, dilation)
    )[:, 0]
    depth = w[0] * w[1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * depth**0.5 * 4)
