"""The gate's power and false alarms, by replaying the judge itself
(``benchmarks.judge.judge``) over nights: stored ones, or simulated ones.

    python -m benchmarks.tools.power stored --root docs/data/power-nights [--first 2000-01-15]
    python -m benchmarks.tools.power simulate [--rows 92] [--nights 400] [--seed 0]

``stored``: every night of ROOT from ``--first`` on, judged in date order
against the nights before it, each night's flags carried to the next, as
the nightly judges them: the false-alarm nights (nothing changed between
them), then for each shape of slowdown, put into the steady-speedup value of
every row of one night and of the night after it, the share of rows
flagged on that night (``night 1``) and by the second (``by night 2``);
a row the gate could not judge counts as a miss.  The shapes scale the
processes' log ratios, as the stored samples cannot be re-measured:
they are a study of the rule on the nights it was chosen on, not its proof
(docs/gate.md; studies/README.md for the evaluation on fresh nights).

``simulate``: nights of ``--rows`` rows drawn from variance components
measured on the stored nights (``components``: within a night between
processes, between nights, per row, and the correlation of a model's two
backends), judged as the nightly would: the false-alarm nights with their
exact 95% interval, with and without a night effect on part of the rows.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from tabulate import tabulate

from benchmarks import judge
from benchmarks.judge import evidence
from benchmarks.judge.evidence import History, NightRows, RowNight
from benchmarks.judge.verdict import MARK_FAIL, MARK_SUSPECTED, Policy, Verdict
from benchmarks.nightly.night import Night, night_folders
from benchmarks.usage import UsageError

FLAGGED = (MARK_SUSPECTED, MARK_FAIL)


# --------------------------------------------------------------------------
# Replaying the judge over a sequence of nights


def flags_of(verdict: Verdict) -> dict:
    return {(r.metric, evidence.key_of(r.key)): r.mark for r in verdict.rows if r.mark in FLAGGED}


def replay(nights: Sequence[NightRows], policy: Policy, judged_from: int = 0) -> list[Verdict]:
    """Each night from ``judged_from`` on judged against the nights before
    it, newest first, each carrying the flags its own verdict gave."""
    done: list[NightRows] = list(nights[:judged_from])
    verdicts = []
    for tonight in nights[judged_from:]:
        history = History(tuple(reversed(done[-2 * policy.window:])))
        verdict = judge.judge(tonight, history, policy)
        verdicts.append(verdict)
        done.append(replace(tonight, flagged=flags_of(verdict)))
    return verdicts


# A shape of slowdown: (tonight's kept process units, rng) -> the units slowed.
Shape = Callable[[tuple[float, ...], np.random.Generator], tuple[float, ...]]


def every(factor: float) -> Shape:
    return lambda units, rng: tuple(u + math.log(factor) for u in units)


def random_half(factor: float) -> Shape:
    def slow(units, rng):
        chosen = set(rng.choice(len(units), size=len(units) // 2, replace=False).tolist()) if units else set()
        return tuple(u + math.log(factor) * (i in chosen) for i, u in enumerate(units))
    return slow


def one_in_six(factor: float) -> Shape:
    def slow(units, rng):
        chosen = int(rng.integers(len(units))) if units else -1
        return tuple(u + math.log(factor) * (i == chosen) for i, u in enumerate(units))
    return slow


SHAPES: dict[str, Shape] = {
    "every process +3%": every(1.03),
    "every process +5%": every(1.05),
    "every process +10%": every(1.10),
    "half the processes +10%": random_half(1.10),
    "one process in six +30%": one_in_six(1.30),
}


def slowed(night: NightRows, shape: Shape, rng: np.random.Generator) -> NightRows:
    rows = dict(night.rows)
    rows["speedup"] = {k: replace(r, units=shape(r.units, rng)) for k, r in night.rows.get("speedup", {}).items()}
    return replace(night, rows=rows)


@dataclass(frozen=True)
class Caught:
    rows: int = 0
    night_1: int = 0
    by_night_2: int = 0


def _flagged(verdict: Verdict) -> set:
    return {(evidence.key_of(r.key)) for r in verdict.rows if r.metric == "speedup" and r.mark in FLAGGED}


def power(nights: Sequence[NightRows], policy: Policy, judged_from: int, shape: Shape, seed: int = 0) -> Caught:
    """Per judged night t: the slowdown put into nights t and t+1, the
    nights before t as they were; how many of night t's speedup rows were
    flagged on t, and on t or t+1."""
    rng = np.random.default_rng(seed)
    total = first = second = 0
    clean = replay(nights, policy, judged_from)
    carried = [replace(n, flagged=flags_of(v)) for n, v in zip(nights[judged_from:], clean)]
    done = list(nights[:judged_from]) + carried
    for t in range(judged_from, len(nights) - 1):
        window = done[:t]
        pair = [slowed(nights[t], shape, rng), slowed(nights[t + 1], shape, rng)]
        one, two = replay(window + pair, policy, judged_from=t)
        rows = list(nights[t].rows.get("speedup", {}))
        hit1, hit2 = _flagged(one), _flagged(two)
        total += len(rows)
        first += sum(k in hit1 for k in rows)
        second += sum(k in hit1 or k in hit2 for k in rows)
    return Caught(total, first, second)


def read_nights(root: Path, first: str, policy: Policy) -> list[NightRows]:
    found = []
    for folder in night_folders(root):
        if folder.name >= first:
            found.append(evidence.read_night(Night.read(folder), policy.loaded_cores, ("speedup",)))
    return found


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "-"


def exact_interval(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of k in n."""
    low = 0.0 if k == 0 else float(sps.beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k))
    return low, high


