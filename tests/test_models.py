"""The built-in models: the registry and its suites, every model built at a tiny
size and run once eagerly (the full sizes are slow tests), keyword inputs,
seeding, and what the written-here models must compute."""
import pickle

import pytest
import torch
from torch.utils import _pytree as pytree

from benchmarks.run import suite
from benchmarks.models import MODELS, SEED_MODELS
from benchmarks.models.bert import BERTLM
from benchmarks.models.science import SeawaterDensity
from benchmarks.models.spec import Inputs
from benchmarks.run.settings import load_settings

ALL = sorted(MODELS)
# The TorchBench names the built-in suite promises, besides the seed's ten.
PROMISED = {
    "densenet121", "mobilenet_v3_large", "resnet152", "shufflenet_v2_x1_0",
    "timm_efficientnet", "timm_nfnet", "timm_regnet", "timm_resnest", "timm_vovnet",
    "timm_vision_transformer_large",
    "hf_Albert", "hf_Bart", "hf_Bert", "hf_Bert_large", "hf_BigBird", "hf_DistilBert", "hf_GPT2",
    "hf_GPT2_large", "hf_Longformer", "hf_Reformer", "hf_Roberta_base", "hf_T5", "hf_T5_base",
    "hf_Whisper",
    "dlrm", "nanogpt", "pytorch_unet", "dcgan", "LearningToPaint", "lennard_jones",
    "pyhpc_equation_of_state", "nvidia_deeprecommender", "tts_angular", "phlippe_resnet",
    "phlippe_densenet", "speech_transformer",
}


def test_suites():
    assert suite.list_models("seed") == sorted(SEED_MODELS) and len(SEED_MODELS) == 10
    builtin = suite.list_models("builtin")
    assert builtin == ALL and len(builtin) >= 40
    assert set(SEED_MODELS) | PROMISED <= set(builtin)
    assert {MODELS[n].family for n in builtin} == {
        "torchvision", "timm", "hf", "bert", "recsys", "gpt", "vision", "science", "speech"}


def test_names_resolve_case_insensitively():
    assert suite.resolve("bert_pytorch") == "BERT_pytorch"
    assert suite.resolve("HF_T5", "builtin") == "hf_T5"
    with pytest.raises(suite.UnknownModelError, match="did you mean: hf_T5"):
        suite.resolve("hf_T6")
    with pytest.raises(suite.UnknownModelError):
        suite.resolve("hf_T5", "seed")  # not one of the seed's ten


# --------------------------------------------------------------------------
# Every model, tiny: builds, runs once eagerly, gives finite outputs


def _finite(out) -> bool:
    floats = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return bool(floats) and all(torch.isfinite(t).all() for t in floats)


def _one_per_family() -> list:
    """Every model, the seed models and the first of each other family run by
    ``make test``, the rest marked slow (``make test-all``)."""
    quick = set(SEED_MODELS)
    for name in ALL:
        if MODELS[name].family not in {MODELS[q].family for q in quick}:
            quick.add(name)
    return [pytest.param(name, marks=() if name in quick else pytest.mark.slow) for name in ALL]


@pytest.mark.parametrize("name", _one_per_family())
def test_tiny_variant_builds_and_runs(name):
    bench = suite.load(name, 2, seed=0, profile="tiny")
    assert not bench.module.training and bench.batch_size == 2
    inputs = bench.example_inputs()
    assert isinstance(inputs, Inputs) and inputs.tensors()
    with torch.no_grad():
        out = inputs.call(bench.module)
    assert _finite(out), f"{name}: no finite floating-point output"
    # Tensors only (no kv-cache objects): outputs a harness can compare.
    assert all(isinstance(leaf, torch.Tensor) or leaf is None for leaf in pytree.tree_leaves(out))
    # Fresh inputs: same structure, shapes and dtypes; other values.
    fresh = bench.random_inputs(torch.Generator().manual_seed(1234))
    assert pytree.tree_structure(fresh) == pytree.tree_structure(inputs)
    assert [(t.shape, t.dtype) for t in fresh.tensors()] == [(t.shape, t.dtype) for t in inputs.tensors()]
    assert any(not torch.equal(a, b) for a, b in zip(fresh.tensors(), inputs.tensors()))


