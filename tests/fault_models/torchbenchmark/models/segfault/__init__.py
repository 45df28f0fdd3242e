from torchbenchmark.faults import make_model, segfault

Model = make_model("segfault", on_forward=segfault)
