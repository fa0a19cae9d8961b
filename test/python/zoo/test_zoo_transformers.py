"""HuggingFace transformers' Flax models, randomly initialized from small configs.

Nothing is downloaded: each model is built from a config object and token ids
are random. Parameters are arguments of the exported function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("flax")
transformers = pytest.importorskip("transformers")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from zoo_harness import check  # noqa: E402

VOCAB = 100
BATCH, SEQ = 2, 8

# A text encoder's small shape: 2 layers, hidden 32, 2 heads.
ENCODER = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=32,
)


def token_ids(shape: tuple[int, ...] = (BATCH, SEQ), seed: int = 0) -> np.ndarray:
    # Ids start at 3 so none is a special padding id that changes positions.
    return np.random.default_rng(seed).integers(3, VOCAB, shape, dtype=np.int32)


def attention_mask(lengths: list[int], seq: int) -> np.ndarray:
    return (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype(np.int32)


def images(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def random_model(model_cls: str, config_cls: str, config: dict[str, Any]) -> Any:
    """A transformers Flax model with random weights from a fixed seed."""
    return getattr(transformers, model_cls)(getattr(transformers, config_cls)(**config), seed=0)


def encoder_case(model_cls: str, config_cls: str, **config: Any) -> Callable[[], tuple]:
    """An encoder called with input ids and a padding mask; all outputs compared."""

    def build() -> tuple:
        model = random_model(model_cls, config_cls, config)
        mask = attention_mask([SEQ, SEQ - 3], SEQ)

        def forward(params, ids, mask):
            return model(ids, attention_mask=mask, params=params).to_tuple()

        return forward, (model.params, token_ids(), mask)

    return build


def causal_lm_case(model_cls: str, config_cls: str, **config: Any) -> Callable[[], tuple]:
    """A decoder-only language model's logits."""

    def build() -> tuple:
        model = random_model(model_cls, config_cls, config)

        def forward(params, ids):
            return model(ids, params=params).logits

        return forward, (model.params, token_ids())

    return build


def seq2seq_case(model_cls: str, config_cls: str, **config: Any) -> Callable[[], tuple]:
    """An encoder-decoder model's logits for given decoder ids."""

    def build() -> tuple:
        model = random_model(model_cls, config_cls, config)

        def forward(params, ids, decoder_ids):
            return model(ids, decoder_input_ids=decoder_ids, params=params).logits

        return forward, (model.params, token_ids(), token_ids((BATCH, 5), seed=1))

    return build


def vision_case(model_cls: str, config_cls: str, image_shape: tuple, **config: Any) -> Callable:
    """An image model (NCHW pixels, as transformers takes them); all outputs compared."""

    def build() -> tuple:
        model = random_model(model_cls, config_cls, config)

        def forward(params, pixels):
            return model(pixels, params=params).to_tuple()

        return forward, (model.params, images(image_shape))

    return build


def wav2vec2_case() -> tuple:
    """wav2vec2: seven strided 1-D convolutions over raw audio, then a positional
    convolution in 2 groups of 24 channels."""
    model = random_model(
        "FlaxWav2Vec2Model",
        "Wav2Vec2Config",
        dict(
            hidden_size=48,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            conv_dim=(32,) * 7,
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=2,
            do_stable_layer_norm=True,
            feat_extract_norm="layer",
        ),
    )

    def forward(params, audio):
        return model(audio, params=params).last_hidden_state

    return forward, (model.params, images((BATCH, 4000)))


def whisper_case() -> tuple:
    """Whisper: a 1-D convolution stem over mel features, then an encoder-decoder."""
    model = random_model(
        "FlaxWhisperForConditionalGeneration",
        "WhisperConfig",
        dict(
            vocab_size=VOCAB,
            num_mel_bins=8,
            max_source_positions=16,
            max_target_positions=16,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
        ),
    )

    def forward(params, features, decoder_ids):
        return model(features, decoder_input_ids=decoder_ids, params=params).logits

    return forward, (model.params, images((BATCH, 8, 32)), token_ids((BATCH, 5), seed=1))


GPT2 = dict(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2)
# BART's small encoder-decoder shape, which Pegasus shares.
BART = dict(
    vocab_size=VOCAB,
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_position_embeddings=32,
)

