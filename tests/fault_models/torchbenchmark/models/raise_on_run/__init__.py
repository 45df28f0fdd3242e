from torchbenchmark.faults import make_model, boom

Model = make_model("raise_on_run", on_forward=boom)
