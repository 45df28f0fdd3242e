from torchbenchmark.faults import make_model, raise_on_load

Model = make_model("raise_on_load", on_load=raise_on_load)
