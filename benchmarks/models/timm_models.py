"""The timm family: ``timm_model(name, timm_name)`` declares a timm image model,
built with random weights (``pretrained=False``) as TorchBench builds it (no
dropout), for the image size of the model's own configuration."""
from functools import partial

from benchmarks.models.spec import ModelSpec, TensorSpec


def _build(timm_name: str, **overrides):
    import timm  # here, not at the top: listing models stays fast

    # pretrained=False: random weights, so nothing is downloaded.
    return timm.create_model(timm_name, pretrained=False, drop_rate=0.0, **overrides)


def timm_model(name: str, timm_name: str, image: int = 224, *, cpu: dict | None = None,
               tiny: dict | None = None) -> ModelSpec:
    """A timm model, registered as ``name`` (TorchBench's name for it).

    ``cpu`` and ``tiny`` are ``timm.create_model`` overrides of those variants
    (``depth``, ``img_size``...); an ``img_size`` override also sets the input
    size. Without ``tiny``, the tiny variant is the model on 64x64 images.
    """

    def spec(overrides: dict | None, size: int) -> ModelSpec:
        overrides = dict(overrides or {})
        size = overrides.get("img_size", size)
        return ModelSpec(name, "timm", partial(_build, timm_name, **overrides),
                         inputs=(TensorSpec((3, size, size)),))

    full = spec(None, image)
    return ModelSpec(
        name=name, family="timm", build=full.build, inputs=full.inputs,
        cpu=spec(cpu, image) if cpu else None,
        tiny=spec(tiny, image) if tiny else spec(None, 64),
    )
