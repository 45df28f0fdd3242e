"""The torchvision family: ``torchvision_model(name)`` declares a torchvision
classifier, built with random weights (``weights=None``) for 3x224x224 images."""
from functools import partial

from benchmarks.models.spec import ModelSpec, TensorSpec

IMAGE = TensorSpec((3, 224, 224))
TINY_IMAGE = TensorSpec((3, 64, 64))  # the smallest size every model here accepts


def _build(name: str):
    import torchvision  # here, not at the top: listing models stays fast

    # weights=None: random weights, so nothing is downloaded.
    return torchvision.models.get_model(name, weights=None)


def torchvision_model(name: str) -> ModelSpec:
    """A torchvision classification model under its torchvision (= TorchBench) name.

    Its variants differ only in the image size: the models have no knob for depth.
    """
    build = partial(_build, name)
    tiny = ModelSpec(name, "torchvision", build, inputs=(TINY_IMAGE,))
    return ModelSpec(name=name, family="torchvision", build=build, inputs=(IMAGE,), tiny=tiny)