def stored_report(nights: Sequence[NightRows], policy: Policy) -> str:
    judged_from = policy.min_nights
    clean = replay(nights, policy, judged_from)
    flagged = sum(v.state in ("suspected", "fail") for v in clean)
    failed = sum(v.state == "fail" for v in clean)
    unjudged = sum(v.state == "unjudged" for v in clean)
    lo, hi = exact_interval(flagged, len(clean))
    lines = [f"nights judged: {len(clean)} ({nights[judged_from].date} .. {nights[-1].date}); "
             f"flagged (suspected or failed): {flagged} [{lo:.0%}, {hi:.0%}]; failed: {failed}; unjudged: {unjudged}"]
    table = []
    for name, shape in SHAPES.items():
        c = power(nights, replace(policy, metrics={"speedup": policy.metrics["speedup"]}), judged_from, shape)
        table.append([name, c.rows, _share(c.night_1, c.rows), _share(c.by_night_2, c.rows)])
    lines.append(tabulate(table, headers=["slowdown", "rows", "night 1", "by night 2"], tablefmt="github"))
    return "\n\n".join(lines) + "\n"


def verdicts_report(root: Path, nights: Sequence[NightRows], policy: Policy) -> str:
    """Each stored night: the verdict its own gate wrote then (``compare.json``
    as stored, shown, not parsed) beside today's judge replayed over the same
    nights (each against the ones before it)."""
    table = []
    for tonight, verdict in zip(nights, replay(nights, policy, 0)):
        then = Night.read(root / tonight.date).gate
        flagged = ", ".join(f"{r.name}/{r.backend} {r.mark}" for r in verdict.rows if r.mark in FLAGGED)
        table.append([tonight.date, then.get("exit_code", "-"), str(then.get("verdict", "-"))[:60],
                      verdict.state, flagged or "-"])
    counts = {state: sum(row[3] == state for row in table) for state in ("pass", "suspected", "fail", "unjudged")}
    old_failed = sum(row[1] == 1 for row in table)
    return (tabulate(table, headers=["night", "then: exit", "then: verdict", "judge", "judge flagged"],
                     tablefmt="github") +
            f"\n\nthen: {old_failed} of {len(table)} failed; judge: " +
            ", ".join(f"{k} {n}" for k, n in counts.items()) + "\n")


# --------------------------------------------------------------------------
# Variance components and the simulated nightly


@dataclass(frozen=True)
class Component:
    """One row's spread, in log ratio: between processes of a night, and
    between nights (beyond what its processes explain)."""

    name: str
    backend: str
    processes: float
    nights: float


def components(nights: Sequence[NightRows]) -> tuple[list[Component], float]:
    """Each speedup row's components (one-way ANOVA by method of moments),
    and the correlation of the two backends of one model's process units
    within a night (they share the baseline's samples)."""
    records = [(k.name, k.backend, n.date, i, u) for n in nights for k, r in n.rows.get("speedup", {}).items()
               for i, u in enumerate(r.units)]
    df = pd.DataFrame(records, columns=["name", "backend", "date", "process", "unit"])
    found = []
    for (name, backend), g in df.groupby(["name", "backend"]):
        per_night = g.groupby("date")["unit"]
        within = float(per_night.var(ddof=1).mean())
        size = float(per_night.size().mean())
        between = max(0.0, float(per_night.mean().var(ddof=1)) - within / size)
        found.append(Component(name, backend, math.sqrt(within), math.sqrt(between)))
    centred = df.assign(unit=df["unit"] - df.groupby(["name", "backend", "date"])["unit"].transform("mean"))
    wide = centred.pivot_table(index=["name", "date", "process"], columns="backend", values="unit")
    rho = float(wide.corr().iloc[0, 1]) if wide.shape[1] == 2 else 0.0
    return found, rho


