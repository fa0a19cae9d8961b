"""Random model blocks at the sizes where the contraction recipes change their tiling.

The composition tests draw dimensions of at most 130, and the matmul tests
check matmuls alone. Real models put contractions between producers and
consumers at sizes past every tile boundary of the recipes: thread tiles of
at most 256 rows and 128 columns, k blocks of at most 256, 8x32 register
tiles (8x16 below 32 columns), the rhs copied into blocks from 32 rows, a
transposed weight read inside the loops; for convolutions, 8x32 register
tiles (8x8 below 32 output channels) and thread tiles of two output rows.
Each case draws one block from a generator seeded by its number, with every
size drawn from around those boundaries:

- half are dense blocks: an input optionally normalized (layernorm),
  activated or scaled; a dense layer whose weight is stored [in, out] or
  [out, in] (Flax GPT-2), with a bias or none, batched or not; then
  nothing, relu, tanh-gelu, a residual add, softmax over the columns, a row
  sum or a second dense layer. A third of them are differentiated instead
  (``jax.grad`` of the result weighted by a random cotangent, for every
  input), as a training step runs them: transposed matmuls and sums over
  the rows. A sixth are in bfloat16, compared within 3e-2 or twice
  jax.jit's own error, whichever is larger: every op rounds to 8 bits;
- a quarter are attention blocks: a fused QKV projection, heads split by
  reshape and transpose, scaled scores with or without a causal mask,
  softmax, the weighted values, heads merged, an output projection or none;
- a quarter are NHWC convolutions: 1x1 to 7x7 windows, strides 1 and 2,
  SAME or VALID, dilation, plain, depthwise or in two groups, then a bias
  and relu, a residual add, a global average pool, ResNet's 3x3/2 max pool
  or a 2x2 average pool.

A third of the attention and convolution blocks are differentiated too:
their gradients are convolutions with dilated inputs or over the batch,
select_and_scatter (the max pool's) and padded scatters of the pools.

Each block is exported from jax, compiled by shlo and compared with the same
function on numpy in float64 (the gradients with jax in float64), relative to
each result's largest magnitude: summation order moves f32 results by about
1e-6 of it, a lost or doubled tile by far more than 1e-4.

Shape-polymorphic exports get the same blocks, f32 and forward only: the
input's leading sizes (rows, batch and sequence, or a convolution's batch,
height and width) symbolic, compiled once and run at the drawn sizes and at
two others; shlo refines the program to each call's shapes.

CI runs ``SHLO_BLOCK_CASES`` cases (default 24) from ``SHLO_BLOCK_FIRST``
(default 0), and ``SHLO_SYMBOLIC_BLOCK_CASES`` (default 8) symbolic ones; a
campaign runs more, e.g. SHLO_BLOCK_CASES=1000 (README).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import shlo

# Around the recipes' boundaries: register tiles (8 rows, 16/32 columns),
# the rhs copy (32 rows), thread tiles (256 rows, 128 columns), k blocks (256).
ROWS = (1, 3, 8, 31, 32, 33, 64, 127, 129, 256, 257, 300)
INNER = (1, 7, 16, 33, 128, 255, 256, 257, 384, 513)
COLUMNS = (1, 5, 8, 16, 24, 31, 32, 33, 96, 127, 128, 129, 200, 256)
BATCHES = (1, 2, 3)
PROLOGUES = ("none", "layernorm", "gelu", "scale")
EPILOGUES = ("none", "relu", "gelu", "residual", "softmax", "row_sum", "dense")
# Keeps a case around a tenth of a second on 2 cores.
MAX_ELEMENTS = 1 << 19
TOLERANCE = 1e-4
# bf16 rounds every op's result to 8 bits (2^-9 relative); sums accumulate in f32.
BFLOAT16_TOLERANCE = 3e-2

SPATIAL = (1, 2, 5, 7, 14, 17, 28)
CHANNELS = (1, 3, 8, 16, 24, 32, 33, 64)
WINDOWS = (1, 3, 5, 7)
CONV_EPILOGUES = ("none", "bias_relu", "residual", "mean", "max_pool", "average_pool")
SEQUENCES = (1, 7, 16, 33, 64, 128, 129, 200)
HEADS = (1, 2, 3, 12)
HEAD_SIZES = (8, 16, 24, 33, 64)

FIRST = int(os.environ.get("SHLO_BLOCK_FIRST", "0"))
CASES = int(os.environ.get("SHLO_BLOCK_CASES", "24"))
SYMBOLIC_CASES = int(os.environ.get("SHLO_SYMBOLIC_BLOCK_CASES", "8"))


@dataclass(frozen=True)
class Block:
    batch: int | None
    rows: int
    inner: int
    columns: int
    transposed_weight: bool
    bias: bool
    prologue: str
    epilogue: str
    second_columns: int
    training: bool = False
    bfloat16: bool = False

    def shapes(self) -> list[tuple[int, ...]]:
        lead = () if self.batch is None else (self.batch,)
        weight = (
            (self.columns, self.inner) if self.transposed_weight else (self.inner, self.columns)
        )
        shapes = [(*lead, self.rows, self.inner), weight]
        if self.bias:
            shapes.append((self.columns,))
        if self.epilogue == "dense":
            shapes.append((self.columns, self.second_columns))
        return shapes


@dataclass(frozen=True)
class Attention:
    batch: int
    sequence: int
    heads: int
    head_size: int
    causal: bool
    projection: bool
    training: bool = False

    def shapes(self) -> list[tuple[int, ...]]:
        width = self.heads * self.head_size
        shapes = [(self.batch, self.sequence, width), (width, 3 * width)]
        if self.projection:
            shapes.append((width, width))
        return shapes

    def largest(self) -> int:
        scores = self.batch * self.heads * self.sequence * self.sequence
        return max(scores, *(math.prod(s) for s in self.shapes()))


@dataclass(frozen=True)
class Convolution:
    batch: int
    height: int
    width: int
    channels: int
    features: int
    window: int
    stride: int
    same: bool
    dilation: int
    groups: int
    epilogue: str
    training: bool = False

    def shapes(self) -> list[tuple[int, ...]]:
        shapes = [
            (self.batch, self.height, self.width, self.channels),
            (self.window, self.window, self.channels // self.groups, self.features),
        ]
        if self.epilogue == "bias_relu":
            shapes.append((self.features,))
        return shapes

    def padding(self) -> list[tuple[int, int]]:
        """Each spatial dimension's padding, low and high: SAME as XLA splits it."""
        if not self.same:
            return [(0, 0), (0, 0)]
        extent = self.dilation * (self.window - 1) + 1
        return [_same_padding(size, extent, self.stride) for size in (self.height, self.width)]

    def output_size(self) -> tuple[int, int]:
        extent = self.dilation * (self.window - 1) + 1
        return tuple(
            (size + low + high - extent) // self.stride + 1
            for size, (low, high) in zip((self.height, self.width), self.padding())
        )


