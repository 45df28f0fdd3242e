"""PyTorch's huggingface and timm_models suites: every listed model, PyTorch's
batch sizes per profile, models built offline with PyTorch's inputs, and a
row for every listed model (a reason where it cannot be built)."""
from pathlib import Path

import pytest
import torch

from benchmarks import cli
from benchmarks.models import pytorch_inputs, pytorch_suites
from benchmarks.results import store
from benchmarks.run import suite

PEER = Path(__file__).resolve().parents[2] / "shared" / "peer" / "pytorch-benchmarks-dynamo"
LISTS = ("huggingface_models_list.txt", "huggingface_models_list_cpu.txt", "timm_models_list.txt")


@pytest.mark.parametrize("name", LISTS)
def test_the_shipped_lists_are_pytorchs(name):
    if not PEER.exists():
        pytest.skip("no peer copy of PyTorch's lists")
    assert (pytorch_suites.CONFIG_DIR / name).read_text() == (PEER / name).read_text()


def _listed(file: str, separator: str) -> dict[str, int]:
    lines = (pytorch_suites.CONFIG_DIR / file).read_text().split("\n")
    return {n: int(b) for n, b in (line.split(separator) for line in lines if line.strip())}


def test_every_listed_model_is_in_its_suite():
    gpu, cpu = _listed(LISTS[0], ","), _listed(LISTS[1], ",")
    assert suite.list_models("huggingface") == sorted({*gpu, *cpu})
    assert len(suite.list_models("huggingface")) == 53
    assert suite.list_models("timm_models") == sorted(_listed(LISTS[2], " "))
    assert len(suite.list_models("timm_models")) == 23


def test_batch_sizes_are_pytorchs_per_profile():
    # GPU list less PyTorch's divisor (AlbertForMaskedLM: 8 / 2); the CPU list as it is.
    assert pytorch_suites.batch_size("huggingface", "AlbertForMaskedLM", "accelerator") == 4
    assert pytorch_suites.batch_size("huggingface", "BertForQuestionAnswering", "accelerator") == 128
    assert pytorch_suites.batch_size("huggingface", "BertForQuestionAnswering", "cpu") == 16
    # Not in the CPU list: the GPU list's size.
    assert pytorch_suites.batch_size("huggingface", "GPTJForCausalLM", "cpu") == 1
    assert pytorch_suites.batch_size("timm_models", "beit_base_patch16_224", "cpu") == 64  # 128 / 2
    assert pytorch_suites.batch_size("timm_models", "regnety_120", "accelerator") == 32
    for s in pytorch_suites.PYTORCH_SUITES:
        assert {pytorch_suites.batch_size(s, n, "small") for n in pytorch_suites.names(s)} == {1}


def test_the_lists_batch_size_reaches_the_row_and_the_listing(capsys):
    assert cli.main(["--suite", "huggingface", "--list-models", "--only", "BertForQuestionAnswering"]) == 0
    assert " 16 " in capsys.readouterr().out
    assert cli.main(["--suite", "timm_models", "--profile", "small", "--list-models", "-k", "^regnety"]) == 0
    assert "regnety_120" in capsys.readouterr().out


def test_profile_small_is_for_pytorchs_suites_only(capsys):
    assert cli.main(["--suite", "builtin", "--profile", "small", "--list-models"]) == 2
    assert "--profile small applies to --suite huggingface or timm_models" in capsys.readouterr().err


@pytest.mark.parametrize("name, why", [
    ("BigBird", "no model for this name"), ("CamemBert", "no model for this name"),
    ("Speech2Text2ForCausalLM", "has no class Speech2Text2ForCausalLM")])
def test_a_model_that_cannot_be_built_says_why(name, why):
    with pytest.raises(suite.ModelUnavailableError) as err:
        suite.load(name, 1, suite="huggingface", profile="small")
    assert err.value.status == "model_fail_to_load"
    assert why in err.value.reason


def test_huggingface_inputs_are_pytorchs():
    bench = suite.load("ElectraForQuestionAnswering", 2, suite="huggingface", profile="small")
    inputs = bench.example_inputs().kwargs
    assert set(inputs) == {"input_ids", "start_positions", "end_positions"}
    assert inputs["input_ids"].shape == (2, 128)  # 512 tokens, cut to 128 by the small profile
    assert inputs["start_positions"].shape == (2,)
    assert bench.module.config.num_hidden_layers == 2 and not bench.module.training
    again = bench.random_inputs(torch.Generator().manual_seed(1)).kwargs
    assert not torch.equal(again["input_ids"], inputs["input_ids"])
    assert pytorch_inputs.sequence_length("OPTForCausalLM") == 2048
    assert pytorch_inputs.sequence_length("SomethingElse") == 128


