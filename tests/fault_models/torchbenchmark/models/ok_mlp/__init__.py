from torchbenchmark.faults import make_model

Model = make_model("ok_mlp")
