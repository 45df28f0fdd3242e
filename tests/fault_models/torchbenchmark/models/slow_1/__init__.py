from torchbenchmark.faults import make_model, slow

Model = make_model("slow_1", on_forward=slow)
