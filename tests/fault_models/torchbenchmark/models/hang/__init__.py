from torchbenchmark.faults import make_model, hang

Model = make_model("hang", on_forward=hang)
