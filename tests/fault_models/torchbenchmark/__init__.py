"""Fake TorchBench package for the tests (see ../README.md).

It mirrors the interface of pytorch/benchmark's ``torchbenchmark``: model
folders under ``models/`` found by ``_list_model_paths()`` without importing
them, and ``load_model_by_name(name)``, which matches names case-insensitively
and imports the model's package (so a missing dependency fails there).
"""
import importlib
import os
import pathlib

import fault_backends  # noqa: F401 - registers the deliberately wrong backend

MODELS_DIR = pathlib.Path(__file__).parent / "models"
DATA_PATH = os.path.join(pathlib.Path(__file__).parent, "data", ".data")


class ModelNotFoundError(RuntimeError):
    pass


def _list_model_paths():
    """Absolute paths of the model folders: those with an __init__.py."""
    return sorted(str(child.absolute()) for child in MODELS_DIR.iterdir()
                  if child.is_dir() and (child / "__init__.py").exists())


def load_model_by_name(model_name):
    names = [os.path.basename(p) for p in _list_model_paths()]
    matches = [n for n in names if n.lower() == model_name.lower()]
    if not matches:
        raise ModelNotFoundError(f"{model_name} is not found in the core model list.")
    module = importlib.import_module(f".models.{matches[0]}", package=__name__)
    model = getattr(module, "Model", None)
    if model is None:
        return None
    if not hasattr(model, "name"):
        model.name = matches[0]
    return model