CASES = {
    "gpt2": causal_lm_case("FlaxGPT2LMHeadModel", "GPT2Config", **GPT2),
    "bert": encoder_case("FlaxBertModel", "BertConfig", **ENCODER),
    "roberta": encoder_case("FlaxRobertaModel", "RobertaConfig", **ENCODER),
    "electra": encoder_case("FlaxElectraModel", "ElectraConfig", embedding_size=16, **ENCODER),
    "albert": encoder_case("FlaxAlbertModel", "AlbertConfig", embedding_size=16, **ENCODER),
    "distilbert": encoder_case(
        "FlaxDistilBertModel",
        "DistilBertConfig",
        vocab_size=VOCAB,
        dim=32,
        n_layers=2,
        n_heads=2,
        hidden_dim=64,
        max_position_embeddings=32,
    ),
    "bart": seq2seq_case("FlaxBartForConditionalGeneration", "BartConfig", **BART),
    "t5": seq2seq_case(
        "FlaxT5ForConditionalGeneration",
        "T5Config",
        vocab_size=VOCAB,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
    ),
    "llama": causal_lm_case(
        "FlaxLlamaForCausalLM",
        "LlamaConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
    ),
    "mistral": causal_lm_case(
        "FlaxMistralForCausalLM",
        "MistralConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        sliding_window=4,
    ),
    # Its causal mask is built for every position, then sliced.
    "gemma": causal_lm_case(
        "FlaxGemmaForCausalLM",
        "GemmaConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=256,
    ),
    "whisper": whisper_case,
    "wav2vec2": wav2vec2_case,
    "opt": causal_lm_case(
        "FlaxOPTForCausalLM",
        "OPTConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        word_embed_proj_dim=32,
        num_hidden_layers=2,
        ffn_dim=64,
        num_attention_heads=2,
        max_position_embeddings=32,
    ),
    "gpt_neo": causal_lm_case(
        "FlaxGPTNeoForCausalLM",
        "GPTNeoConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        num_layers=2,
        num_heads=2,
        attention_types=[[["global", "local"], 1]],
        window_size=4,
        intermediate_size=64,
        max_position_embeddings=32,
    ),
    # ALiBi: attention biases that grow with the distance between positions.
    "bloom": causal_lm_case(
        "FlaxBloomForCausalLM",
        "BloomConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        n_layer=2,
        n_head=4,
    ),
    # Rotary positions on part of each head (rotary_dim), attention and MLP in parallel.
    "gptj": causal_lm_case(
        "FlaxGPTJForCausalLM",
        "GPTJConfig",
        vocab_size=VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=2,
        rotary_dim=8,
        n_positions=32,
    ),
    # Rotary positions applied to interleaved pairs in an encoder.
    "roformer": encoder_case("FlaxRoFormerModel", "RoFormerConfig", **ENCODER),
    # Sinusoidal positions computed into the program; pre-norm encoder and decoder.
    "pegasus": seq2seq_case("FlaxPegasusForConditionalGeneration", "PegasusConfig", **BART),
    # A causal text encoder whose pooled output gathers the end-of-text token by argmax.
    "clip_text": encoder_case(
        "FlaxCLIPTextModel",
        "CLIPTextConfig",
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    ),
    "vit": vision_case(
        "FlaxViTModel",
        "ViTConfig",
        (BATCH, 3, 16, 16),
        image_size=16,
        patch_size=4,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    ),
    # 28 / 14: 4 patches and the class token.
    "dinov2": vision_case(
        "FlaxDinov2Model",
        "Dinov2Config",
        (BATCH, 3, 28, 28),
        image_size=28,
        patch_size=14,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
    ),
    "beit": vision_case(
        "FlaxBeitModel",
        "BeitConfig",
        (BATCH, 3, 16, 16),
        image_size=16,
        patch_size=4,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        use_relative_position_bias=True,
    ),
    "resnet": vision_case(
        "FlaxResNetModel",
        "ResNetConfig",
        (BATCH, 3, 32, 32),
        embedding_size=8,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        layer_type="basic",
    ),
    # Grouped convolutions (groups of 8 channels) and squeeze-and-excitation.
    "regnet": vision_case(
        "FlaxRegNetModel",
        "RegNetConfig",
        (BATCH, 3, 32, 32),
        embedding_size=8,
        hidden_sizes=[16, 32],
        depths=[1, 2],
        groups_width=8,
    ),
}


