"""The timm family: ``timm_model(name, timm_name)`` declares a timm image model,
built with random weights (``pretrained=False``) for 3x224x224 images."""
from functools import partial

import timm

from benchmarks.suite import ModelSpec, TensorSpec

IMAGE = TensorSpec((3, 224, 224))


def timm_model(name: str, timm_name: str) -> ModelSpec:
    """A timm model, registered as ``name`` (TorchBench's name for it)."""
    return ModelSpec(
        name=name,
        family="timm",
        # pretrained=False: random weights, so nothing is downloaded.
        build=partial(timm.create_model, timm_name, pretrained=False),
        inputs=(IMAGE,),
    )
