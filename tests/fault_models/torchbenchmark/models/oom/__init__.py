from torchbenchmark.faults import make_model, out_of_memory

Model = make_model("oom", on_forward=out_of_memory)
