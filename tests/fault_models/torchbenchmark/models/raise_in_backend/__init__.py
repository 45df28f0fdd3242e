from torchbenchmark.faults import make_model, boom_when_compiled

Model = make_model("raise_in_backend", on_forward=boom_when_compiled)
