from torchbenchmark.faults import make_model


def _say_hello():
    print("print_break: a print in forward, on purpose")  # dynamo breaks the graph here


# Runs fine; its forward prints, so dynamo splits it into two graphs: the
# graph-break report must name this print and this line.
Model = make_model("print_break", on_forward=_say_hello)
