"""The built-in models: each builds, runs eagerly on the host, and has sound inputs."""
import pickle

import pytest
import torch

from benchmarks import suite
from benchmarks.models.bert import BERTLM

SEED_MODELS = [
    "BERT_pytorch",
    "alexnet",
    "mnasnet1_0",
    "mobilenet_v2",
    "resnet18",
    "resnet50",
    "resnext50_32x4d",
    "squeezenet1_1",
    "timm_vision_transformer",
    "vgg16",
]


def test_registry_lists_the_seed_models():
    assert suite.list_models() == SEED_MODELS
    assert {suite.get_spec(name).family for name in SEED_MODELS} == {"torchvision", "timm", "bert"}


@pytest.fixture(scope="module", params=SEED_MODELS)
def benchmark(request):
    # Module scope: each model is built once for all the tests that use it.
    return suite.load(request.param, batch_size=1)


def test_eager_forward_shapes(benchmark):
    assert not benchmark.module.training
    with torch.no_grad():
        output = benchmark.module(*benchmark.example_inputs())
    if benchmark.name == "BERT_pytorch":
        next_sentence, masked_lm = output
        assert next_sentence.shape == (1, 2)
        assert masked_lm.shape == (1, 128, 20000)
        # Both heads give log-probabilities.
        assert torch.allclose(next_sentence.exp().sum(-1), torch.ones(1))
        assert torch.allclose(masked_lm.exp().sum(-1), torch.ones(1, 128), atol=1e-4)
    else:
        assert output.shape == (1, 1000)
        assert torch.isfinite(output).all()


def test_random_inputs_are_fresh_and_valid(benchmark):
    examples = benchmark.example_inputs()
    fresh = benchmark.random_inputs(torch.Generator().manual_seed(1234))
    specs = suite.get_spec(benchmark.name).inputs
    assert len(fresh) == len(examples) == len(specs)
    for new, old, spec in zip(fresh, examples, specs):
        assert new.shape == old.shape == (1, *spec.shape)
        assert new.dtype == old.dtype == spec.dtype
        assert not torch.equal(new, old)
        if not spec.dtype.is_floating_point:
            assert spec.low <= int(new.min()) and int(new.max()) < spec.high


def test_same_seed_same_weights_and_inputs():
    first, again = suite.load("squeezenet1_1", 2, seed=7), suite.load("squeezenet1_1", 2, seed=7)
    other = suite.load("squeezenet1_1", 2, seed=8)
    for name, tensor in first.module.state_dict().items():
        assert torch.equal(tensor, again.module.state_dict()[name]), name
    assert not torch.equal(first.module.features[0].weight, other.module.features[0].weight)
    assert torch.equal(first.example_inputs()[0], again.example_inputs()[0])
    assert not torch.equal(first.example_inputs()[0], other.example_inputs()[0])
    assert first.example_inputs()[0].shape == (2, 3, 224, 224)


def test_unknown_model_suggests_close_names():
    with pytest.raises(suite.UnknownModelError) as error:
        suite.load("resnet19", 1)
    assert str(error.value) == "unknown model 'resnet19'; did you mean: resnet18, resnet50?"
    assert isinstance(error.value, ValueError)
    # It survives a trip through pickle (errors may come back from worker processes).
    assert str(pickle.loads(pickle.dumps(error.value))) == str(error.value)


def test_unknown_model_matches_case_and_lists_models_when_nothing_is_close():
    with pytest.raises(suite.UnknownModelError, match="did you mean: BERT_pytorch"):
        suite.get_spec("bert_pytorch")
    with pytest.raises(suite.UnknownModelError, match="known models: BERT_pytorch, alexnet"):
        suite.get_spec("zzz")


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown suite 'timm'"):
        suite.load("resnet18", 1, suite="timm")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        suite.load("resnet18", 0)
    with pytest.raises(ValueError, match="needs low < high"):
        suite.TensorSpec((4,), torch.int64)


def test_tensor_spec_draws_integers_in_range():
    spec = suite.TensorSpec([6], torch.int64, low=3, high=5)
    values = spec.make(100, torch.Generator().manual_seed(0))
    assert spec.shape == (6,) and values.shape == (100, 6)
    assert set(values.unique().tolist()) == {3, 4}


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
