"""``BenchmarkModel`` with the behaviour of pytorch/benchmark's base class that
a harness must cope with:

* it seeds 1337 and *replaces* ``torch.manual_seed`` for the whole process
  with a function that ignores its argument;
* ``test`` must be "train" or "eval";
* ``batch_size=None`` picks ``DEFAULT_TRAIN_BSIZE`` / ``DEFAULT_EVAL_BSIZE``;
  a model with ``ALLOW_CUSTOMIZE_BSIZE = False`` raises NotImplementedError
  for any other size.
"""
import torch

MAIN_RANDOM_SEED = 1337


def set_random_seed():
    def deterministic_torch_manual_seed(*args, **kwargs):
        from torch._C import default_generator

        return default_generator.manual_seed(MAIN_RANDOM_SEED)

    torch.manual_seed(MAIN_RANDOM_SEED)
    torch.manual_seed = deterministic_torch_manual_seed


class BenchmarkModel:
    DEFAULT_TRAIN_BSIZE = None
    DEFAULT_EVAL_BSIZE = None

    def __init__(self, test, device, batch_size=None, extra_args=[]):
        assert test in ("train", "eval"), f"Test must be 'train' or 'eval', but provided {test}."
        self.test = test
        self.device = device
        self.extra_args = extra_args
        set_random_seed()
        self._determine_batch_size(batch_size)

    def _determine_batch_size(self, batch_size):
        default = self.DEFAULT_TRAIN_BSIZE if self.test == "train" else self.DEFAULT_EVAL_BSIZE
        self.batch_size = batch_size or default
        if not self.batch_size:
            raise NotImplementedError("Model's default batch size is not implemented.")
        if not getattr(self, "ALLOW_CUSTOMIZE_BSIZE", True) and self.batch_size != default:
            raise NotImplementedError(
                f"Model doesn't support customizing batch size, but {self.test} test is "
                "providing a batch size other than the default")
