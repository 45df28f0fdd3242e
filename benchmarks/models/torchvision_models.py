"""The torchvision family: ``torchvision_model(name)`` declares a torchvision
classifier, built with random weights (``weights=None``) for 3x224x224 images."""
from functools import partial

import torchvision

from benchmarks.suite import ModelSpec, TensorSpec

IMAGE = TensorSpec((3, 224, 224))


def torchvision_model(name: str) -> ModelSpec:
    """A torchvision classification model under its torchvision (= TorchBench) name."""
    return ModelSpec(
        name=name,
        family="torchvision",
        # weights=None: random weights, so nothing is downloaded.
        build=partial(torchvision.models.get_model, name, weights=None),
        inputs=(IMAGE,),
    )
