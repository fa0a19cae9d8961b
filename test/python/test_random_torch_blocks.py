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

CI runs ``SHLO_TORCH_BLOCK_CASES`` cases (default 8) from
``SHLO_BLOCK_FIRST``; each takes about 0.7 s.
"""

from __future__ import annotations

import copy
import math
import os

import pytest
from test_random_blocks import (
    BFLOAT16_TOLERANCE,
    TOLERANCE,
    Attention,
    Block,
    Convolution,
    draw_block,
    relative_error,
)

torch = pytest.importorskip("torch")
nn = torch.nn
import shlo.torch  # noqa: E402

FIRST = int(os.environ.get("SHLO_BLOCK_FIRST", "0"))
CASES = int(os.environ.get("SHLO_TORCH_BLOCK_CASES", "8"))


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
        s, h, d = b.sequence, b.heads, b.head_size
        q, k, v = (
            t.reshape(b.batch, s, h, d).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if b.causal:
            mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
            scores = scores.masked_fill(~mask, -1e9)
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b.batch, s, h * d)
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


def torch_block(seed: int):
    """The module of ``seed``'s block and its input, both seeded."""
    block = draw_block(seed)
    torch.manual_seed(seed)
    if isinstance(block, Block):
        lead = () if block.batch is None else (block.batch,)
        return DenseBlock(block), torch.randn(*lead, block.rows, block.inner)
    if isinstance(block, Attention):
        width = block.heads * block.head_size
        return AttentionBlock(block), torch.randn(block.batch, block.sequence, width)
    shape = (block.batch, block.channels, block.height, block.width)
    return ConvolutionBlock(block), torch.randn(*shape)


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


def test_the_torch_sample_has_every_kind_of_block() -> None:
    kinds = {type(torch_block(seed)[0]) for seed in range(FIRST, FIRST + CASES)}
    assert kinds == {DenseBlock, AttentionBlock, ConvolutionBlock}
    assert {in_bfloat16(seed) for seed in range(FIRST, FIRST + CASES)} == {True, False}
