"""A model whose downloaded data is absent: building it fails to open a file."""
import os

from torchbenchmark import DATA_PATH
from torchbenchmark.faults import make_model

_Base = make_model("missing_data")


class Model(_Base):
    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test, device, batch_size, extra_args)
        with open(os.path.join(DATA_PATH, "missing_data_inputs", "data.json")) as f:
            f.read()