@pytest.mark.parametrize("name", ALL)
def test_integer_inputs_stay_in_range(name):
    spec = MODELS[name].variant("cpu")
    drawn = spec.make_inputs(64, torch.Generator().manual_seed(0))
    specs = [*spec.inputs, *spec.kwargs.values()]
    for tensor, tensor_spec in zip(drawn.tensors(), specs):
        if not tensor.dtype.is_floating_point:
            assert tensor_spec.low <= int(tensor.min()) and int(tensor.max()) < tensor_spec.high
        elif tensor_spec.high is not None:
            assert tensor_spec.low <= float(tensor.min()) and float(tensor.max()) < tensor_spec.high


def test_every_model_has_settings_for_both_profiles():
    settings = load_settings()
    for name in ALL:
        model = settings.for_model(name)
        assert settings.lists(name), name
        assert model.batch_size("cpu") <= model.batch_size("accelerator"), name


# --------------------------------------------------------------------------
# Keyword inputs, training inputs, variants


def test_hugging_face_models_take_keyword_inputs_as_torchbench_feeds_them():
    for name in ALL:
        spec = MODELS[name]
        if spec.family != "hf" or name == "hf_Whisper":
            continue
        expected = {"input_ids", "decoder_input_ids"} if name in ("hf_Bart", "hf_T5", "hf_T5_base") \
            else {"input_ids"}
        assert set(spec.kwargs) == expected and not spec.inputs, name
        # A training step feeds labels: the model computes its own loss.
        assert set(spec.train_kwargs) == {"input_ids", "labels"}, name
    # Whisper takes its features positionally, as TorchBench passes them.
    assert MODELS["hf_Whisper"].inputs[0].shape == (80, 3000) and not MODELS["hf_Whisper"].kwargs


def test_training_inputs_carry_labels_and_the_model_its_loss():
    bench = suite.load("hf_GPT2", 2, profile="tiny", training=True)
    inputs = bench.example_inputs()
    assert set(inputs.kwargs) == {"input_ids", "labels"}
    out = inputs.call(bench.module.train())
    assert out.loss.ndim == 0 and torch.isfinite(out.loss)
    # Inference inputs of the same model: no labels, no loss.
    inference = suite.load("hf_GPT2", 2, profile="tiny").example_inputs()
    assert set(inference.kwargs) == {"input_ids"}


def test_cpu_variants_are_smaller_and_the_seed_models_unchanged():
    assert MODELS["hf_GPT2_large"].variant("cpu").kwargs["input_ids"].shape == (128,)
    assert MODELS["hf_GPT2_large"].variant("accelerator").kwargs["input_ids"].shape == (1024,)
    assert MODELS["hf_Whisper"].variant("cpu").inputs[0].shape == (80, 750)
    for name in SEED_MODELS:  # the seed's experiment runs the models as they were
        assert MODELS[name].variant("cpu") is MODELS[name], name
    with pytest.raises(ValueError, match="unknown variant 'gpu'"):
        MODELS["resnet18"].variant("gpu")


def test_same_seed_same_weights_and_inputs():
    first, again = (suite.load("hf_Bert", 2, seed=7, profile="tiny") for _ in range(2))
    other = suite.load("hf_Bert", 2, seed=8, profile="tiny")
    for name, tensor in first.module.state_dict().items():
        assert torch.equal(tensor, again.module.state_dict()[name]), name
    ids = "input_ids"
    assert torch.equal(first.example_inputs().kwargs[ids], again.example_inputs().kwargs[ids])
    # --seed changes the weights and the inputs of a built-in model.
    assert not torch.equal(first.example_inputs().kwargs[ids], other.example_inputs().kwargs[ids])
    weights = "bert.embeddings.word_embeddings.weight"
    assert not torch.equal(first.module.state_dict()[weights], other.module.state_dict()[weights])


