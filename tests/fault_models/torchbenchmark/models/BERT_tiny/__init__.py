"""A mixed-case name (found as "bert_tiny" too), whose inputs come as a list."""
import torch

from torchbenchmark.faults import IN_FEATURES, make_model

_Base = make_model("BERT_tiny")


class Model(_Base):
    def get_module(self):
        return self.model, [torch.randn(self.batch_size, IN_FEATURES)]