class JnpWithClipBounds:
    """jax.numpy plus clip's a_min/a_max keywords, which FlaxT5 uses and jax 0.10 removed."""

    def __getattr__(self, name: str) -> Any:
        return getattr(jnp, name)

    @staticmethod
    def clip(x, a_min=None, a_max=None):
        return jnp.clip(x, min=a_min, max=a_max)


@pytest.mark.parametrize("name", list(CASES))
def test_model(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if name == "t5":
        from transformers.models.t5 import modeling_flax_t5

        monkeypatch.setattr(modeling_flax_t5, "jnp", JnpWithClipBounds())
    fn, args = CASES[name]()
    check(name, fn, args)


def test_bert_polymorphic_batch_and_sequence() -> None:
    config = transformers.BertConfig(**ENCODER)
    model = transformers.FlaxBertModel(config, seed=0)

    def forward(params, ids, mask):
        return model(ids, attention_mask=mask, params=params).last_hidden_state

    def args(batch: int, seq: int, seed: int) -> tuple:
        lengths = [seq - i % seq for i in range(batch)]
        return model.params, token_ids((batch, seq), seed), attention_mask(lengths, seq)

    check(
        "bert_polymorphic",
        forward,
        args(2, 8, 0),
        polymorphic_shapes=(None, "b, s", "b, s"),
        more_args=[args(3, 5, 1), args(1, 12, 2)],
    )


def gpt2_greedy(model, params, prompt, new_tokens: int):
    """Greedy decoding with a KV cache, written as a lax.fori_loop over the model."""
    batch, prompt_len = prompt.shape
    total = prompt_len + new_tokens
    cache = model.init_cache(batch, total)
    mask = jnp.ones((batch, total), jnp.int32)
    positions = jnp.broadcast_to(jnp.arange(prompt_len, dtype=jnp.int32), (batch, prompt_len))
    out = model(
        prompt, attention_mask=mask, position_ids=positions, past_key_values=cache, params=params
    )
    tokens = jnp.zeros((batch, total), jnp.int32).at[:, :prompt_len].set(prompt)
    first = jnp.argmax(out.logits[:, -1], axis=-1).astype(jnp.int32)
    tokens = tokens.at[:, prompt_len].set(first)

    def step(i, state):
        tokens, cache = state
        position = prompt_len + i
        token = jax.lax.dynamic_slice_in_dim(tokens, position, 1, axis=1)
        positions = jnp.full((batch, 1), position, jnp.int32)
        out = model(
            token,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            params=params,
        )
        next_token = jnp.argmax(out.logits[:, -1], axis=-1).astype(jnp.int32)
        tokens = jax.lax.dynamic_update_slice_in_dim(tokens, next_token[:, None], position + 1, 1)
        return tokens, out.past_key_values

    tokens, _ = jax.lax.fori_loop(0, new_tokens - 1, step, (tokens, out.past_key_values))
    return tokens


def test_gpt2_greedy_decoding_polymorphic_batch() -> None:
    model = transformers.FlaxGPT2LMHeadModel(transformers.GPT2Config(**GPT2), seed=0)

    def generate(params, prompt):
        return gpt2_greedy(model, params, prompt, new_tokens=6)

    check(
        "gpt2_greedy_loop",
        generate,
        (model.params, token_ids((2, 4))),
        polymorphic_shapes=(None, "b, 4"),
        more_args=[(model.params, token_ids((3, 4), seed=1))],
    )


def test_gpt2_generate_polymorphic_batch() -> None:
    # transformers' own greedy search: a lax.while_loop over the model and its KV cache.
    model = transformers.FlaxGPT2LMHeadModel(transformers.GPT2Config(**GPT2), seed=0)

    def generate(params, prompt):
        return model.generate(
            prompt, params=params, max_new_tokens=6, do_sample=False, pad_token_id=0
        ).sequences

    check(
        "gpt2_generate",
        generate,
        (model.params, token_ids((2, 4))),
        polymorphic_shapes=(None, "b, 4"),
        more_args=[(model.params, token_ids((3, 4), seed=1))],
    )
