"""The random blocks of test_random_blocks.py written in PyTorch, through shlo.torch.compile.

torch-mlir lowers the same blocks to other StableHLO than jax exports:
``nn.Linear`` keeps its weight [out, in] and transposes it, layer norms and
softmax are decomposed by torch's own rules, and convolutions are NCHW, so
shlo's NHWC recipes see them behind transposes. Each case takes the
dense, attention or convolution block that ``draw_block`` draws for its
seed (training blocks run forward only; torch pads symmetrically, so SAME
is kd/2 on each side and a strided SAME window may give a different size)
and compares shlo with the module in float64, as the jax test does. The
bf16 dense blocks and a fifth of the convolutions run in bf16, within 3e-2
or twice eager PyTorch's own bf16 error, whichever is larger.

Dynamic exports (``torch.export.Dim``) of the f32 blocks are compiled once
and run at three sizes each.

CI runs ``SHLO_TORCH_BLOCK_CASES`` cases (default 8) from
``SHLO_BLOCK_FIRST``, each about 0.7 s, and ``SHLO_SYMBOLIC_TORCH_BLOCK_CASES``
(default 4) dynamic ones.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os

import numpy as np
import pytest
from test_random_blocks import (
    BFLOAT16_TOLERANCE,
    TOLERANCE,
    Attention,
    Block,
    Convolution,
    draw_block,
    relative_error,
    resized,
)

torch = pytest.importorskip("torch")
nn = torch.nn
import shlo.torch  # noqa: E402

FIRST = int(os.environ.get("SHLO_BLOCK_FIRST", "0"))
CASES = int(os.environ.get("SHLO_TORCH_BLOCK_CASES", "8"))
SYMBOLIC_CASES = int(os.environ.get("SHLO_SYMBOLIC_TORCH_BLOCK_CASES", "4"))


class DenseBlock(nn.Module):
    def __init__(self, block: Block) -> None:
        super().__init__()
        self.block = block
        self.linear = nn.Linear(block.inner, block.columns, bias=block.bias)
        if block.epilogue == "dense":
            self.second = nn.Linear(block.columns, block.second_columns, bias=False)

    def forward(self, x):
        b = self.block
        h = x
        if b.prologue == "layernorm":
            h = nn.functional.layer_norm(h, (b.inner,), eps=1e-5)
        elif b.prologue == "gelu":
            h = nn.functional.gelu(h, approximate="tanh")
        elif b.prologue == "scale":
            h = h * 0.125
        y = self.linear(h)
        if b.epilogue == "relu":
            y = torch.relu(y)
        elif b.epilogue == "gelu":
            y = nn.functional.gelu(y, approximate="tanh")
        elif b.epilogue == "residual":
            y = y + x
        elif b.epilogue == "softmax":
            y = torch.softmax(y, dim=-1)
        elif b.epilogue == "row_sum":
            y = y.sum(dim=-1)
        elif b.epilogue == "dense":
            y = self.second(y)
        return y


class AttentionBlock(nn.Module):
    def __init__(self, block: Attention) -> None:
        super().__init__()
        self.block = block
        width = block.heads * block.head_size
        self.qkv = nn.Linear(width, 3 * width)
        if block.projection:
            self.out = nn.Linear(width, width)

    def forward(self, x):
        b = self.block
        (batch, s), h, d = x.shape[:2], b.heads, b.head_size  # symbolic in a dynamic export
        q, k, v = (t.reshape(batch, s, h, d).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if b.causal:
            mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
            scores = scores.masked_fill(~mask, -1e9)
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(batch, s, h * d)
        return self.out(out) if b.projection else out


class ConvolutionBlock(nn.Module):
    def __init__(self, block: Convolution) -> None:
        super().__init__()
        self.block = block
        padding = block.dilation * (block.window - 1) // 2 if block.same else 0
        self.conv = nn.Conv2d(
            block.channels,
            block.features,
            block.window,
            stride=block.stride,
            padding=padding,
            dilation=block.dilation,
            groups=block.groups,
            bias=block.epilogue == "bias_relu",
        )

    def forward(self, x):
        y = self.conv(x)
        if self.block.epilogue == "bias_relu":
            y = torch.relu(y)
        elif self.block.epilogue == "residual" and y.shape == x.shape:
            y = y + x
        elif self.block.epilogue == "mean":
            y = y.mean(dim=(2, 3))
        elif self.block.epilogue == "max_pool":
            y = nn.functional.max_pool2d(y, 3, stride=2, padding=1)
        elif self.block.epilogue == "average_pool" and min(y.shape[2:]) >= 2:
            y = nn.functional.avg_pool2d(y, 2, stride=2)
        return y


def input_shape(block: Block | Attention | Convolution) -> tuple[int, ...]:
    """The shape of the block's input in PyTorch (NCHW for a convolution)."""
    if isinstance(block, Block):
        return (*(() if block.batch is None else (block.batch,)), block.rows, block.inner)
    if isinstance(block, Attention):
        return (block.batch, block.sequence, block.heads * block.head_size)
    return (block.batch, block.channels, block.height, block.width)


