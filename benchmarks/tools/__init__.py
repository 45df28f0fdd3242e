"""Standalone measuring tools, each a ``python -m benchmarks.tools.NAME``
command: ``overhead`` (the bridge's per-call overhead and first calls),
``step_split`` (where a training step's time goes) and ``aa_nights`` (the
gate's false-alarm rate on repeated identical nights).
"""
