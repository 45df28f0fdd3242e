"""A model that refuses any batch size but its own (ALLOW_CUSTOMIZE_BSIZE = False)."""
from torchbenchmark.faults import make_model

Model = make_model("fixed_bsize")
Model.ALLOW_CUSTOMIZE_BSIZE = False
Model.DEFAULT_EVAL_BSIZE = 3
Model.DEFAULT_TRAIN_BSIZE = 5
