"""A model whose optional dependency is not installed: importing it fails."""
import a_dependency_nobody_installed  # noqa: F401

from torchbenchmark.faults import make_model

Model = make_model("missing_dep")