def simulated_nights(parts: Sequence[Component], rho: float, rows: int, count: int, processes: int,
                     rng: np.random.Generator, effect_share: float = 0.0, effect_sd: float = 0.0
                     ) -> list[NightRows]:
    """``count`` nights of ``rows`` rows (pairs of backends of one model,
    each pair drawn from the measured components in turn); a share of rows
    gets an extra night effect of ``effect_sd``."""
    models = rows // 2
    cov = np.array([[1.0, rho], [rho, 1.0]])
    by_model = [parts[2 * (m % (len(parts) // 2)):2 * (m % (len(parts) // 2)) + 2] for m in range(models)]
    affected = rng.random(models * 2) < effect_share
    keys = [evidence.key_of({"name": f"model{m}", "backend": b, "dev": "cpu"}) for m in range(models)
            for b in ("a", "b")]
    out = []
    for day in range(count):
        speed = {}
        for m, pair in enumerate(by_model):
            night = rng.multivariate_normal([0, 0], cov) * [c.nights for c in pair]
            procs = rng.multivariate_normal([0, 0], cov, size=processes) * [c.processes for c in pair]
            for j in range(2):
                i = 2 * m + j
                extra = rng.normal(0, effect_sd) if affected[i] else 0.0
                units = tuple(float(x) for x in night[j] + extra + procs[:, j])
                speed[keys[i]] = RowNight(keys[i], "speedup", "pass", "cpu", units)
        out.append(NightRows(f"day{day:04d}", {"speedup": speed}))
    return out


def simulate_report(parts: Sequence[Component], rho: float, policy: Policy, rows: int, nights: int,
                    seed: int, processes: int = 6) -> str:
    table = [[c.name, c.backend, f"{c.processes:.2%}", f"{c.nights:.2%}"] for c in parts]
    lines = [f"variance components (log ratio SD) from the stored nights; correlation of a model's two "
             f"backends within a night: {rho:.2f}",
             tabulate(table, headers=["row", "backend", "between processes", "between nights"], tablefmt="github")]
    speed_only = replace(policy, metrics={"speedup": policy.metrics["speedup"]})
    results = []
    for label, share in (("measured components only", 0.0), ("a quarter of rows +1.35% night effect", 0.25),
                         ("half the rows +1.35% night effect", 0.5)):
        rng = np.random.default_rng(seed)
        season = simulated_nights(parts, rho, rows, nights + policy.window, processes, rng, share, 0.0135)
        verdicts = replay(season, speed_only, judged_from=policy.window)
        flagged = sum(v.state in ("suspected", "fail") for v in verdicts)
        failed = sum(v.state == "fail" for v in verdicts)
        lo, hi = exact_interval(flagged, len(verdicts))
        results.append([label, len(verdicts), f"{flagged} ({flagged / len(verdicts):.1%}) [{lo:.1%}, {hi:.1%}]",
                        f"{failed} ({failed / len(verdicts):.1%})"])
    lines.append(tabulate(results, headers=[f"{rows}-row nights", "nights", "flagged [95%]", "failed"],
                          tablefmt="github"))
    return "\n\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tools.power", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    for name in ("stored", "simulate", "verdicts"):
        s = sub.add_parser(name)
        s.add_argument("--root", type=Path, default=Path("docs/data/power-nights"))
        s.add_argument("--first", default="2000-01-15", help="the first night used (default: the one-CPU nights)")
        s.add_argument("--gate-config")
    sub.choices["simulate"].add_argument("--rows", type=int, default=92)
    sub.choices["simulate"].add_argument("--nights", type=int, default=400)
    sub.choices["simulate"].add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        policy = Policy.load(args.gate_config)
        if not args.root.is_dir():
            raise UsageError(f"--root {args.root}: no such folder of nights")
        nights = read_nights(args.root, args.first, policy)
        if len(nights) <= policy.min_nights:
            raise UsageError(f"{args.root}: {len(nights)} night(s) from {args.first}; more than "
                             f"{policy.min_nights} needed")
    except UsageError as err:
        print(f"power: {err}", file=sys.stderr)
        return 2
    if args.what == "stored":
        print(stored_report(nights, policy), end="")
    elif args.what == "verdicts":
        print(verdicts_report(args.root, nights, policy), end="")
    else:
        parts, rho = components(nights)
        print(simulate_report(parts, rho, policy, args.rows, args.nights, args.seed), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
