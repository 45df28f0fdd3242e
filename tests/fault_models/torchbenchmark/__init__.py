"""Fake TorchBench package for the reliability tests (see ../README.md)."""
import fault_backends  # noqa: F401 - registers the deliberately wrong backend
