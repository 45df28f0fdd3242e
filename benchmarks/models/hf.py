"""The Hugging Face family: transformers models built from their config classes
(random weights, nothing downloaded), with the inputs TorchBench feeds them.

``hf_model(name, auto_class, config_class, config, vocab, seq_len, ...)`` declares
one. As in TorchBench, a language model's inference call takes keyword inputs
``{"input_ids": ...}`` (sequence-to-sequence models also ``decoder_input_ids``),
a training step ``{"input_ids": ..., "labels": ...}`` (the model computes its
own loss), and the kv-cache is off. ``config`` holds the published
configuration TorchBench loads by name (``AutoConfig.from_pretrained("gpt2")``),
written out so that nothing is fetched.
"""
from __future__ import annotations

from functools import partial

import torch

from benchmarks.models.spec import ModelSpec, TensorSpec


def _build(auto_class: str, config_class: str, config: dict):
    # transformers takes seconds to import: only when a model is built.
    import transformers

    # TorchBench turns the kv-cache off. In the config itself: submodules (a
    # T5 decoder stack) keep copies of it made at construction.
    return getattr(transformers, auto_class).from_config(
        getattr(transformers, config_class)(**{"use_cache": False, **config}))


def _spec(name, auto_class, config_class, config, vocab, seq_len, features) -> ModelSpec:
    build = partial(_build, auto_class, config_class, config)
    if features is not None:  # an audio model: one positional tensor of features
        return ModelSpec(name, "hf", build, inputs=(TensorSpec(features),))
    ids = TensorSpec((seq_len,), torch.int64, low=0, high=vocab)
    kwargs = {"input_ids": ids}
    if auto_class == "AutoModelForSeq2SeqLM":
        kwargs["decoder_input_ids"] = ids  # TorchBench passes the same ids again
    return ModelSpec(name, "hf", build, kwargs=kwargs,
                     train_kwargs={"input_ids": ids, "labels": ids})


def hf_model(name: str, auto_class: str, config_class: str, config: dict, vocab: int,
             seq_len: int, *, cpu: dict, tiny: dict, features: tuple | None = None) -> ModelSpec:
    """A transformers model. ``vocab`` is the config's vocabulary size (token ids
    are drawn below it), ``seq_len`` TorchBench's sequence length.

    ``cpu`` and ``tiny`` describe those variants: config overrides, plus
    ``seq_len`` / ``vocab`` / ``features`` when they change. ``features`` makes
    an audio model (one positional tensor of that shape, batch excluded).
    """

    def variant(changes: dict) -> ModelSpec:
        changes = dict(changes)
        length = changes.pop("seq_len", seq_len)
        shape = changes.pop("features", features)
        words = changes.get("vocab_size", vocab)
        return _spec(name, auto_class, config_class, {**config, **changes}, words, length, shape)

    full = _spec(name, auto_class, config_class, config, vocab, seq_len, features)
    return ModelSpec(name=name, family="hf", build=full.build, inputs=full.inputs,
                     kwargs=full.kwargs, train_kwargs=full.train_kwargs,
                     cpu=variant(cpu), tiny=variant(tiny))


# Small enough to build and run in a blink, deep enough to keep the structure.
TINY_BERT = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
             "intermediate_size": 64, "vocab_size": 128, "seq_len": 16}

ALBERT_BASE_V2 = {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072,
                  "embedding_size": 128, "num_hidden_layers": 12, "hidden_act": "gelu_new",
                  "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
BART_BASE = {"d_model": 768, "encoder_layers": 6, "decoder_layers": 6,
             "encoder_attention_heads": 12, "decoder_attention_heads": 12,
             "encoder_ffn_dim": 3072, "decoder_ffn_dim": 3072}
BERT_LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16}
GPT2_LARGE = {"n_embd": 1280, "n_layer": 36, "n_head": 20}
LONGFORMER_BASE_4096 = {"vocab_size": 50265, "max_position_embeddings": 4098,
                        "attention_window": 512, "type_vocab_size": 1, "pad_token_id": 1,
                        "bos_token_id": 0, "eos_token_id": 2}
