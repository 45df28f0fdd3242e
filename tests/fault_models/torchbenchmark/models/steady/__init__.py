import time

from torchbenchmark.faults import make_model

STEP_SECONDS = 0.02


def _sleep():
    # A step of known, steady length: runs of it differ by noise only.
    time.sleep(STEP_SECONDS)


Model = make_model("steady", on_forward=_sleep)
