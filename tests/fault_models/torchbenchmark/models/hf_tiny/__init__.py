"""A Hugging Face style model: keyword inputs (a dict), a dict output, and in
training ``labels`` among the inputs, a loss in the output, another batch size."""
import torch
import torch.nn.functional as F
from torch import nn

from torchbenchmark.util.model import BenchmarkModel

VOCAB, LENGTH = 16, 6


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 8)
        self.head = nn.Linear(8, VOCAB)

    def forward(self, input_ids, attention_mask=None, labels=None):
        hidden = self.embed(input_ids)
        if attention_mask is not None:
            hidden = hidden * attention_mask[..., None]
        logits = self.head(hidden)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return out


class Model(BenchmarkModel):
    DEFAULT_TRAIN_BSIZE = 4
    DEFAULT_EVAL_BSIZE = 1

    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test=test, device=device, batch_size=batch_size, extra_args=extra_args)
        self.model = TinyLM().to(device)
        ids = torch.randint(0, VOCAB, (self.batch_size, LENGTH))
        self.example_inputs = {"input_ids": ids,
                               "attention_mask": torch.ones(self.batch_size, LENGTH)}
        if test == "train":
            self.example_inputs["labels"] = torch.randint(0, VOCAB, (self.batch_size, LENGTH))
            self.model.train()
        else:
            self.model.eval()

    def get_module(self):
        return self.model, self.example_inputs