XLM_ROBERTA_BASE = {"vocab_size": 250002, "max_position_embeddings": 514, "type_vocab_size": 1,
                    "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2}
T5_BASE = {"d_model": 768, "d_ff": 3072, "num_layers": 12, "num_heads": 12}

MODELS = (
    hf_model("hf_Albert", "AutoModelForMaskedLM", "AlbertConfig", ALBERT_BASE_V2, 30000, 512,
             cpu={"num_hidden_layers": 2, "seq_len": 128},
             tiny={**TINY_BERT, "embedding_size": 16}),
    hf_model("hf_Bart", "AutoModelForSeq2SeqLM", "BartConfig", BART_BASE, 50265, 512,
             cpu={"encoder_layers": 1, "decoder_layers": 1, "seq_len": 128},
             tiny={"d_model": 32, "encoder_layers": 1, "decoder_layers": 1,
                   "encoder_attention_heads": 2, "decoder_attention_heads": 2,
                   "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "vocab_size": 128,
                   "seq_len": 16}),
    hf_model("hf_Bert", "AutoModelForMaskedLM", "BertConfig", {}, 30522, 512,
             cpu={"num_hidden_layers": 2, "seq_len": 128}, tiny=TINY_BERT),
    hf_model("hf_Bert_large", "AutoModelForMaskedLM", "BertConfig", BERT_LARGE, 30522, 512,
             cpu={"num_hidden_layers": 2, "seq_len": 128}, tiny=TINY_BERT),
    # Block-sparse attention needs more than (5 + 2 * random blocks) blocks of
    # tokens, or it falls back to full attention: smaller blocks keep it sparse.
    hf_model("hf_BigBird", "AutoModelForMaskedLM", "BigBirdConfig",
             {"attention_type": "block_sparse"}, 50358, 4096,
             cpu={"num_hidden_layers": 2, "block_size": 16, "num_random_blocks": 2,
                  "seq_len": 256},
             tiny={**TINY_BERT, "block_size": 4, "num_random_blocks": 1, "seq_len": 48}),
    hf_model("hf_DistilBert", "AutoModelForMaskedLM", "DistilBertConfig", {}, 30522, 512,
             cpu={"n_layers": 2, "seq_len": 128},
             tiny={"dim": 32, "n_layers": 1, "n_heads": 2, "hidden_dim": 64, "vocab_size": 128,
                   "seq_len": 16}),
    hf_model("hf_GPT2", "AutoModelForCausalLM", "GPT2Config", {}, 50257, 1024,
             cpu={"n_layer": 2, "seq_len": 128},
             tiny={"n_embd": 32, "n_layer": 1, "n_head": 2, "vocab_size": 128, "seq_len": 16}),
    hf_model("hf_GPT2_large", "AutoModelForCausalLM", "GPT2Config", GPT2_LARGE, 50257, 1024,
             cpu={"n_layer": 2, "seq_len": 128},
             tiny={"n_embd": 32, "n_layer": 1, "n_head": 2, "vocab_size": 128, "seq_len": 16}),
    hf_model("hf_Longformer", "AutoModelForMaskedLM", "LongformerConfig", LONGFORMER_BASE_4096,
             50265, 4096,
             cpu={"num_hidden_layers": 2, "attention_window": 64, "seq_len": 256},
             tiny={**TINY_BERT, "attention_window": 8}),
    hf_model("hf_Reformer", "AutoModelForMaskedLM", "ReformerConfig", {"num_buckets": 128},
             320, 4096,
             cpu={"attn_layers": ["local", "lsh"], "axial_pos_shape": [16, 16],
                  "num_buckets": 8, "seq_len": 256},
             tiny={"attn_layers": ["local", "lsh"], "axial_pos_shape": [4, 8],
                   "axial_pos_embds_dim": [16, 16], "hidden_size": 32, "num_attention_heads": 2,
                   "feed_forward_size": 64, "lsh_attn_chunk_length": 8,
                   "local_attn_chunk_length": 8, "num_buckets": 4, "seq_len": 32}),
    hf_model("hf_Roberta_base", "AutoModelForMaskedLM", "XLMRobertaConfig", XLM_ROBERTA_BASE,
             250002, 512,
             cpu={"num_hidden_layers": 2, "vocab_size": 50265, "seq_len": 128},
             tiny={**TINY_BERT, "max_position_embeddings": 34}),
    hf_model("hf_T5", "AutoModelForSeq2SeqLM", "T5Config", {}, 32128, 2048,
             cpu={"num_layers": 2, "seq_len": 128},
             tiny={"d_model": 32, "d_kv": 16, "d_ff": 64, "num_layers": 1, "num_heads": 2,
                   "vocab_size": 128, "seq_len": 16}),
    hf_model("hf_T5_base", "AutoModelForSeq2SeqLM", "T5Config", T5_BASE, 32128, 2048,
             cpu={"num_layers": 2, "seq_len": 128},
             tiny={"d_model": 32, "d_kv": 16, "d_ff": 64, "num_layers": 1, "num_heads": 2,
                   "vocab_size": 128, "seq_len": 16}),
    # Whisper's encoder takes exactly 2 * max_source_positions frames of 80 features.
    hf_model("hf_Whisper", "AutoModelForAudioClassification", "WhisperConfig", {}, 51865, 0,
             features=(80, 3000),
             cpu={"max_source_positions": 375, "features": (80, 750)},
             tiny={"d_model": 32, "encoder_layers": 1, "encoder_attention_heads": 2,
                   "encoder_ffn_dim": 64, "num_mel_bins": 8, "max_source_positions": 16,
                   "features": (8, 32)}),
)
