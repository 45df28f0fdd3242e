"""The built-in model registry: ``MODELS`` maps a model's TorchBench name to its ModelSpec.

Adding a model is one entry below, through its family's factory
(``benchmarks.models.<family>``); configs/models.yaml then needs its settings.
"""
from benchmarks.models.bert import bert_model
from benchmarks.models.timm_models import timm_model
from benchmarks.models.torchvision_models import torchvision_model
from benchmarks.suite import ModelSpec


def _by_name(*specs: ModelSpec) -> dict[str, ModelSpec]:
    registry = {spec.name: spec for spec in specs}
    if len(registry) != len(specs):
        raise ValueError("two models share a name in benchmarks.models")
    return registry


MODELS: dict[str, ModelSpec] = _by_name(
    torchvision_model("resnet18"),
    torchvision_model("resnet50"),
    torchvision_model("resnext50_32x4d"),
    torchvision_model("alexnet"),
    torchvision_model("mobilenet_v2"),
    torchvision_model("mnasnet1_0"),
    torchvision_model("squeezenet1_1"),
    torchvision_model("vgg16"),
    timm_model("timm_vision_transformer", "vit_small_patch16_224"),
    bert_model("BERT_pytorch"),
)
