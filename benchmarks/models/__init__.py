"""The built-in model registry: ``MODELS`` maps a model's TorchBench name to its
ModelSpec; ``SEED_MODELS`` names the ten of the first experiment (suite "seed").

Adding a model is one entry below, through its family's factory
(``benchmarks.models.<family>``); configs/models.yaml then needs its settings.
Families import their libraries (torchvision, timm, transformers) only when a
model is built, so listing the models stays fast.
"""
from benchmarks.models import gpt, hf, recsys, science, speech, vision
from benchmarks.models.bert import bert_model
from benchmarks.models.spec import ModelSpec
from benchmarks.models.timm_models import timm_model
from benchmarks.models.torchvision_models import torchvision_model

SEED_MODELS = (
    "BERT_pytorch", "alexnet", "mnasnet1_0", "mobilenet_v2", "resnet18", "resnet50",
    "resnext50_32x4d", "squeezenet1_1", "timm_vision_transformer", "vgg16",
)


def _by_name(*specs: ModelSpec) -> dict[str, ModelSpec]:
    registry = {spec.name: spec for spec in specs}
    if len(registry) != len(specs):
        raise ValueError("two models share a name in benchmarks.models")
    missing = set(SEED_MODELS) - set(registry)
    if missing:
        raise ValueError(f"seed models missing from benchmarks.models: {sorted(missing)}")
    return registry


MODELS: dict[str, ModelSpec] = _by_name(
    # torchvision
    torchvision_model("alexnet"),
    torchvision_model("densenet121"),
    torchvision_model("mnasnet1_0"),
    torchvision_model("mobilenet_v2"),
    torchvision_model("mobilenet_v3_large"),
    torchvision_model("resnet18"),
    torchvision_model("resnet50"),
    torchvision_model("resnet152"),
    torchvision_model("resnext50_32x4d"),
    torchvision_model("shufflenet_v2_x1_0"),
    torchvision_model("squeezenet1_1"),
    torchvision_model("vgg16"),
    # timm, as TorchBench names and sizes them
    timm_model("timm_vision_transformer", "vit_small_patch16_224",
               tiny={"depth": 1, "img_size": 64}),
    timm_model("timm_efficientnet", "efficientnet_b0"),
    timm_model("timm_nfnet", "dm_nfnet_f0", image=192),
    timm_model("timm_regnet", "regnety_120"),
    timm_model("timm_resnest", "resnest14d"),
    timm_model("timm_vovnet", "vovnet39a"),
    timm_model("timm_vision_transformer_large", "vit_giant_patch14_224",
               cpu={"depth": 2, "img_size": 112},
               tiny={"depth": 1, "embed_dim": 32, "num_heads": 2, "img_size": 28}),
    # Hugging Face transformers, from their config classes
    *hf.MODELS,
    # written here
    bert_model("BERT_pytorch"),
    recsys.dlrm_model(),
    recsys.deeprecommender_model(),
    gpt.nanogpt_model(),
    vision.unet_model(),
    vision.dcgan_model(),
    vision.learning_to_paint_model(),
    *vision.phlippe_models(),
    science.lennard_jones_model(),
    science.equation_of_state_model(),
    speech.tts_angular_model(),
    speech.speech_transformer_model(),
)
