"""The gate's settings (``Policy``, from ``configs/gate.yaml``) and its
judgement of a night (``Verdict``): a value with a state, its reasons and
its exit code, which every renderer and consumer reads as fields.

States, worst first, and their exit codes:

* ``fail`` (1): a regression -- confirmed on a second night, past the
  metric's ``fail_at_once`` on the first, a new failure, or the expected files;
* ``suspected`` (4): a first-night flag, to be confirmed or cleared by the next night;
* ``unjudged`` (3): the night could judge nothing, or less than ``min_judged``
  of its rows (no history yet, every process loaded, another CPU);
* ``pass`` (0).

Exit code 2 stays bad input, 130/143 an interrupted gate.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

import yaml

from benchmarks.results import load
from benchmarks.usage import UsageError


from benchmarks.nightly.night import FAIL, PASS, STATE_EXIT, SUSPECTED, UNJUDGED  # noqa: E402  (the one spelling)
EXIT_CODES = STATE_EXIT
STATES = (FAIL, SUSPECTED, UNJUDGED, PASS)  # worst first

# A row's marks, and what each makes of the night.
MARK_FAIL, MARK_SUSPECTED, MARK_UNJUDGED = "fail", "suspected", "unjudged"
MARK_FASTER, MARK_PASS, MARK_MISSING, MARK_KNOWN, MARK_FLAKY = "faster", "pass", "missing", "known failure", "flaky"
JUDGED_MARKS = (MARK_FAIL, MARK_SUSPECTED, MARK_FASTER, MARK_PASS)


@dataclass(frozen=True)
class MetricPolicy:
    """One metric's thresholds: a row is flagged only when the test finds it
    slower and its estimated change is at least ``threshold``; a first-night
    flag at least ``fail_at_once`` fails the night at once."""

    threshold: float
    fail_at_once: float


@dataclass(frozen=True)
class Policy:
    """Every number the gate decides by (``configs/gate.yaml``)."""

    alpha: float = 0.05
    window: int = 20
    min_nights: int = 10
    max_age_days: int = 60
    loaded_cores: float = 0.1
    min_judged: float = 0.5
    metrics: Mapping[str, MetricPolicy] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Policy":
        """The policy in ``path`` (default ``configs/gate.yaml``); an unknown,
        missing or out-of-range key is bad input (``UsageError``)."""
        path = Path(path) if path else load.GATE_CONFIG
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            raise UsageError(f"{path}: cannot read the gate's policy: {str(err).splitlines()[0]}") from None
        return cls.from_mapping(document, str(path))

    @classmethod
    def from_mapping(cls, document: Any, where: str = "gate policy") -> "Policy":
        if not isinstance(document, dict):
            raise UsageError(f"{where}: expected a mapping of settings")
        names = {f.name for f in fields(cls)}
        _known(document, names, where)
        metrics = document.get("metrics")
        if not isinstance(metrics, dict) or not metrics:
            raise UsageError(f"{where}: 'metrics' must map each judged metric to its threshold and fail_at_once")
        from benchmarks.judge.evidence import METRICS
        _known(metrics, set(METRICS), f"{where}: metrics")
        parsed = {}
        for name, values in metrics.items():
            if not isinstance(values, dict):
                raise UsageError(f"{where}: metrics: {name}: expected threshold and fail_at_once")
            _known(values, {"threshold", "fail_at_once"}, f"{where}: metrics: {name}")
            parsed[name] = MetricPolicy(*(_number(values, k, f"{where}: metrics: {name}", 0.0, 10.0)
                                          for k in ("threshold", "fail_at_once")))
        policy = cls(alpha=_number(document, "alpha", where, 1e-6, 0.5),
                     window=int(_number(document, "window", where, 2, 1000, whole=True)),
                     min_nights=int(_number(document, "min_nights", where, 2, 1000, whole=True)),
                     max_age_days=int(_number(document, "max_age_days", where, 1, 10000, whole=True)),
                     loaded_cores=_number(document, "loaded_cores", where, 0.0, 1000.0),
                     min_judged=_number(document, "min_judged", where, 0.0, 1.0),
                     metrics=parsed)
        if policy.min_nights > policy.window:
            raise UsageError(f"{where}: min_nights ({policy.min_nights}) exceeds window ({policy.window})")
        return policy

    def to_json(self) -> dict:
        return asdict(self)


def _known(document: Mapping, names: set[str], where: str) -> None:
    unknown = sorted(set(document) - names)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(sorted(names))})")


def _number(document: Mapping, name: str, where: str, low: float, high: float, whole: bool = False) -> float:
    value = document.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high or (
            whole and value != int(value)):
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"{where}: '{name}' must be {kind} in [{low:g}, {high:g}], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RowVerdict:
    """One row's judgement for one metric: its mark, the rule that gave it
    and that rule's note, and the numbers behind it."""

    key: Mapping[str, Any]
    metric: str
    mark: str
    rule: str
    note: str
    change: float = float("nan")  # estimated relative change against the history (+: slower)
    p_value: float = float("nan")  # one-sided, slower
    p_adjusted: float = float("nan")  # Holm, over the night's tests
    nights: int = 0  # history nights the row was judged against
    units: tuple[float, ...] = ()  # tonight's kept processes (log ratios)
    left_out: tuple[str, ...] = ()  # processes and nights left out, with reasons

    @property
    def name(self) -> str:
        return str(self.key.get("name"))

    @property
    def backend(self) -> str:
        return str(self.key.get("backend"))

    def to_json(self) -> dict:
        return {**asdict(self), "key": dict(self.key)}


