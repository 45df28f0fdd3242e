from torchbenchmark.faults import make_model, flood

Model = make_model("flood", on_forward=flood)
