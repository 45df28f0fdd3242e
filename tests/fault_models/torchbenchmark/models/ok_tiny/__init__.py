from torchbenchmark.faults import make_model

Model = make_model("ok_tiny")  # a second passing model, for shard and merge tests