def test_roberta_bart_and_t5_inputs_follow_pytorchs_rules():
    class Config:
        vocab_size, eos_token_id, num_labels = 100, 2, 2

    gen = torch.Generator().manual_seed(0)
    roberta = pytorch_inputs.huggingface_inputs("RobertaForCausalLM", Config, 8, 2, gen).kwargs
    assert not roberta["input_ids"].any() and set(roberta) == {"input_ids", "labels"}
    bart = pytorch_inputs.huggingface_inputs("BartForConditionalGeneration", Config, 8, 2, gen).kwargs
    assert (bart["input_ids"][:, -1] == 2).all() and "decoder_input_ids" not in bart
    t5 = pytorch_inputs.huggingface_inputs("T5Small", Config, 8, 2, gen).kwargs
    assert t5["decoder_input_ids"] is t5["input_ids"] and t5["labels"].shape == (2, 8)


def test_timm_inputs_are_normalised_images_of_the_models_size():
    bench = suite.load("mobilenetv2_100", 1, suite="timm_models", profile="small")
    (images,) = bench.example_inputs().args
    assert images.shape == (1, 3, 224, 224)
    assert abs(float(images.mean())) < 1e-4 and abs(float(images.std()) - 1) < 1e-4


def test_a_small_override_changes_the_model_and_its_input_size():
    data = pytorch_suites.suite_data("timm_models")
    assert data.settings["small"]["overrides"]["vit_base_patch14_dinov2.lvd142m"] == {"img_size": 224}


def test_unknown_keys_in_the_suite_settings_are_refused(tmp_path):
    for file in LISTS:
        (tmp_path / file).write_text((pytorch_suites.CONFIG_DIR / file).read_text())
    (tmp_path / "timm_models.yaml").write_text("small: {batch_size: 1}\nskip: [x]\n")
    with pytest.raises(pytorch_suites.SuiteDataError, match="unknown key"):
        pytorch_suites.suite_data("timm_models", tmp_path)


def test_every_selected_model_gets_a_row(tmp_path):
    """A model that runs and one that cannot be built: two rows, one with its reason."""
    out = tmp_path / "acc.csv"
    assert cli.main(["--suite", "huggingface", "--profile", "small", "--accuracy", "--only",
                     "ElectraForQuestionAnswering,BigBird", "--backend", "torchxla_trace_once",
                     "--output", str(out), "--timeout", "600"]) == 0
    rows = store.read_rows(out).set_index("name")
    assert rows.loc["ElectraForQuestionAnswering", "accuracy"] == "pass"
    assert rows.loc["BigBird", "status"] == "model_fail_to_load"
    assert "no model for this name" in rows.loc["BigBird", "error"]
    assert set(rows["suite"]) == {"huggingface"} and set(rows["profile"]) == {"small"}
    # PyTorch's own checks read the real run's files against expected files written from it.
    expected = tmp_path / "expected"
    assert cli.main(["update-expected", str(out), "--pytorch", str(expected)]) == 0
    checks = Path(__file__).resolve().parents[2] / "shared" / "peer" / "pytorch-benchmarks-dynamo"
    if checks.exists():
        import subprocess
        import sys

        (actual,) = (out.with_suffix(".pytorch")).glob("*_accuracy.csv")
        (wanted,) = expected.glob("*.csv")
        for script in ("check_accuracy.py", "check_graph_breaks.py"):
            done = subprocess.run([sys.executable, str(checks / script), "--actual", str(actual),
                                   "--expected", str(wanted)], capture_output=True, text=True)
            assert done.returncode == 0, done.stdout


@pytest.mark.slow
def test_a_timm_model_runs_from_pytorchs_list(tmp_path):
    out = tmp_path / "acc.csv"
    assert cli.main(["--suite", "timm_models", "--profile", "small", "--accuracy", "--only",
                     "mobilenetv2_100", "--backend", "torchxla_trace_once", "--output", str(out),
                     "--timeout", "600"]) == 0
    (row,) = store.read_rows(out).to_dict("records")
    assert (row["name"], row["accuracy"], row["batch_size"], row["suite"]) == (
        "mobilenetv2_100", "pass", 1, "timm_models")
    assert row["calls_captured"] > 0 and row["graph_breaks"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("suite_name, models", [
    ("huggingface", "BertForMaskedLM,T5Small,GPT2ForSequenceClassification,DistillGPT2"),
    ("timm_models", "resnest14d,deit_tiny_patch16_224.fb_in1k,ghostnet_100,tf_efficientnet_b0")])
def test_a_few_models_of_each_suite_pass_with_ours_and_openxla_eval(tmp_path, suite_name, models):
    out = tmp_path / "acc.csv"
    assert cli.main(["--suite", suite_name, "--profile", "small", "--accuracy", "--only", models,
                     "--backend", "torchxla_trace_once,openxla_eval", "--output", str(out),
                     "--timeout", "900"]) == 0
    rows = store.read_rows(out)
    assert len(rows) == 8 and set(rows["accuracy"]) == {"pass"}, rows[["name", "backend", "error"]]
