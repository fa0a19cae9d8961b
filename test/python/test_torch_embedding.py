"""shlo.torch.compile against PyTorch eager, on seven small models, static and shape-polymorphic.

The models are the kinds the issue names: an MLP, a CNN with BatchNorm (eval),
a TransformerEncoderLayer with embeddings, a GRU, an LSTM, an Elman RNN and
a ResNet-style block.
Their weights reach shlo as torch-mlir's dense_resource blobs, and the
dynamic exports compute shapes in the shape, tensor and arith dialects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
import shlo.torch  # noqa: E402
from torch.export import Dim  # noqa: E402

EXPECTED_FAILURES = {
    line.split()[0]: line.split(maxsplit=1)[1]
    for line in (Path(__file__).parent / "expected_failures_torch.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10)
        )

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 64)
        self.position = nn.Embedding(16, 64)
        self.layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.out = nn.Linear(64, 100)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.out(self.layer(self.embed(ids) + self.position(positions)))


class GRU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(16, 32, num_layers=2, batch_first=True)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        sequence, state = self.gru(x)
        return self.out(sequence[:, -1]), state


class LSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)

    def forward(self, x):
        sequence, (hidden, cell) = self.lstm(x)
        return sequence, hidden, cell


class ElmanRNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(16, 24, batch_first=True, nonlinearity="relu")

    def forward(self, x):
        return self.rnn(x)[0]


class ResidualBlock(nn.Module):
    def __init__(self, channels: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


def randomize_batchnorm(model: nn.Module) -> None:
    # Fresh BatchNorm statistics are 0 and 1: eval mode would test nothing.
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)


def token_ids(batch: int, length: int):
    return torch.randint(0, 100, (batch, length))


# name -> (model class, input maker of (batch, second dim), second dim, dynamic dims)
MODELS = {
    "mlp": (MLP, lambda b, _: torch.randn(b, 32), None, {0: "batch"}),
    "cnn": (CNN, lambda b, _: torch.randn(b, 3, 16, 16), None, {0: "batch"}),
    "encoder": (Encoder, token_ids, 12, {0: "batch", 1: "seq"}),
    "gru": (GRU, lambda b, _: torch.randn(b, 7, 16), None, {0: "batch"}),
    "lstm": (LSTM, lambda b, _: torch.randn(b, 6, 16), None, {0: "batch"}),
    "rnn": (ElmanRNN, lambda b, _: torch.randn(b, 5, 16), None, {0: "batch"}),
    "resblock": (ResidualBlock, lambda b, _: torch.randn(b, 16, 8, 8), None, {0: "batch"}),
}


def build(name: str):
    torch.manual_seed(0)
    model_class, make_input, length, dims = MODELS[name]
    model = model_class()
    randomize_batchnorm(model)
    return model.eval(), make_input, length, dims


def assert_matches_eager(model, compiled, *args) -> None:
    with torch.no_grad():
        want = model(*args)
    got = compiled(*args)
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    assert type(got) is type(want) and len(gots) == len(wants)
    for g, w in zip(gots, wants):
        assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def xfail_if_listed(case: str) -> None:
    if case in EXPECTED_FAILURES:
        pytest.xfail(EXPECTED_FAILURES[case])


@pytest.mark.parametrize("name", MODELS)
def test_static_model_matches_eager(name: str) -> None:
    xfail_if_listed(f"{name}-static")
    model, make_input, length, _ = build(name)
    example = make_input(2, length)
    compiled = shlo.torch.compile(model, (example,))
    assert_matches_eager(model, compiled, example)
    assert_matches_eager(model, compiled, make_input(2, length))


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_model_matches_eager_at_each_shape(name: str) -> None:
    model, make_input, length, dims = build(name)
    limits = {"batch": (2, 64), "seq": (2, 16)}
    dynamic = (
        {
            axis: Dim(label, min=limits[label][0], max=limits[label][1])
            for axis, label in dims.items()
        },
    )
    try:
        compiled = shlo.torch.compile(model, (make_input(2, length),), dynamic_shapes=dynamic)
    except shlo.ShloError:
        xfail_if_listed(f"{name}-dynamic")
        raise
    assert f"{name}-dynamic" not in EXPECTED_FAILURES, "passes now: remove it from the list"
    for batch, size in [(3, 5), (5, 9)]:
        assert_matches_eager(model, compiled, make_input(batch, size if length else None))
    assert len(compiled.executable.compiled_signatures) == 2


def test_a_shape_the_static_export_does_not_take_is_an_error() -> None:
    model, make_input, _, _ = build("mlp")
    compiled = shlo.torch.compile(model, (make_input(2, None),))
    with pytest.raises(ValueError, match="argument 0 of @main: expected shape 2x32, got 3x32"):
        compiled(make_input(3, None))


def test_arguments_of_another_structure_are_refused() -> None:
    model, make_input, _, _ = build("mlp")
    compiled = shlo.torch.compile(model, (make_input(2, None),))
    with pytest.raises(TypeError, match="do not match the export"):
        compiled(make_input(2, None), make_input(2, None))


class Inverse(nn.Module):
    def forward(self, x):
        return torch.linalg.inv(x)


class Spectrum(nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x).abs()


def test_what_torch_mlir_cannot_take_is_a_clear_error() -> None:
    # The importer raises NotImplementedError on effectful ops; torch-mlir's
    # passes name the op and the Python line. Both are ShloErrors, not crashes.
    with pytest.raises(
        shlo.ShloError, match=r"FX importer cannot import the program: .*with_effects"
    ):
        shlo.torch.compile(Inverse(), (torch.randn(3, 3),))
    with pytest.raises(
        shlo.ShloError, match=r"test_torch_embedding.py:\d+:\d+: error: .*view_as_complex"
    ):
        shlo.torch.compile(Spectrum(), (torch.randn(4, 8),))


def test_bfloat16_model_runs() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU()).to(torch.bfloat16).eval()
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    out = shlo.torch.compile(model, (x,))(x)
    assert out.dtype == torch.bfloat16
    with torch.no_grad():
        torch.testing.assert_close(out.float(), model(x).float(), rtol=2e-2, atol=2e-2)


class AttentionThenView(nn.Module):
    """GPT-2's attention output: torch.export drops the no-op .contiguous() before the view."""

    def forward(self, q, k, v):
        out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
        out = out.reshape(*out.shape[:-2], -1).contiguous()
        return out.view(-1, out.size(-1))


