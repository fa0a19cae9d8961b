"""Real models against XLA: transformers' Flax models, an nnx block and greedy generation.

The bench's own models are kernels and three small networks; this times the
programs the issue measured shlo on (GPT-2, BERT, Llama, ViT, an nnx
transformer block) and their relatives, at a few hundred wide and four
layers, randomly initialized (nothing is downloaded), Whisper at tiny's
size, RegNet (grouped convolutions) at transformers' default size and a
two-layer flax.linen LSTM (a scan over time). The ``*_generate``
models are transformers' own ``generate``: a ``lax.while_loop`` over the
model with its key/value cache, 32 new tokens; the ``*_bf16`` models compute
in bf16 and store their weights in it (compared within 3e-2). Each model is
exported once from jax and checked against jax.jit (``bench.systems.compare``);
shlo and XLA are timed in interleaved rounds in one process. It prints a table of
median ms, the ratio shlo / XLA and both compile times; each compiler's first
compilation in the process (a tiny program, before the models) is printed
apart, as ``python -m bench`` does.

  .venv/bin/python -m bench.zoo [--only bert,gpt2_generate] [--repeats 5] [--quick]

``--quick`` builds every model at a tiny size and times one round: it checks
that the script and the models work, not their speed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np

from bench import models
from bench.systems import Case, compare, prepare_shlo, prepare_xla, warm_up
from bench.timing import interleaved_medians

VOCAB, SEQ, NEW_TOKENS = 4000, 128, 32
Builder = Callable[[bool], tuple[Callable[..., Any], tuple[Any, ...]]]


def _token_ids(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(0).integers(3, VOCAB, shape, dtype=np.int32)


def _size(quick: bool) -> dict[str, int]:
    """Width, layers, heads and MLP width of the text models."""
    if quick:
        return dict(hidden=32, layers=1, heads=2, mlp=64, seq=8)
    return dict(hidden=512, layers=4, heads=8, mlp=2048, seq=SEQ)


def _transformers_model(
    model_class: str, config_class: str, config: dict[str, Any], bf16: bool = False
) -> tuple[Any, Any]:
    """The model and its parameters, computing and stored in bf16 when ``bf16``."""
    import jax.numpy as jnp
    import transformers

    config_object = getattr(transformers, config_class)(**config)
    dtype = jnp.bfloat16 if bf16 else jnp.float32
    model = getattr(transformers, model_class)(config_object, seed=0, dtype=dtype)
    return model, model.to_bf16(model.params) if bf16 else model.params


def encoder(model_class: str, config_class: str, bf16: bool = False, **extra: Any) -> Builder:
    """A text encoder's last hidden state for one sequence (in bf16: weights too)."""

    def build(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        s = _size(quick)
        config = dict(
            vocab_size=VOCAB,
            hidden_size=s["hidden"],
            num_hidden_layers=s["layers"],
            num_attention_heads=s["heads"],
            intermediate_size=s["mlp"],
            max_position_embeddings=512,
        )
        model, params = _transformers_model(model_class, config_class, {**config, **extra}, bf16)
        forward = lambda params, ids: model(ids, params=params).last_hidden_state  # noqa: E731
        return forward, (params, _token_ids((1, s["seq"])))

    return build


def language_model(
    model_class: str,
    config_class: str,
    config: Callable[[dict[str, int]], dict[str, Any]],
    generate: bool = False,
    bf16: bool = False,
) -> Builder:
    """A decoder's logits for one sequence, or its greedy continuation by 32 tokens."""

    def build(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        s = _size(quick)
        model, params = _transformers_model(
            model_class, config_class, {"vocab_size": VOCAB, **config(s)}, bf16
        )
        if not generate:
            forward = lambda params, ids: model(ids, params=params).logits  # noqa: E731
            return forward, (params, _token_ids((1, s["seq"])))
        new_tokens = 4 if quick else NEW_TOKENS

        def continuation(params, ids):
            return model.generate(
                ids, params=params, max_new_tokens=new_tokens, do_sample=False, pad_token_id=0
            ).sequences

        return continuation, (params, _token_ids((2, 16)))

    return build


def gpt2_config(s: dict[str, int]) -> dict[str, Any]:
    return dict(n_positions=512, n_embd=s["hidden"], n_layer=s["layers"], n_head=s["heads"])


def llama_config(s: dict[str, int]) -> dict[str, Any]:
    return dict(
        hidden_size=s["hidden"],
        intermediate_size=s["mlp"] * 11 // 16,
        num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"],
        num_key_value_heads=s["heads"] // 2,
        max_position_embeddings=512,
    )


def vision_transformer(model_cls: str, config_cls: str, patch: int) -> Builder:
    """A vision transformer on one 224x224 image in patches of ``patch``, 384 wide, 4 layers
    (4x wide MLPs; DINOv2's default ratio)."""

    def build(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        image, hidden = (2 * patch, 32) if quick else (224, 384)
        config = dict(
            image_size=image,
            patch_size=patch,
            hidden_size=hidden,
            num_hidden_layers=1 if quick else 4,
            num_attention_heads=2 if quick else 6,
        )
        if config_cls == "ViTConfig":
            config["intermediate_size"] = 4 * hidden
        model, params = _transformers_model(model_cls, config_cls, config)
        pixels = models.normal((1, 3, image, image))
        return (lambda params, x: model(x, params=params).last_hidden_state), (params, pixels)

    return build


def gemma_config(s: dict[str, int]) -> dict[str, Any]:
    """Llama's, with one key/value head; and the default positions (8192), at which Flax
    Gemma builds its causal mask."""
    config = {**llama_config(s), "num_key_value_heads": 1, "head_dim": s["hidden"] // s["heads"]}
    del config["max_position_embeddings"]
    return config


def whisper(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Whisper (tiny's size: 384 wide, 4 + 4 layers) on 30 s of 80 mel bins, 32 decoder tokens."""
    mels, frames, width, layers, heads = (8, 32, 32, 1, 2) if quick else (80, 3000, 384, 4, 6)
    config = dict(
        vocab_size=VOCAB,
        num_mel_bins=mels,
        max_source_positions=frames // 2,
        d_model=width,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=4 * width,
        decoder_ffn_dim=4 * width,
    )
    model, params = _transformers_model(
        "FlaxWhisperForConditionalGeneration", "WhisperConfig", config
    )

    def forward(params, features, decoder_ids):
        return model(features, decoder_input_ids=decoder_ids, params=params).logits

    return forward, (params, models.normal((1, mels, frames)), _token_ids((1, 4 if quick else 32)))


def regnet(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """transformers' default RegNet on one 224x224 image: grouped 3x3 convolutions."""
    size, config = (
        (32, dict(embedding_size=8, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8))
        if quick
        else (224, {})
    )
    model, params = _transformers_model("FlaxRegNetModel", "RegNetConfig", config)
    pixels = models.normal((1, 3, size, size))
    return (lambda params, x: model(x, params=params).last_hidden_state), (params, pixels)


def wav2vec2(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """wav2vec2 on 2 s of 16 kHz audio, 384 wide: 1-D convolutions of 512 channels, then a
    positional convolution in 16 groups of 24 channels."""
    samples, hidden = (4000, 32) if quick else (32000, 384)
    config = dict(
        hidden_size=hidden,
        num_hidden_layers=1 if quick else 4,
        num_attention_heads=2 if quick else 6,
        intermediate_size=4 * hidden,
        num_conv_pos_embedding_groups=4 if quick else 16,
        do_stable_layer_norm=True,
        feat_extract_norm="layer",
    )
    if quick:
        config.update(conv_dim=(32,) * 7, num_conv_pos_embeddings=16)
    model, params = _transformers_model("FlaxWav2Vec2Model", "Wav2Vec2Config", config)
    audio = models.normal((1, samples))
    return (lambda params, x: model(x, params=params).last_hidden_state), (params, audio)


def pre_norm_block(dim: int, heads: int, rngs: Any) -> Any:
    """A pre-norm transformer block in flax.nnx: causal attention and a gelu MLP."""
    from flax import nnx

    class PreNormBlock(nnx.Module):
        def __init__(self) -> None:
            self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
            self.attention = nnx.MultiHeadAttention(
                num_heads=heads, in_features=dim, decode=False, rngs=rngs
            )
            self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
            self.up = nnx.Linear(dim, 4 * dim, rngs=rngs)
            self.down = nnx.Linear(4 * dim, dim, rngs=rngs)

        def __call__(self, x):
            mask = nnx.make_causal_mask(x[..., 0])
            x = x + self.attention(self.norm1(x), mask=mask)
            return x + self.down(nnx.gelu(self.up(self.norm2(x))))

    return PreNormBlock()


def nnx_block(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``pre_norm_block`` on one sequence, its state an argument."""
    from flax import nnx

    dim, heads, seq = (32, 2, 8) if quick else (512, 8, SEQ)
    graphdef, state = nnx.split(pre_norm_block(dim, heads, nnx.Rngs(0)))
    forward = lambda state, x: nnx.merge(graphdef, state)(x)  # noqa: E731
    return forward, (state, models.normal((1, seq, dim)))


def lstm(quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Two layers of flax.linen's ``OptimizedLSTMCell`` under ``nn.RNN`` (a ``lax.scan``
    over time), 512 wide, on 8 sequences of 128 steps."""
    import flax.linen as nn
    import jax

    batch, steps, features = (2, 8, 16) if quick else (8, SEQ, 512)

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(2):
                x = nn.RNN(nn.OptimizedLSTMCell(features))(x)
            return x

    x = models.normal((batch, steps, features))
    params = Stack().init(jax.random.key(0), x)
    return (lambda params, x: Stack().apply(params, x)), (params, x)


ZOO: dict[str, Builder] = {
    "bert": encoder("FlaxBertModel", "BertConfig"),
    "roberta": encoder("FlaxRobertaModel", "RobertaConfig"),
    "electra": encoder("FlaxElectraModel", "ElectraConfig", embedding_size=128),
    "gpt2": language_model("FlaxGPT2LMHeadModel", "GPT2Config", gpt2_config),
    "llama": language_model("FlaxLlamaForCausalLM", "LlamaConfig", llama_config),
    "gemma": language_model("FlaxGemmaForCausalLM", "GemmaConfig", gemma_config),
    "whisper": whisper,
    # 196 patches; DINOv2: 256 and a class token, 257 rows.
    "vit": vision_transformer("FlaxViTModel", "ViTConfig", 16),
    "dinov2": vision_transformer("FlaxDinov2Model", "Dinov2Config", 14),
    "regnet": regnet,
    "wav2vec2": wav2vec2,
    "nnx_block": nnx_block,
    "lstm": lstm,
    "bert_bf16": encoder("FlaxBertModel", "BertConfig", bf16=True),
    "gpt2_bf16": language_model("FlaxGPT2LMHeadModel", "GPT2Config", gpt2_config, bf16=True),
    "gpt2_generate": language_model("FlaxGPT2LMHeadModel", "GPT2Config", gpt2_config, True),
    "llama_generate": language_model("FlaxLlamaForCausalLM", "LlamaConfig", llama_config, True),
}


def measure(name: str, quick: bool, repeats: int) -> dict[str, Any]:
    fn, args = ZOO[name](quick)
    # bf16 keeps 8 bits: a few units in its last place of the largest output.
    rtol = 3e-2 if name.endswith("_bf16") else models.Model.rtol
    model = models.Model(name, "", fn, args, work=None, unit="flop", rtol=rtol)
    case = Case.export(model)
    shlo, xla = prepare_shlo(case, None), prepare_xla(case)
    problem, error = compare(shlo.outputs, xla.outputs, model.rtol)
    if problem:
        raise SystemExit(f"{name}: shlo differs from jax.jit: {problem}")
    budget = 0.01 if quick else 0.3
    shlo_s, xla_s = interleaved_medians([shlo.call, xla.call], repeats, budget)
    return dict(
        name=name,
        shlo_ms=shlo_s * 1e3,
        xla_ms=xla_s * 1e3,
        ratio=shlo_s / xla_s,
        compile_s=(shlo.compile_s, xla.compile_s),
        error=error,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated models (default: all)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny models, one round")
    options = parser.parse_args(argv)
    names = options.only.split(",") if options.only else list(ZOO)
    repeats = 1 if options.quick else options.repeats
    # As in python -m bench: the first model's compile times would include each
    # compiler's start-up (shlo's worker process, XLA's first compilation).
    first = warm_up(["shlo", "xla"], "cpu")
    print(
        "first compile in this process, excluded from the models' compile times: "
        + ", ".join(f"{system} {seconds:.2f} s" for system, seconds in first.items())
    )
    print("| model | shlo ms | XLA ms | shlo / XLA | compile s shlo / XLA | max error |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in names:
        row = measure(name, options.quick, repeats)
        shlo_compile, xla_compile = row["compile_s"]
        print(
            f"| {name} | {row['shlo_ms']:.3g} | {row['xla_ms']:.3g} | {row['ratio']:.2f}"
            f" | {shlo_compile:.2f} / {xla_compile:.2f} | {row['error']:.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