def test_unknown_model_suggests_close_names():
    with pytest.raises(suite.UnknownModelError) as error:
        suite.load("resnet19", 1)
    assert str(error.value) == "unknown model 'resnet19'; did you mean: resnet18, resnet152, resnet50?"
    assert isinstance(error.value, ValueError)
    # It survives a trip through pickle (errors may come back from worker processes).
    assert str(pickle.loads(pickle.dumps(error.value))) == str(error.value)
    with pytest.raises(suite.UnknownModelError, match="did you mean: BERT_pytorch"):
        suite.get_spec("bert_pytorch")


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown suite 'timm'"):
        suite.load("resnet18", 1, suite="timm")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        suite.load("resnet18", 0)
    with pytest.raises(ValueError, match="needs a batch size"):
        suite.load("resnet18", None)
    with pytest.raises(ValueError, match="needs low < high"):
        suite.TensorSpec((4,), torch.int64)
    with pytest.raises(ValueError, match="uniform TensorSpec needs low < high"):
        suite.TensorSpec((4,), low=1.0, high=1.0)


def test_tensor_specs_draw_in_range():
    integers = suite.TensorSpec([6], torch.int64, low=3, high=5).make(100, torch.Generator().manual_seed(0))
    assert integers.shape == (100, 6) and set(integers.unique().tolist()) == {3, 4}
    uniform = suite.TensorSpec((3,), low=-2.0, high=-1.0).make(50, torch.Generator().manual_seed(0))
    assert -2.0 <= float(uniform.min()) and float(uniform.max()) < -1.0
    shared = suite.TensorSpec((1, 4), batched=False).make(9)
    assert shared.shape == (1, 4)


def test_inputs_are_a_pytree_and_call_with_keywords():
    inputs = Inputs((torch.ones(2),), {"scale": torch.full((2,), 3.0)})
    doubled = pytree.tree_map_only(torch.Tensor, lambda t: t * 2, inputs)
    assert isinstance(doubled, Inputs) and list(doubled.kwargs) == ["scale"]
    assert doubled.call(lambda x, scale: x * scale).tolist() == [12.0, 12.0]
    assert Inputs.of({"a": 1}).kwargs == {"a": 1} and Inputs.of([1, 2]).args == (1, 2)
    assert Inputs.of(torch.ones(1)).args[0].shape == (1,)


# --------------------------------------------------------------------------
# What the written-here models compute


def test_seawater_density_matches_unesco_check_values():
    # UNESCO technical papers in marine science 44 (1983), check values of
    # the EOS-80 in-situ density: (salinity, deg C, dbar) -> kg/m^3.
    checks = [((0, 5, 0), 999.96675), ((35, 5, 0), 1027.67547), ((35, 25, 10000), 1062.53817),
              ((0, 25, 0), 997.04796), ((35, 25, 0), 1023.34306), ((0, 5, 10000), 1044.12802)]
    s, t, p = (torch.tensor([c[0][i] for c in checks], dtype=torch.float64) for i in range(3))
    expected = torch.tensor([c[1] for c in checks], dtype=torch.float64)
    torch.testing.assert_close(SeawaterDensity()(s, t, p), expected, atol=2e-5, rtol=0)


def test_dlrm_interactions_and_bags():
    bench = suite.load("dlrm", 3, profile="tiny")
    dense, sparse = bench.example_inputs().args
    model = bench.module
    assert sparse.shape == (3, len(model.embeddings), 4)
    # 4 features (bottom MLP + 3 tables) interact pairwise once: 6 dot products.
    assert model.pair_rows.numel() == 6 and bool((model.pair_rows > model.pair_cols).all())
    with torch.no_grad():
        out = model(dense, sparse)
    assert out.shape == (3, 1) and bool(((out > 0) & (out < 1)).all())