class OffsetByBuffer(nn.Module):
    """A buffer outside the state dict (persistent=False), like BERT's position ids."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("offsets", torch.arange(8.0), persistent=False)

    def forward(self, x):
        return x * 2 + self.offsets


class SliceAssignment(nn.Module):
    """x[1:, 1:] = y: a slice_scatter whose end is 2^63 - 1, as in BEiT."""

    def forward(self, x):
        padded = torch.zeros(x.shape[0] + 1, x.shape[1] + 1)
        padded[1:, 1:] = x
        return padded


@pytest.mark.parametrize(
    ("module", "shapes"),
    [
        (AttentionThenView(), [(2, 2, 5, 4)] * 3),
        (OffsetByBuffer(), [(3, 8)]),
        (SliceAssignment(), [(3, 4)]),
    ],
)
def test_exports_torch_mlir_did_not_take(module: nn.Module, shapes: list[tuple[int, ...]]) -> None:
    torch.manual_seed(0)
    args = tuple(torch.randn(*shape) for shape in shapes)
    compiled = shlo.torch.compile(module, args)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*args), module(*args), rtol=1e-5, atol=1e-6)


class TwoMasks(nn.Module):
    """Two bool buffers of one shape, as GPT-Neo's global and local attention masks."""

    def __init__(self) -> None:
        super().__init__()
        causal = torch.ones(6, 6, dtype=torch.bool).tril()
        self.register_buffer("near", causal ^ causal.tril(-2), persistent=False)
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, x):
        return torch.where(self.causal, x, -1.0) + torch.where(self.near, x, 0.0)