def torch_block(seed: int):
    """The module of ``seed``'s block and its input, both seeded."""
    block = draw_block(seed)
    torch.manual_seed(seed)
    if isinstance(block, Block):
        module = DenseBlock(block)
    elif isinstance(block, Attention):
        module = AttentionBlock(block)
    else:
        module = ConvolutionBlock(block)
    return module, torch.randn(*input_shape(block))


def in_bfloat16(seed: int) -> bool:
    """Dense blocks drawn in bf16, and a fifth of the convolutions."""
    block = draw_block(seed)
    if isinstance(block, Block):
        return block.bfloat16
    return isinstance(block, Convolution) and seed // 4 % 5 == 0


def check_torch_block(seed: int) -> None:
    module, x = torch_block(seed)
    module.eval()
    tolerance = TOLERANCE
    if in_bfloat16(seed):
        module, x = module.to(torch.bfloat16), x.to(torch.bfloat16)
    with torch.no_grad():
        # The reference takes the bf16 values exactly, then computes in float64.
        want = copy.deepcopy(module).double()(x.double()).numpy()
        if x.dtype == torch.bfloat16:
            eager = module(x).double().numpy()
            tolerance = max(BFLOAT16_TOLERANCE, 2 * relative_error(eager, want))
    got = shlo.torch.compile(module, (x,))(x).double().numpy()
    assert got.shape == want.shape, module.block
    error = relative_error(got, want)
    assert error <= tolerance, f"seed {seed}: {module.block}: error {error:.3g} of the largest"


@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_random_torch_block_matches_float64_torch(seed: int) -> None:
    check_torch_block(seed)


def symbolic_dimensions(seed: int) -> dict[int, str] | None:
    """The input's dimensions a dynamic export of ``seed``'s block leaves symbolic, by name;
    None for bf16 blocks and the average pool (whose size test torch.export cannot trace).

    A convolution's height and width are symbolic only where they keep their sizes
    (stride 1, SAME, no pool): torch.export refuses a range in which a smaller
    size may become 1, as it specializes sizes 0 and 1."""
    block = draw_block(seed)
    if in_bfloat16(seed):
        return None
    if isinstance(block, Convolution):
        if block.epilogue == "average_pool":
            return None
        keeps_size = block.stride == 1 and block.same and block.epilogue != "max_pool"
        return {0: "n", 2: "h", 3: "w"} if keeps_size else {0: "n"}
    if isinstance(block, Attention):
        return {0: "batch", 1: "sequence"}
    return {0: "rows"} if block.batch is None else {0: "batch", 1: "rows"}


def _input_of_size(block: Block | Attention | Convolution, axes, rng) -> torch.Tensor:
    """An input for ``block`` resized, every symbolic size at least 2 (torch.export
    specializes sizes 0 and 1)."""
    while True:
        sized = resized(block, rng)
        if isinstance(sized, Convolution) and 2 not in axes:  # only the batch is symbolic
            sized = dataclasses.replace(sized, height=block.height, width=block.width)
        shape = input_shape(sized)
        if all(shape[i] >= 2 for i in axes):
            return torch.randn(
                *shape, generator=torch.Generator().manual_seed(int(rng.integers(1 << 30)))
            )


def check_symbolic_torch_block(seed: int) -> None:
    """Exported once with symbolic sizes, run at three sizes."""
    from torch.export import Dim

    module, _ = torch_block(seed)
    module.eval()
    dims = {axis: Dim(name, min=2, max=4096) for axis, name in symbolic_dimensions(seed).items()}
    rng = np.random.default_rng(seed + 11)
    xs = [_input_of_size(module.block, dims, rng) for _ in range(3)]
    compiled = shlo.torch.compile(module, (xs[0],), dynamic_shapes=(dims,))
    for x in xs:
        with torch.no_grad():
            want = copy.deepcopy(module).double()(x.double()).numpy()
        got = compiled(x).double().numpy()
        assert got.shape == want.shape, (module.block, x.shape)
        error = relative_error(got, want)
        assert error <= TOLERANCE, (
            f"seed {seed}: {module.block} at {tuple(x.shape)}: error {error:.3g}"
        )


@pytest.mark.parametrize(
    "seed",
    [s for s in range(FIRST, FIRST + 4 * SYMBOLIC_CASES) if symbolic_dimensions(s)][
        :SYMBOLIC_CASES
    ],
)
def test_random_torch_block_with_symbolic_sizes_matches_float64_torch(seed: int) -> None:
    check_symbolic_torch_block(seed)


def test_the_torch_sample_has_every_kind_of_block() -> None:
    kinds = {type(torch_block(seed)[0]) for seed in range(FIRST, FIRST + CASES)}
    assert kinds == {DenseBlock, AttentionBlock, ConvolutionBlock}
    assert {in_bfloat16(seed) for seed in range(FIRST, FIRST + CASES)} == {True, False}
