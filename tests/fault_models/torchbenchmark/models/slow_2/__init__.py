from torchbenchmark.faults import make_model, slow

Model = make_model("slow_2", on_forward=slow)