class Cumsums(nn.Module):
    """Cumulative sums along every axis of a [batch, seq, 5] input, and RoBERTa's position
    ids: a cumsum of the int mask, times the mask, plus the padding id."""

    def forward(self, x, mask):
        positions = torch.cumsum(mask, dim=1).type_as(mask) * mask + 1
        along = (torch.cumsum(x, dim=0), torch.cumsum(x, dim=1), torch.cumsum(x, dim=-1))
        return (
            positions,
            *along,
            torch.cumsum(mask > 0, dim=-1),
            torch.cumsum(x, 1, dtype=torch.float64),
        )


def test_cumsum_along_symbolic_and_static_dimensions() -> None:
    """torch-mlir converts a cumsum along a dimension of symbolic size to nothing
    (``shlo.torch_decompositions.cumsum``); along the static one it stays a scan."""
    model = Cumsums()
    batch, seq = Dim("batch", min=1, max=16), Dim("seq", min=2, max=64)

    def inputs(b: int, s: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(b * 100 + s)
        mask = (torch.rand(b, s, generator=generator) > 0.3).to(torch.int32)
        return torch.randn(b, s, 5, generator=generator), mask

    compiled = shlo.torch.compile(
        model, inputs(2, 7), dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq})
    )
    for b, s in [(1, 3), (3, 7), (4, 50)]:
        args = inputs(b, s)
        got, want = compiled(*args), model(*args)
        assert [g.dtype for g in got] == [w.dtype for w in want]
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


class Function(nn.Module):
    def __init__(self, function, *modules: nn.Module) -> None:
        super().__init__()
        self.function = function
        self.layers = nn.ModuleList(modules)

    def forward(self, *args):
        return self.function(self, *args)


