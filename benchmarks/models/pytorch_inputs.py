"""The inputs PyTorch's harness feeds the models of its huggingface and
timm_models suites, made as its ``huggingface.py`` (``get_sequence_length``,
``generate_inputs_for_model`` with the loss arguments, as its ``load_model``
asks for them in inference too) and ``timm_models.py`` (``load_model``) make
them, each from a ``torch.Generator`` so that fresh draws are reproducible.

The rules are ordered tables: the first entry whose test matches the name decides.
"""
from __future__ import annotations

import torch

from benchmarks.models.spec import Inputs

# get_sequence_length: (does the name match, tokens), first match wins.
_SEQUENCE_LENGTHS = (
    (lambda n: n.startswith("Blenderbot"), 128),
    (lambda n: n.startswith(("GPT2", "Bart", "T5", "PLBart", "MBart")), 1024),
    (lambda n: n in ("AllenaiLongformerBase", "BigBird"), 1024),
    (lambda n: n.startswith("OPT"), 2048),
    (lambda n: "Reformer" in n, 4096),
    (lambda n: n.startswith(("Albert", "Deberta", "Layout", "Electra", "XLNet", "MegatronBert",
                             "Bert", "Roberta")) or n in ("DistillGPT2", "GoogleFnet",
                                                          "YituTechConvBert"), 512),
    (lambda n: n == "TrOCRForCausalLM", 256),
    (lambda n: n.startswith("MobileBert"), 128),
)
DEFAULT_SEQUENCE_LENGTH = 128  # PyTorch's choice for a name its table lacks

# The models that get the input ids again as decoder_input_ids.
_DECODER_INPUTS = (lambda n: n.startswith(("T5", "M2M100", "MT5"))
                   or n == "BlenderbotForConditionalGeneration")

# The loss arguments by the name's ending: (ending, {argument: shape kind}).
# "tokens": ids below the vocabulary, one per token; "positions": (bs,) below
# seq_len; "labels"/"label": below num_labels - 1, per token / per sample;
# "tokens-1": ids below vocab_size - 1.
_LOSS_ARGUMENTS = (
    ("QuestionAnswering", {"start_positions": "positions", "end_positions": "positions"}),
    (("MaskedLM", "HeadModel", "CausalLM", "DoubleHeadsModel"), {"labels": "tokens"}),
    ("TokenClassification", {"labels": "labels"}),
    ("SequenceClassification", {"labels": "label"}),
    ("ForConditionalGeneration", {"labels": "tokens-1"}),
)
# PyTorch's EXTRA_MODELS take token labels.
EXTRA_MODELS = ("AllenaiLongformerBase", "Reformer", "T5Small", "DistillGPT2", "GoogleFnet",
                "YituTechConvBert")

_PAD_TOKEN = ("GPT2ForSequenceClassification", "GPTNeoForSequenceClassification",
              "GPTJForSequenceClassification")


def needs_pad_token(name: str) -> bool:
    """Whether PyTorch's harness sets ``pad_token_id = 0`` in the config."""
    return name in _PAD_TOKEN or name.startswith(("Roberta", "Marian"))


def sequence_length(name: str) -> int:
    return next((length for test, length in _SEQUENCE_LENGTHS if test(name)), DEFAULT_SEQUENCE_LENGTH)


def _ints(generator, low: int, high: int, shape) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=generator, dtype=torch.int64)


def huggingface_inputs(name: str, config, seq_len: int, batch_size: int, generator) -> Inputs:
    """generate_inputs_for_model(..., include_loss_args=True), keyword inputs."""
    vocab = config.vocab_size
    if name.startswith("Roberta"):
        ids = _ints(generator, 0, 1, (batch_size, seq_len))  # PyTorch draws them below 1: all zeros
    else:
        ids = _ints(generator, 0, vocab, (batch_size, seq_len))
    if "Bart" in name:
        ids[:, -1] = config.eos_token_id
    inputs = {"input_ids": ids}
    if _DECODER_INPUTS(name):
        inputs["decoder_input_ids"] = ids
    shapes = {
        "tokens": lambda: _ints(generator, 0, vocab, (batch_size, seq_len)),
        "tokens-1": lambda: _ints(generator, 0, vocab - 1, (batch_size, seq_len)),
        "positions": lambda: _ints(generator, 0, seq_len, (batch_size,)),
        "labels": lambda: _ints(generator, 0, config.num_labels - 1, (batch_size, seq_len)),
        "label": lambda: _ints(generator, 0, config.num_labels - 1, (batch_size,)),
    }
    arguments = next((args for ending, args in _LOSS_ARGUMENTS if name.endswith(ending)), None)
    if arguments is None and name in EXTRA_MODELS:
        arguments = {"labels": "tokens"}
    if arguments is None:
        raise NotImplementedError(f"PyTorch's harness has no loss arguments for {name}")
    for argument, kind in arguments.items():
        inputs[argument] = shapes[kind]()
    return Inputs((), inputs)


def timm_inputs(input_size: tuple[int, ...], batch_size: int, generator) -> Inputs:
    """An image batch as timm_models.py makes it: integers below 256 as
    floats, normalised by the batch's own mean and standard deviation."""
    images = torch.randint(256, (batch_size, *input_size), generator=generator).to(torch.float32)
    return Inputs(((images - images.mean()) / images.std(),))
