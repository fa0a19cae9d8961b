"""HuggingFace transformers' PyTorch models through shlo.torch.compile, against eager PyTorch.

Each model is built from a small config with random weights (a fixed seed;
nothing is downloaded), exported by ``shlo.torch.compile`` (torch.export,
torch-mlir's FX importer, StableHLO) and compiled for the CPU; its last hidden
state must match the eager module's. Three of them once failed before shlo's
compiler saw them: GPT-2's export could not be decomposed, BERT's and the
decoders' non-persistent buffers were not found by the importer, and BEiT's
slice assignment made torch-mlir's conversion run out of memory
(``shlo.torch``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import shlo.torch  # noqa: E402
from torch.export import Dim  # noqa: E402
from zoo_harness import assert_leaf_close  # noqa: E402

EXPECTED_FAILURES = {
    line.split()[0]: line.split(maxsplit=1)[1]
    for line in (Path(__file__).parents[1] / "expected_failures_torch.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}

VOCAB = 100
BATCH, SEQ = 2, 21
WIDTH, HEADS, LAYERS, FFN = 64, 2, 2, 128
IMAGE = 32

TEXT = dict(vocab_size=VOCAB, max_position_embeddings=64)
ENCODER = dict(
    **TEXT,
    hidden_size=WIDTH,
    num_hidden_layers=LAYERS,
    num_attention_heads=HEADS,
    intermediate_size=FFN,
)
DECODER = dict(ENCODER, num_key_value_heads=1)
VISION = dict(
    image_size=IMAGE,
    patch_size=4,
    hidden_size=WIDTH,
    num_hidden_layers=LAYERS,
    num_attention_heads=HEADS,
    intermediate_size=FFN,
)

# name -> (model class, config class, config, inputs: "ids", "ids+mask" or "pixels")
MODELS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "gpt2": (
        "GPT2Model",
        "GPT2Config",
        dict(vocab_size=VOCAB, n_positions=64, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS),
        "ids",
    ),
    "bert": ("BertModel", "BertConfig", ENCODER, "ids+mask"),
    "roberta": ("RobertaModel", "RobertaConfig", ENCODER, "ids+mask"),
    "electra": ("ElectraModel", "ElectraConfig", dict(ENCODER, embedding_size=32), "ids+mask"),
    "albert": ("AlbertModel", "AlbertConfig", dict(ENCODER, embedding_size=32), "ids+mask"),
    "distilbert": (
        "DistilBertModel",
        "DistilBertConfig",
        dict(**TEXT, dim=WIDTH, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN),
        "ids+mask",
    ),
    "llama": ("LlamaModel", "LlamaConfig", DECODER, "ids"),
    "mistral": ("MistralModel", "MistralConfig", dict(DECODER, sliding_window=8), "ids"),
    "qwen2": ("Qwen2Model", "Qwen2Config", DECODER, "ids"),
    "opt": (
        "OPTModel",
        "OPTConfig",
        dict(
            **TEXT,
            hidden_size=WIDTH,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            ffn_dim=FFN,
            word_embed_proj_dim=WIDTH,
        ),
        "ids",
    ),
    "gpt_neo": (
        "GPTNeoModel",
        "GPTNeoConfig",
        dict(
            **TEXT,
            hidden_size=WIDTH,
            num_layers=LAYERS,
            num_heads=HEADS,
            attention_types=[[["global", "local"], 1]],
            window_size=8,
            intermediate_size=FFN,
        ),
        "ids",
    ),
    "t5_encoder": (
        "T5EncoderModel",
        "T5Config",
        dict(
            vocab_size=VOCAB, d_model=WIDTH, d_kv=32, d_ff=FFN, num_layers=LAYERS, num_heads=HEADS
        ),
        "ids",
    ),
    "vit": ("ViTModel", "ViTConfig", VISION, "pixels"),
    "beit": ("BeitModel", "BeitConfig", dict(VISION, use_relative_position_bias=True), "pixels"),
    "convnext": (
        "ConvNextModel",
        "ConvNextConfig",
        dict(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1], image_size=IMAGE),
        "pixels",
    ),
}


class LastHiddenState(torch.nn.Module):
    """The model's last hidden state alone: one tensor to compare."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: Any) -> Any:
        return self.model(*inputs).last_hidden_state


def inputs(kind: str) -> tuple[Any, ...]:
    generator = torch.Generator().manual_seed(1)
    if kind == "pixels":
        return (torch.randn(BATCH, 3, IMAGE, IMAGE, generator=generator),)
    # Ids start at 3 so none is a special padding id that changes positions.
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=generator)
    if kind == "ids":
        return (ids,)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, SEQ - 5 :] = 0  # the second sequence is padded
    return ids, mask


def build(name: str) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    model_cls, config_cls, config, kind = MODELS[name]
    torch.manual_seed(0)
    config_object = getattr(transformers, config_cls)(**config)
    model = getattr(transformers, model_cls)(config_object)
    return LastHiddenState(model).eval(), inputs(kind)


@pytest.mark.parametrize("name", list(MODELS))
def test_transformers_torch_model_matches_eager(name: str) -> None:
    module, args = build(name)
    with torch.no_grad():
        want = module(*args).numpy()
    compiled: Callable[..., Any] = shlo.torch.compile(module, args)
    got = compiled(*args).numpy()
    assert np.abs(want).max() > 0.1  # a vacuous output would pass any comparison
    assert_leaf_close(got, want, 1e-4, name)


# One export with a dynamic batch and sequence length (batch only for images),
# code specialized per call shape. Not Mistral: torch.export itself refuses
# a dynamic sequence there (its sliding window specializes the length).
DYNAMIC = [name for name in MODELS if name != "mistral"]


def inputs_of_shape(name: str, batch: int, seq: int) -> tuple[Any, ...]:
    generator = torch.Generator().manual_seed(batch * 100 + seq)
    if MODELS[name][3] == "pixels":
        return (torch.randn(batch, 3, IMAGE, IMAGE, generator=generator),)
    ids = torch.randint(3, VOCAB, (batch, seq), generator=generator)
    if MODELS[name][3] == "ids":
        return (ids,)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[0, seq // 2 :] = 0
    return ids, mask


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_shapes_match_eager_at_each_shape(name: str) -> None:
    module, args = build(name)
    batch, seq = Dim("batch", min=1, max=8), Dim("seq", min=2, max=60)
    axes = {0: batch} if MODELS[name][3] == "pixels" else {0: batch, 1: seq}
    case = f"zoo-{name}-dynamic"
    try:
        compiled = shlo.torch.compile(module, args, dynamic_shapes=(tuple(axes for _ in args),))
    except shlo.ShloError:
        if case in EXPECTED_FAILURES:
            pytest.xfail(EXPECTED_FAILURES[case])
        raise
    assert case not in EXPECTED_FAILURES, "passes now: remove it from the list"
    for batch_size, length in [(1, 5), (3, 44)]:
        call_args = inputs_of_shape(name, batch_size, length)
        with torch.no_grad():
            want = module(*call_args).numpy()
        assert_leaf_close(compiled(*call_args).numpy(), want, 1e-4, f"{name} {batch_size}x{length}")
    assert len(compiled.executable.compiled_signatures) == 2
