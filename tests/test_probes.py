"""Tests of benchmarks.run.probes: how a graph break is described."""
from types import SimpleNamespace

from torch._dynamo.exc import format_graph_break_message

from benchmarks.run import probes


def _reason(gb_type, context, explanation="", hints=()):
    """A break as dynamo records it: its message in dynamo's own format."""
    return SimpleNamespace(reason=format_graph_break_message(gb_type, context, explanation, list(hints)),
                           user_stack=[])


def test_a_break_without_explanation_keeps_the_operator_it_names():
    reason = _reason("Operator does not support running with fake tensors",
                     "unsupported operator: aten.max_pool2d_with_indices.default",
                     hints=["see https://docs.google.com/document/d/x for how to fix"])
    text, frame = probes.describe_break(reason)
    assert text == ("Operator does not support running with fake tensors: "
                    "unsupported operator: aten.max_pool2d_with_indices.default")
    assert frame == ""


def test_a_break_keeps_type_explanation_and_context_on_one_line():
    reason = _reason("Failed to trace builtin operator", "builtin print [ConstantVariable] False",
                     "Dynamo does not know how to trace builtin operator `print`\nwith argument types ['str'].",
                     hints=["Avoid calling builtin `print`."])
    text, _ = probes.describe_break(reason)
    assert text == ("Failed to trace builtin operator: Dynamo does not know how to trace builtin operator "
                    "`print` with argument types ['str'].: builtin print [ConstantVariable] False")


def test_a_long_explanation_is_cut_before_the_context():
    reason = _reason("Unsupported", "unsupported operator: aten.foo.default", "word " * 200)
    text, _ = probes.describe_break(reason)
    assert len(text) <= probes._REASON_CHARS
    assert text.endswith("...: unsupported operator: aten.foo.default")


def test_a_message_of_one_line_stays_as_it_is():
    text, _ = probes.describe_break(SimpleNamespace(reason="call_function UserDefinedObjectVariable", user_stack=[]))
    assert text == "call_function UserDefinedObjectVariable"