def test_speech_transformer_strips_padding_sequence_by_sequence():
    bench = suite.load("speech_transformer", 2, profile="tiny")
    features, lengths, targets = bench.example_inputs().args
    targets = targets.clone()
    targets[0, 3:] = -1  # the first utterance has 3 characters, the second 5
    with torch.no_grad():
        logits, gold = bench.module(features, lengths, targets)
    assert logits.shape == (2, 6, 50) and gold.shape == (2, 6)
    model = bench.module
    assert gold[0].tolist() == [*targets[0, :3].tolist(), model.eos, -1, -1]
    assert gold[1].tolist() == [*targets[1].tolist(), model.eos]


def test_speech_transformer_breaks_dynamos_graph():
    # The per-sequence stripping is data dependent: dynamo must split there,
    # which is what this model brings to the suite.
    bench = suite.load("speech_transformer", 2, profile="tiny")
    explanation = torch._dynamo.explain(bench.module)(*bench.example_inputs().args)
    assert explanation.graph_break_count >= 1


def test_bert_ignores_padding():
    # A small BERT: what the masked-out padding carries must not reach other tokens.
    torch.manual_seed(0)
    model = BERTLM(vocab_size=50, hidden=32, n_layers=2, heads=4, seq_len=16).eval()
    tokens = torch.randint(1, 50, (2, 16))
    tokens[:, 10:] = 0  # padding
    segments = torch.ones(2, 16, dtype=torch.int64)
    other_segments = segments.clone()
    other_segments[:, 10:] = 2
    with torch.no_grad():
        next_sentence, masked_lm = model(tokens, segments)
        next_sentence_2, masked_lm_2 = model(tokens, other_segments)
    torch.testing.assert_close(next_sentence, next_sentence_2)
    torch.testing.assert_close(masked_lm[:, :10], masked_lm_2[:, :10])


# --------------------------------------------------------------------------
# Full sizes (slow): the cpu variant at the cpu batch size, as a run builds it


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_cpu_variant_runs_at_its_batch_size(name):
    batch_size = load_settings().for_model(name).batch_size("cpu")
    bench = suite.load(name, batch_size, profile="cpu")
    with torch.no_grad():
        out = bench.example_inputs().call(bench.module)
    assert _finite(out)
    leading = {t.shape[0] for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.ndim}
    assert batch_size in leading or name == "pyhpc_equation_of_state", (name, leading)


@pytest.mark.slow
def test_seed_bert_outputs_log_probabilities():
    bench = suite.load("BERT_pytorch", 1)
    with torch.no_grad():
        next_sentence, masked_lm = bench.example_inputs().call(bench.module)
    assert next_sentence.shape == (1, 2) and masked_lm.shape == (1, 128, 20000)
    assert torch.allclose(next_sentence.exp().sum(-1), torch.ones(1))
    assert torch.allclose(masked_lm.exp().sum(-1), torch.ones(1, 128), atol=1e-4)


# Models whose forward reads a tensor's value (``.item()``), which the meta
# device can't give: their full size runs for real.
NEEDS_VALUES = {"hf_Bart", "hf_BigBird", "hf_GPT2", "hf_GPT2_large", "hf_Longformer",
                "hf_Reformer", "speech_transformer"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_accelerator_variant_has_consistent_shapes(name):
    # TorchBench's sizes, at batch 1: on the meta device (shapes only, no
    # memory, no arithmetic) where the model allows it.
    spec = MODELS[name].variant("accelerator")
    device = "cpu" if name in NEEDS_VALUES else "meta"
    torch.manual_seed(0)
    with torch.device(device):
        module = spec.build().eval()
        inputs = spec.make_inputs(1)
    with torch.no_grad():
        out = inputs.call(module)
    floats = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    assert floats and all(t.shape[0] == 1 for t in floats if t.ndim)
