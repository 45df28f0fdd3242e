"""The verdict as text: the gate's console lines and its markdown report
(``compare.md``, the step summary, the issue).  Renderers read the
``Verdict``'s fields; nothing here is parsed again."""
from __future__ import annotations

from tabulate import tabulate

from benchmarks.judge import verdict as v

# Marks shown first: what needs a person.
ORDER = (v.MARK_FAIL, v.MARK_SUSPECTED, v.MARK_UNJUDGED, v.MARK_MISSING, v.MARK_FLAKY, v.MARK_KNOWN,
         v.MARK_FASTER, v.MARK_PASS)


def headline(verdict: v.Verdict) -> str:
    """``night 2026-12-07: SUSPECTED (1 row(s) suspected, ...)``."""
    return f"night {verdict.date}: {verdict.state.upper()} ({'; '.join(verdict.reasons)})"


def _rows(verdict: v.Verdict) -> list[list]:
    ordered = sorted(verdict.rows, key=lambda r: (ORDER.index(r.mark), r.metric, r.name, r.backend))
    return [[r.name, r.backend, r.metric, r.mark, r.rule, r.note] for r in ordered]


def _limits(verdict: v.Verdict) -> str:
    p = verdict.policy
    per_metric = ", ".join(f"{name} {m.threshold:.0%} (at once {m.fail_at_once:.0%})"
                           for name, m in p.metrics.items())
    return (f"alpha {p.alpha:g} over the night (Holm), window {p.window} nights (at least {p.min_nights}), "
            f"thresholds: {per_metric}")


def console(verdict: v.Verdict) -> str:
    """The gate's standard output: the headline, the rows that need a
    person, and the policy it applied."""
    lines = [headline(verdict)]
    shown = [r for r in _rows(verdict) if r[3] not in (v.MARK_PASS, v.MARK_FASTER)]
    if shown:
        lines.append(tabulate(shown, headers=["name", "backend", "metric", "mark", "rule", "why"]))
    lines.append(f"policy: {_limits(verdict)}")
    return "\n".join(lines) + "\n"


def markdown(verdict: v.Verdict) -> str:
    """``compare.md``."""
    parts = [f"# Night {verdict.date}: {verdict.state.upper()}", "",
             "; ".join(verdict.reasons) + ".", "",
             f"Policy: {_limits(verdict)} (docs/gate.md).", ""]
    if verdict.rows:
        parts += [tabulate(_rows(verdict), headers=["name", "backend", "metric", "mark", "rule", "why"],
                           tablefmt="github"), ""]
    if verdict.history:
        dates = verdict.history
        parts += [f"Judged against {len(dates)} earlier night(s): "
                  f"{dates[0] if len(dates) == 1 else f'{dates[0]} .. {dates[-1]}'}.", ""]
    else:
        parts += ["No earlier night to judge against.", ""]
    if verdict.passed_over:
        parts += ["Earlier nights passed over: " + "; ".join(verdict.passed_over) + ".", ""]
    return "\n".join(parts)