@dataclass(frozen=True)
class Verdict:
    """A night's judgement."""

    date: str
    state: str
    reasons: tuple[str, ...]
    rows: tuple[RowVerdict, ...] = ()
    passed_over: tuple[str, ...] = ()
    policy: Policy = field(default_factory=Policy)
    expected: Mapping[str, Any] = field(default_factory=dict)
    history: tuple[str, ...] = ()  # the dates of the earlier nights read, oldest first

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]

    @property
    def green(self) -> bool:
        return self.state == PASS

    def count(self, mark: str) -> int:
        return sum(row.mark == mark for row in self.rows)

    def to_json(self) -> dict:
        return {"date": self.date, "state": self.state, "exit_code": self.exit_code,
                "reasons": list(self.reasons), "rows": [r.to_json() for r in self.rows],
                "history": list(self.history), "passed_over": list(self.passed_over),
                "policy": self.policy.to_json(),
                "expected": dict(self.expected)}


def night_state(rows: tuple[RowVerdict, ...], expected_failed: bool, min_judged: float,
                partial: str = "", damage: str = "") -> tuple[str, tuple[str, ...]]:
    """The night's state and its reasons, from its rows' marks; a partial
    night (``partial``: why) or a damaged one (``damage``: its file, line and
    what is lost) is never a pass."""
    counts = {m: sum(r.mark == m for r in rows) for m in (MARK_FAIL, MARK_SUSPECTED, MARK_UNJUDGED)}
    judged = sum(r.mark in JUDGED_MARKS for r in rows)
    judgeable = judged + counts[MARK_UNJUDGED]
    reasons = []
    if counts[MARK_FAIL]:
        reasons.append(f"{counts[MARK_FAIL]} row(s) failed")
    if expected_failed:
        reasons.append("the expected files failed")
    if counts[MARK_SUSPECTED]:
        reasons.append(f"{counts[MARK_SUSPECTED]} row(s) suspected, to be confirmed by the next night")
    if judgeable and counts[MARK_UNJUDGED]:
        reasons.append(f"{counts[MARK_UNJUDGED]} of {judgeable} row(s) unjudged")
    if damage:
        reasons.append(f"the night's files are {damage}")
    if counts[MARK_FAIL] or expected_failed:
        return FAIL, tuple(reasons)
    if counts[MARK_SUSPECTED]:
        return SUSPECTED, tuple(reasons)
    if partial:
        missing = sum(r.mark == MARK_MISSING for r in rows)
        reasons.append(f"the night is partial ({partial}): {missing} row(s) missing")
    if not judged or judged < min_judged * judgeable or partial or damage:
        return UNJUDGED, tuple(reasons) or ("no row could be judged",)
    return PASS, tuple(reasons) or (f"{judged} row(s) judged, none slower",)
