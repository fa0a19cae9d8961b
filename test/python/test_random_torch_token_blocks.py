"""The token blocks of test_random_token_blocks.py written in PyTorch, through shlo.torch.compile.

torch-mlir lowers PyTorch's index ops to other StableHLO than jax exports:
``nn.Embedding`` and ``gather`` with 64-bit indices, ``index_add_`` as a
scatter, ``nn.RNN`` through aten's decomposition (the loop unrolled),
``topk`` and ``argmax`` by torch's own rules, ``cumsum`` on int64. Each case
takes the sizes ``draw_token_block`` draws for its seed and compares shlo
with the module in float64 (forward only; torch indices are never negative
and segment ids never past the last segment, as torch requires).

CI runs ``SHLO_TORCH_TOKEN_BLOCK_CASES`` cases (default 6) from
``SHLO_BLOCK_FIRST``; a campaign runs more (README).
"""

from __future__ import annotations

import copy
import os

import pytest
from test_random_blocks import TOLERANCE, relative_error
from test_random_token_blocks import PADDING, TokenBlock, draw_token_block

torch = pytest.importorskip("torch")
nn = torch.nn
import shlo.torch  # noqa: E402

FIRST = int(os.environ.get("SHLO_BLOCK_FIRST", "0"))
CASES = int(os.environ.get("SHLO_TORCH_TOKEN_BLOCK_CASES", "6"))


def _layernorm(h):
    centered = h - h.mean(dim=-1, keepdim=True)
    return centered / torch.sqrt((centered * centered).mean(dim=-1, keepdim=True) + 1e-5)


class LanguageModelHead(nn.Module):
    """Tied embeddings: the table gathers the tokens and scores the logits."""

    def __init__(self, block: TokenBlock) -> None:
        super().__init__()
        self.embedding = nn.Embedding(block.vocabulary, block.width)
        self.positions = nn.Parameter(torch.randn(block.sequence, block.width))

    def forward(self, ids, labels):
        h = _layernorm(self.embedding(ids) + self.positions)
        log_probabilities = torch.log_softmax(h @ self.embedding.weight.T, dim=-1)
        return -log_probabilities.gather(-1, labels[..., None])[..., 0]


class Recurrent(nn.Module):
    def __init__(self, block: TokenBlock) -> None:
        super().__init__()
        self.rnn = nn.RNN(block.width, block.width, nonlinearity="tanh")

    def forward(self, xs):
        return self.rnn(xs)[0]


class Positions(nn.Module):
    """RoBERTa's position ids: the running count of the tokens that are not padding."""

    def __init__(self, block: TokenBlock) -> None:
        super().__init__()
        self.tokens = nn.Embedding(block.vocabulary, block.width)
        self.positions = nn.Embedding(PADDING + block.sequence + 1, block.width)

    def forward(self, ids):
        mask = (ids != PADDING).long()
        positions = torch.cumsum(mask, dim=1) * mask + PADDING
        h = self.tokens(ids) + self.positions(positions)
        weights = mask[..., None].to(h.dtype)
        return (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)


class Segments(nn.Module):
    def __init__(self, block: TokenBlock) -> None:
        super().__init__()
        self.segments = block.segments

    def forward(self, values, ids):
        sums = torch.zeros(self.segments, values.shape[1], dtype=values.dtype)
        pooled = torch.relu(sums.index_add(0, ids, values))
        return pooled[ids] * values


class TopK(nn.Module):
    def __init__(self, block: TokenBlock) -> None:
        super().__init__()
        self.k = block.k

    def forward(self, values):
        top, order = torch.topk(values, self.k, dim=-1)
        chosen = (order[..., None] == torch.arange(values.shape[-1])).sum(dim=1)
        return top.sum(dim=-1, keepdim=True) * chosen


class Argmax(nn.Module):
    def forward(self, values):
        winners = torch.argmax(values, dim=-1)
        one_hot = winners[:, None] == torch.arange(values.shape[-1])
        return torch.where(one_hot, values.max(dim=-1, keepdim=True).values, values * 0.5)


MODULES = {
    "language_model": LanguageModelHead,
    "recurrent": Recurrent,
    "positions": Positions,
    "segments": Segments,
    "top_k": TopK,
    "argmax": lambda block: Argmax(),
}


def torch_token_block(block: TokenBlock, seed: int) -> tuple[nn.Module, tuple]:
    """The module of ``seed``'s token block and its inputs, both seeded."""
    torch.manual_seed(seed)
    module = MODULES[block.kind](block)
    shape = (block.batch, block.sequence)
    if block.kind == "language_model":
        ids = torch.randint(0, block.vocabulary, shape)
        return module, (ids, torch.randint(0, block.vocabulary, shape))
    if block.kind == "recurrent":
        return module, (torch.randn(block.sequence, block.batch, block.width),)
    if block.kind == "positions":
        ids = torch.randint(0, block.vocabulary, shape)
        # Some rows end in padding, as a batch of unequal sentences does.
        ends = torch.randint(1, block.sequence + 1, (block.batch,))
        ids[torch.arange(block.sequence) >= ends[:, None]] = PADDING
        return module, (ids,)
    values = torch.randn(block.rows, block.width)
    if block.kind == "segments":
        ids = torch.randint(0, block.segments, (block.rows,))
        return module, (values, ids.sort().values if block.sorted_segments else ids)
    return module, (values,)


def check_torch_token_block(seed: int) -> None:
    block = draw_token_block(seed)
    module, inputs = torch_token_block(block, seed)
    module.eval()
    wide = [x.double() if x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        want = copy.deepcopy(module).double()(*wide).numpy()
    got = shlo.torch.compile(module, inputs)(*inputs).double().numpy()
    assert got.shape == want.shape, block
    # Token losses may be near 0 from values of order 1 (test_random_token_blocks.py).
    error = relative_error(got, want, 1.0 if block.kind == "language_model" else 1e-30)
    assert error <= TOLERANCE, f"seed {seed}: {block}: error {error:.3g} of the largest"


@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_random_torch_token_block_matches_float64_torch(seed: int) -> None:
    check_torch_token_block(seed)


def test_the_sample_has_every_kind() -> None:
    assert {draw_token_block(seed).kind for seed in range(FIRST, FIRST + CASES)} == set(MODULES)