def _draw_convolution(rng: np.random.Generator, grouping: int) -> Convolution | None:
    """A convolution block: plain (grouping 0), depthwise (1) or in two groups (2)."""
    channels = int(rng.choice(CHANNELS))
    groups = (1, channels, 2)[grouping]
    features = channels if grouping == 1 else int(rng.choice(CHANNELS))
    if channels % groups or features % groups:
        return None
    epilogue = str(rng.choice(CONV_EPILOGUES))
    block = Convolution(
        batch=int(rng.choice((1, 2))),
        height=int(rng.choice(SPATIAL)),
        width=int(rng.choice(SPATIAL)),
        channels=channels,
        features=features,
        window=int(rng.choice(WINDOWS)),
        stride=int(rng.choice((1, 1, 2))),
        same=bool(rng.random() < 0.6),
        dilation=int(rng.choice((1, 1, 1, 2))),
        groups=groups,
        epilogue=epilogue,
        training=bool(rng.random() < 1 / 3),
    )
    if min(block.output_size()) < 1:
        return None
    residual = block.output_size() == (block.height, block.width) and features == channels
    if epilogue == "residual" and not residual:
        return None
    return block


def draw_block(seed: int) -> Block | Attention | Convolution:
    rng = np.random.default_rng(seed)
    kind = seed % 4  # a quarter each of convolutions and attentions, half dense layers
    if kind == 0:
        while True:
            convolution = _draw_convolution(rng, seed // 4 % 3)
            if convolution is not None:
                return convolution
    if kind == 1:
        while True:
            attention = Attention(
                batch=int(rng.choice(BATCHES)),
                sequence=int(rng.choice(SEQUENCES)),
                heads=int(rng.choice(HEADS)),
                head_size=int(rng.choice(HEAD_SIZES)),
                causal=bool(rng.random() < 0.5),
                projection=bool(rng.random() < 0.5),
                training=bool(rng.random() < 1 / 3),
            )
            if attention.largest() <= MAX_ELEMENTS:
                return attention
    while True:
        epilogue = str(rng.choice(EPILOGUES))
        inner = int(rng.choice(INNER))
        block = Block(
            batch=None if rng.random() < 0.6 else int(rng.choice(BATCHES)),
            rows=int(rng.choice(ROWS)),
            inner=inner,
            # A residual adds the input, so the layer keeps its width.
            columns=inner if epilogue == "residual" else int(rng.choice(COLUMNS)),
            transposed_weight=bool(rng.random() < 0.5),
            bias=bool(rng.random() < 0.5),
            prologue=str(rng.choice(PROLOGUES)),
            epilogue=epilogue,
            second_columns=int(rng.choice(COLUMNS)),
            training=bool(rng.random() < 1 / 3),
            bfloat16=bool(rng.random() < 1 / 6),
        )
        if max(math.prod(s) for s in block.shapes()) <= MAX_ELEMENTS:
            return block


def _gelu(xp: Any, x: Any) -> Any:
    return 0.5 * x * (1 + xp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def _softmax(xp: Any, y: Any) -> Any:
    shifted = xp.exp(y - y.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def attention_function(block: Attention, xp: Any) -> Callable[..., Any]:
    h, d = block.heads, block.head_size

    def fn(x: Any, wqkv: Any, *rest: Any) -> Any:
        b, s = x.shape[:2]  # symbolic in an export with symbolic sizes

        def heads(t: Any) -> Any:
            return t.reshape(b, s, h, d).transpose(0, 2, 1, 3)

        qkv = x @ wqkv
        q, k, v = (heads(qkv[..., i * h * d : (i + 1) * h * d]) for i in range(3))
        scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(d)
        if block.causal:
            scores = xp.where(xp.tril(xp.ones((s, s), bool)), scores, -1e9)
        out = (_softmax(xp, scores) @ v).transpose(0, 2, 1, 3).reshape(b, s, h * d)
        return out @ rest[0] if block.projection else out

    return fn


def _convolution_numpy(x: np.ndarray, w: np.ndarray, block: Convolution) -> np.ndarray:
    """The convolution as a sum over window offsets of strided slices times weights."""
    (low_h, high_h), (low_w, high_w) = block.padding()
    padded = np.pad(x, ((0, 0), (low_h, high_h), (low_w, high_w), (0, 0)))
    out_h, out_w = block.output_size()
    g = block.groups
    out = np.zeros((block.batch, out_h, out_w, block.features))
    for i in range(block.window):
        for j in range(block.window):
            top, left = i * block.dilation, j * block.dilation
            patch = padded[
                :,
                top : top + block.stride * (out_h - 1) + 1 : block.stride,
                left : left + block.stride * (out_w - 1) + 1 : block.stride,
                :,
            ]
            grouped = patch.reshape(*patch.shape[:3], g, block.channels // g)
            weight = w[i, j].reshape(block.channels // g, g, block.features // g)
            out += np.einsum("nhwgc,cgo->nhwgo", grouped, weight).reshape(out.shape)
    return out


def _max_pool(xp: Any, y: Any) -> Any:
    """ResNet's stem pool: 3x3 windows, stride 2, SAME (padded with -inf)."""
    if xp is not np:
        return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    pads = [(0, 0)] + [_same_padding(size, 3, 2) for size in y.shape[1:3]] + [(0, 0)]
    padded = np.pad(y, pads, constant_values=-np.inf)
    out_h, out_w = (-(-size // 2) for size in y.shape[1:3])
    return np.max(
        [
            padded[:, i : i + 2 * out_h - 1 : 2, j : j + 2 * out_w - 1 : 2]
            for i in range(3)
            for j in range(3)
        ],
        axis=0,
    )


def _average_pool(xp: Any, y: Any) -> Any:
    """2x2 windows, stride 2, VALID: a trailing odd row or column is dropped."""
    n, h, w, c = y.shape
    if h < 2 or w < 2:
        return y
    if xp is not np:
        total = jax.lax.reduce_window(y, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return total / 4
    cropped = y[:, : h // 2 * 2, : w // 2 * 2]
    return cropped.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))


def _same_padding(size: int, window: int, stride: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def convolution_function(block: Convolution, xp: Any) -> Callable[..., Any]:
    def fn(x: Any, w: Any, *rest: Any) -> Any:
        if xp is np:
            y = _convolution_numpy(x, w, block)
        else:
            y = jax.lax.conv_general_dilated(
                x,
                w,
                (block.stride, block.stride),
                "SAME" if block.same else "VALID",
                rhs_dilation=(block.dilation, block.dilation),
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
                feature_group_count=block.groups,
            )
        if block.epilogue == "bias_relu":
            y = xp.maximum(y + rest[0], 0)
        elif block.epilogue == "residual":
            y = y + x
        elif block.epilogue == "mean":
            y = y.mean(axis=(1, 2))
        elif block.epilogue == "max_pool":
            y = _max_pool(xp, y)
        elif block.epilogue == "average_pool":
            y = _average_pool(xp, y)
        return y

    return fn


def block_function(block: Block | Attention | Convolution, xp: Any) -> Callable[..., Any]:
    """The block written once for jnp (exported) and numpy (the float64 reference)."""
    if isinstance(block, Attention):
        return attention_function(block, xp)
    if isinstance(block, Convolution):
        return convolution_function(block, xp)

    def fn(x: Any, w: Any, *rest: Any) -> Any:
        rest_list = list(rest)
        h = x
        if block.prologue == "layernorm":
            mean = h.mean(axis=-1, keepdims=True)
            centered = h - mean
            h = centered / xp.sqrt((centered * centered).mean(axis=-1, keepdims=True) + 1e-5)
        elif block.prologue == "gelu":
            h = _gelu(xp, h)
        elif block.prologue == "scale":
            h = h * 0.125
        y = h @ (w.T if block.transposed_weight else w)
        if block.bias:
            y = y + rest_list.pop(0)
        if block.epilogue == "relu":
            y = xp.maximum(y, 0)
        elif block.epilogue == "gelu":
            y = _gelu(xp, y)
        elif block.epilogue == "residual":
            y = y + x
        elif block.epilogue == "softmax":
            y = _softmax(xp, y)
        elif block.epilogue == "row_sum":
            y = y.sum(axis=-1)
        elif block.epilogue == "dense":
            y = y @ rest_list.pop(0)
        return y

    return fn


def block_inputs(block: Block | Attention | Convolution, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 1_000_003)
    inputs = []
    for index, shape in enumerate(block.shapes()):
        # Weights scaled by 1/sqrt(fan-in) keep every layer's values near 1.
        fan_in = shape[-2] if index > 0 and len(shape) == 2 else 1
        if index == 1 and isinstance(block, Convolution):
            fan_in = math.prod(shape[:3])
        if index == 1 and isinstance(block, Block) and block.transposed_weight:
            fan_in = shape[-1]
        scale = 1.0 / math.sqrt(fan_in)
        inputs.append((rng.standard_normal(shape) * scale).astype(np.float32))
    return inputs


def cotangent_gradients(forward: Callable[..., Any], count: int) -> Callable[..., Any]:
    """The gradients of ``forward``'s first ``count`` inputs, of its result weighted by a
    cotangent (the new first argument), as a training step's backward pass computes them."""

    def loss(cotangent: Any, *inputs: Any) -> Any:
        return jnp.sum(forward(*inputs) * cotangent)

    return jax.grad(loss, argnums=tuple(range(1, count + 1)))


def gradient_function(block: Block | Attention | Convolution) -> Callable[..., Any]:
    """Every input's gradient of the block's result weighted by the cotangent (the first argument)."""
    return cotangent_gradients(block_function(block, jnp), len(block.shapes()))


def float64_results(function: Callable[..., Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``function``'s results in jax with every float input widened to float64."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        wide = [a if a.dtype.kind in "iub" else jnp.asarray(a, jnp.float64) for a in inputs]
        return [np.asarray(g) for g in jax.jit(function)(*wide)]
    finally:
        jax.config.update("jax_enable_x64", previous)


def run_exported(function: Callable[..., Any], inputs: list[Any]) -> list[np.ndarray]:
    """``function`` exported from jax for ``inputs``, compiled by shlo and run on them."""
    exported = jax.export.export(jax.jit(function), platforms=["cpu"])(*inputs)
    # jax drops the arguments a result does not depend on (a bias's gradient).
    kept = [inputs[i] for i in sorted(exported.module_kept_var_idx)]
    gots = shlo.compile(exported.mlir_module_serialized, isolate=False)(*kept)
    return list(gots) if isinstance(gots, (list, tuple)) else [gots]


def check_block(seed: int) -> None:
    block = draw_block(seed)
    inputs = block_inputs(block, seed)
    training = block.training
    bfloat16 = isinstance(block, Block) and block.bfloat16
    if training:
        result = block_function(block, np)(*(a.astype(np.float64) for a in inputs))
        cotangent = np.random.default_rng(seed + 7).standard_normal(np.shape(result))
        inputs = [cotangent.astype(np.float32), *inputs]
    if bfloat16:
        inputs = [a.astype(ml_dtypes.bfloat16) for a in inputs]
    if training:
        function = gradient_function(block)
        wants = float64_results(function, inputs)
    else:
        function = block_function(block, jnp)
        wants = [block_function(block, np)(*(a.astype(np.float64) for a in inputs))]
    gots = run_exported(function, inputs)
    assert len(gots) == len(wants), block
    if bfloat16:
        # bf16 gradients lose more than 3e-2 in jax.jit too: allow twice its error.
        theirs = jax.jit(function)(*inputs)
        theirs = list(theirs) if isinstance(theirs, (list, tuple)) else [theirs]
        tolerances = [
            max(BFLOAT16_TOLERANCE, 2 * relative_error(t, w)) for t, w in zip(theirs, wants)
        ]
    else:
        tolerances = [TOLERANCE] * len(wants)
    for index, (got, want) in enumerate(zip(gots, wants)):
        assert got.shape == want.shape, block
        error = relative_error(got, want)
        assert error <= tolerances[index], (
            f"seed {seed}: {block}: result {index}: error {error:.3g} of its largest value"
        )


def relative_error(got: Any, want: np.ndarray, least_scale: float = 1e-30) -> float:
    """The largest difference from ``want``, relative to ``want``'s largest magnitude
    (or ``least_scale``, if that is larger)."""
    scale = max(float(np.max(np.abs(want), initial=0.0)), least_scale)
    return float(np.max(np.abs(np.asarray(got, np.float64) - want), initial=0.0)) / scale


@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_random_block_matches_float64_numpy(seed: int) -> None:
    check_block(seed)


def symbolic_spec(seed: int) -> str | None:
    """The shape of ``seed``'s block's input with its leading sizes symbolic, or None
    (training, bf16, and the average pool, whose odd-size rule jax cannot export
    symbolically)."""
    block = draw_block(seed)
    if block.training or getattr(block, "bfloat16", False):
        return None
    if isinstance(block, Convolution):
        return "n, h, w, _" if block.epilogue != "average_pool" else None
    if isinstance(block, Attention):
        return "b, s, _"
    return "r, _" if block.batch is None else "b, r, _"


def resized(block: Block | Attention | Convolution, rng: np.random.Generator) -> Any:
    """The same block with other sizes where its input's are symbolic."""
    if isinstance(block, Attention):
        while True:
            other = dataclasses.replace(
                block, batch=int(rng.choice(BATCHES)), sequence=int(rng.choice(SEQUENCES))
            )
            if other.largest() <= MAX_ELEMENTS:
                return other
    if isinstance(block, Block):
        while True:
            other = dataclasses.replace(
                block,
                rows=int(rng.choice(ROWS)),
                batch=None if block.batch is None else int(rng.choice(BATCHES)),
            )
            if max(math.prod(s) for s in other.shapes()) <= MAX_ELEMENTS:
                return other
    while True:
        other = dataclasses.replace(
            block,
            batch=int(rng.choice(BATCHES)),
            height=int(rng.choice(SPATIAL)),
            width=int(rng.choice(SPATIAL)),
        )
        if min(other.output_size()) >= 1:
            return other


def check_symbolic_block(seed: int) -> None:
    """Exported once with symbolic sizes, run at the drawn sizes and at two others."""
    block = draw_block(seed)
    inputs = block_inputs(block, seed)
    specs = [symbolic_spec(seed)] + [None] * (len(inputs) - 1)
    exported = jax.export.export(jax.jit(block_function(block, jnp)), platforms=["cpu"])(
        *jax.export.symbolic_args_specs(inputs, specs)
    )
    compiled = shlo.compile(exported.mlir_module_serialized, isolate=False)
    rng = np.random.default_rng(seed + 11)
    for sized in (block, resized(block, rng), resized(block, rng)):
        inputs = block_inputs(sized, seed)
        want = block_function(sized, np)(*(a.astype(np.float64) for a in inputs))
        got = compiled(*inputs)
        assert got.shape == want.shape, sized
        error = relative_error(got, want)
        assert error <= TOLERANCE, f"seed {seed}: {sized}: error {error:.3g} of its largest value"


@pytest.mark.parametrize(
    "seed",
    [s for s in range(FIRST, FIRST + 4 * SYMBOLIC_CASES) if symbolic_spec(s)][:SYMBOLIC_CASES],
)
def test_random_block_with_symbolic_sizes_matches_float64_numpy(seed: int) -> None:
    check_symbolic_block(seed)


def test_the_draws_cross_every_boundary() -> None:
    """The default sample reaches both sides of the thresholds the recipes switch at."""
    drawn = [draw_block(seed) for seed in range(CASES)]
    blocks = [b for b in drawn if isinstance(b, Block)]
    attentions = [b for b in drawn if isinstance(b, Attention)]
    convolutions = [b for b in drawn if isinstance(b, Convolution)]
    assert {c.features < 32 for c in convolutions} == {True, False}
    assert {c.groups > 1 for c in convolutions} == {True, False}
    assert {a.causal for a in attentions} == {True, False}
    assert {a.sequence > 128 for a in attentions} == {True, False}
    assert {b.rows > 256 for b in blocks} == {True, False}
    assert {b.inner > 256 for b in blocks} == {True, False}
    assert {b.columns > 128 for b in blocks} == {True, False}
    assert {b.columns < 32 for b in blocks} == {True, False}
    assert {b.transposed_weight for b in blocks} == {True, False}
    assert {b.batch is None for b in blocks} == {True, False}
    assert {b.training for b in blocks} == {True, False}
    assert {b.bfloat16 for b in blocks} == {True, False}


def test_a_lost_tile_is_caught(monkeypatch) -> None:
    """The comparison fails when one register tile's worth of the result is wrong."""
    seed = next(
        s
        for s in range(100)
        if isinstance(b := draw_block(s), Block) and b.epilogue == "none" and not b.training
    )
    real = block_function

    def one_tile_zeroed(b: Block | Attention | Convolution, xp: Any) -> Callable[..., Any]:
        fn = real(b, xp)
        if xp is np:
            return fn

        def broken(*args: Any) -> Any:
            y = fn(*args)
            return y.at[..., :8, :16].set(0.0)

        return broken

    monkeypatch.setattr(f"{__name__}.block_function", one_tile_zeroed)
    with pytest.raises(AssertionError, match=f"seed {seed}"):
        check_block(seed)