# name -> (module, input of (batch, size), dimensions that are dynamic, whether
# a dynamic export is expected to compile). Each is an op torch-mlir 20261001
# converts only with static sizes, or not at all (shlo.torch_decompositions;
# shlo.torch_graph; shlo-torch-sort-to-stablehlo;
# arange's float size in shlo-remove-dynamism).
GAPS = {
    # F.unfold indexes with torch.arange(0, h - 1, 2), whose length is computed in f64.
    "unfold": (
        Function(lambda _, x: nn.functional.unfold(x, 2, stride=2)),
        lambda b, n: torch.randn(b, 3, 2 * n, 2 * n),
        {0: "batch", 2: "double", 3: "double"},
    ),
    "cumprod": (
        Function(lambda _, x: (torch.cumprod(x, 1), torch.cumprod(x > 0, -1))),
        lambda b, n: torch.rand(b, n) + 0.5,
        {0: "batch", 1: "size"},
    ),
    "logcumsumexp": (
        Function(lambda _, x: torch.logcumsumexp(50 * x, 1)),
        lambda b, n: torch.randn(b, n),
        {0: "batch", 1: "size"},
    ),
    "var_std": (
        Function(lambda _, x: (x.std(-1), x.var(0, correction=0), x.var(), x.var(1, keepdim=True))),
        lambda b, n: torch.randn(b, n) * 3 + 1,
        {0: "batch", 1: "size"},
    ),
    # torch-mlir's conversion makes their indices with an iota of dynamic shape
    # (shlo-torch-sort-to-stablehlo). The int sort has ties: stable order.
    "sort_topk": (
        Function(
            lambda _, x: (
                *torch.sort(x, dim=-1, descending=True),
                *torch.sort((x * 3).int(), dim=0, stable=True),
                *torch.topk(x, 3, dim=-1),
                *torch.topk(x, 2, dim=0, largest=False),
            )
        ),
        lambda b, n: torch.randn(b, n),
        {0: "batch", 1: "size"},
    ),
    # reflect: a size in an op's tensor operand (importer); replicate on two
    # dimensions: sizes that refinement needs three rounds for.
    "pad": (
        Function(
            lambda _, x: (
                nn.functional.pad(x[:, 0], (1, 2), mode="reflect"),
                nn.functional.pad(x, (1, 2, 2, 1), mode="replicate"),
            )
        ),
        lambda b, n: torch.randn(b, 3, n, n),
        {0: "batch", 2: "size", 3: "size"},
    ),
    "group_norm": (
        Function(lambda self, x: self.layers[0](x), nn.GroupNorm(2, 8)),
        lambda b, n: torch.randn(b, 8, n),
        {0: "batch", 2: "size"},
    ),
}


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", GAPS)
def test_ops_torch_mlir_converts_only_with_static_sizes(name: str, dynamic: bool) -> None:
    module, make_input, dims = GAPS[name]
    module = module.eval()
    limits = {"batch": Dim("batch", min=2, max=16), "size": Dim("size", min=3, max=64)}
    limits["double"] = 2 * Dim("half", min=1, max=16)
    shapes = {axis: limits[label] for axis, label in dims.items()}
    compiled = shlo.torch.compile(
        module, (make_input(2, 5),), dynamic_shapes=((shapes,),) if dynamic else None
    )
    for b, n in [(2, 5), (3, 9)] if dynamic else [(2, 5)]:
        x = make_input(b, n)
        want, got = module(x), compiled(x)
        wants = want if isinstance(want, tuple) else (want,)
        gots = got if isinstance(got, tuple) else (got,)
        for g, w in zip(gots, wants, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


class SplatArithmetic(nn.Module):
    """Constant-filled float tensors with integer scalars, Python's modulo with mixed
    signs, and shifts by a number: silent wrong answers or refusals of torch-mlir
    20261001 before shlo.torch mended them."""

    def forward(self, x, y):
        half = torch.full_like(x.float(), 0.5)
        return (
            half + -3,  # was 1.8e19: -3 read as unsigned
            half * -3,
            half - -3,
            half > 0,  # folded to false
            torch.where(half > 0, half, -1),
            torch.full_like(x.float(), -2.5) > -3,
            torch.full_like(x.float(), -0.5) <= -1,
            torch.remainder(x, y),  # -7 % 3 was -1 (C's sign), Python's is 2
            x % -3,
            7 % y,
            torch.remainder(x.float() + 0.5, y.float()),
            torch.remainder(x.float(), -2.5),
            x << 2,
            x >> 1,
            torch.full_like(x, -2) // 2,  # was -2^63: folded with unsigned division
            torch.full_like(x, 3) // -3,  # was 0
            torch.div(torch.full_like(x, 7), -3, rounding_mode="trunc"),
            torch.full_like(x, -7) // torch.full_like(x, 2),
            torch.full_like(x, 2) > 2.5,  # crashed torch-mlir's folder
            torch.full_like(x, 2) == 2.0,
        )


def test_scalars_and_modulo_match_eager() -> None:
    module = SplatArithmetic()
    x = torch.tensor([[-7, 7, -7, 7, 0, -1, -6, 5]])
    y = torch.tensor([[3, -3, -3, 3, 3, 5, 3, -2]])
    compiled = shlo.torch.compile(module, (x, y))
    for got, want in zip(compiled(x, y), module(x, y), strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


class EdgeValues(nn.Module):
    """NaN, negative indices, int64 beyond 2^53 and unsigned shifts: each of these gave a
    silent wrong answer through torch-mlir 20261001 before shlo.torch mended it."""

    def forward(self, x, i, big, small):
        return (
            x.argmax(1),  # a row with NaN: torch gives the NaN's index
            x.argmin(1),
            x.argmax(),
            *x.max(1),  # the NaN and its index
            *x.min(1),
            x == x,  # folded to true: the NaN test
            x != x,
            x <= x,
            torch.sort(x, dim=1).values,  # NaN last
            torch.sort(x, dim=1, descending=True).indices,  # NaN first
            torch.topk(x, 3, dim=1).values,  # NaN is the largest
            x[:, i],  # negative indices count from the end
            x[0][i],
            torch.zeros(8).index_put((i,), torch.ones(3), accumulate=True),
            big // 3,  # computed in floating point: off by 170 at 2^63
            torch.div(big, -7, rounding_mode="floor"),
            small >> 1,  # uint8: logical, not arithmetic
            small >> (small % 10),  # shifts of 8 or more give 0
            small | 1,  # refused: bitwise ops by a number
            small & 6,
            small ^ 255,
            torch.fmod(x, 2.0),
        )


def test_edge_values_match_eager() -> None:
    module = EdgeValues()
    nan, inf = float("nan"), float("inf")
    x = torch.tensor(
        [[0.5, -1.0, 2.5, 2.5, -3.0, 0.0, 1.0, -0.5], [3.5, nan, -1e30, inf, -inf, nan, 100.0, 1.0]]
    )
    i = torch.tensor([-1, 2, -8])
    big = torch.tensor([2**63 - 1, -(2**63), 2**53 + 1, -(2**60) - 3, 7, -7])
    small = torch.tensor([0, 1, 127, 128, 200, 255], dtype=torch.uint8)
    args = (x, i, big, small)
    compiled = shlo.torch.compile(module, args)
    for got, want in zip(compiled(*args), module(*args), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def test_ops_torch_mlir_has_no_conversion_of() -> None:
    """addmv, bucketize and avg_pool2d's divisor_override compile through decompositions."""
    boundaries = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    module = Function(
        lambda _, a, v, x, image: (
            torch.addmv(v[:4], a, v, beta=0.5, alpha=2.0),
            torch.bucketize(x, boundaries),
            torch.bucketize(x, boundaries, right=True, out_int32=True),
            nn.functional.avg_pool2d(image, 2, divisor_override=3),
            nn.functional.avg_pool2d(image, 3, 2, 1, divisor_override=5),
        )
    )
    args = (
        torch.randn(4, 5),
        torch.randn(5),
        torch.tensor([-2.0, -1.0, 0.0, 0.25, 0.5, 3.0, 2.0]),
        torch.randn(2, 3, 7, 9),
    )
    compiled = shlo.torch.compile(module, args)
    for got, want in zip(compiled(*args), module(*args), strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_half_precision_norms_and_scans_accumulate_in_float32() -> None:
    """torch computes these in float32 and rounds once; torch-mlir computed them in
    float16, where the norm of 64 values of 100 and a cumsum through 120000 are inf."""
    module = Function(
        lambda _, x: (
            x.norm(dim=1),
            torch.linalg.vector_norm(x.bfloat16(), dim=1),
            x.cumsum(1),
            x.bfloat16().cumsum(1),
            (x / 100).cumprod(1),
        )
    )
    x = torch.cat([torch.full((1, 64), 100.0), torch.tensor([[6e4, 6e4, -6e4] + [10.0] * 61])])
    x = x.half()
    compiled = shlo.torch.compile(module, (x,))
    for got, want in zip(compiled(x), module(x), strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_upsample_nearest_by_a_scale_factor() -> None:
    """torch-mlir converts upsample_nearest with output sizes, not scale factors."""
    module = Function(lambda _, x: nn.functional.interpolate(x, scale_factor=2, mode="nearest"))
    x = torch.randn(2, 3, 5, 7)
    torch.testing.assert_close(shlo.torch.compile(module, (x,))(x), module(x))


def test_bool_constants_stay_distinct_when_python_reuses_an_id(monkeypatch) -> None:
    """torch-mlir's importer makes each bool constant a temporary uint8 tensor
    and remembers its literal by the temporary's id(); CPython gives a dead
    object's id to the next one, and CI once saw GPT-Neo's local mask become
    its global one that way. ``id`` here hands out the id of the last object
    that died first, always, as CPython often does."""
    import builtins
    import itertools
    import weakref

    from torch_mlir.extras import fx_importer

    fresh = itertools.count()
    freed: list[int] = []
    given: dict[int, int] = {}

    def reusing_id(obj: object) -> int:
        address = builtins.id(obj)
        if address not in given:
            try:
                weakref.finalize(obj, lambda: freed.append(given.pop(address)))
            except TypeError:  # not weakly referable: never dies as far as ids go
                given[address] = next(fresh)
            else:
                given[address] = freed.pop() if freed else next(fresh)
        return given[address]

    monkeypatch.setattr(fx_importer, "id", reusing_id, raising=False)
    torch.manual_seed(0)
    x = torch.randn(6, 6)
    model = TwoMasks()
    compiled = shlo.torch.compile(model, (x,))
    torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
