"""The nightly history as a static site: ``results/nightly/<date>/`` -> ``SITE/index.html``.

``python runner.py dashboard ROOT -o SITE`` (``make dashboard``) reads every
night under ROOT (folders named ``YYYY-MM-DD`` holding a ``performance.csv``,
as ``benchmarks.nightly`` writes them) and writes a site that works offline,
from disk or as a CI artifact: ``SITE/index.html`` with its assets and data
beside it.  The page shows, for a suite, mode and dtype chosen in filters
(and a time range):

* the latest night's summary per line (backend): pass rate, geomean
  speedup, mean first call and memory compression, with the change from the
  baseline night;
* over the nights, per line: the geomean speedup over a fixed set of models
  (those that passed on every night of the range; their count shown) with
  its 95% band, the pass rate, mean first call, memory compression and the
  headroom captured; nights whose gate failed are marked;
* per model (``index.html#model=NAME``): speedup, latency, first call and
  headroom, with gaps on failed nights, batch-size changes marked on the
  line, and the failures with their status and error;
* each failed gate's failing rows, two nights side by side with compare's
  verdicts, and a table of the nights with their commits, CI runs, reports
  and comparisons.

The modules: ``history`` reads the nights, ``aggregate`` computes what is
shown, ``pairs`` judges two nights with ``benchmarks.results.compare``, ``site``
writes the files; ``assets/`` holds the page's template, script and style.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from benchmarks.usage import Parser, UsageError, guarded

from benchmarks.results.dashboard import aggregate, history, pairs, site
from benchmarks.results.dashboard.aggregate import Z95, geomean_band
from benchmarks.nightly.night import Night
from benchmarks.results.dashboard.history import combine, find_nights, load_history
from benchmarks.results.dashboard.site import page_data

__all__ = ["Night", "Z95", "build", "combine", "find_nights", "geomean_band", "load_history", "main",
           "page_data", "write_site"]

PROG = history.PROG
TITLE = "Nightly benchmark history"
COMPARE_NIGHTS = 7  # every two of the last week's nights can be put side by side


def default_repo_url() -> str | None:
    """Where commits link to: GitHub Actions names the repository of the
    run that builds the page."""
    server, repository = os.environ.get("GITHUB_SERVER_URL"), os.environ.get("GITHUB_REPOSITORY")
    return f"{server.rstrip('/')}/{repository}" if server and repository else None


def write_site(target: Path, nights: Sequence[Night], rows: pd.DataFrame, title: str = TITLE,
               repo_url: str | None = None, compare_nights: int = COMPARE_NIGHTS,
               baseline: str | None = None) -> Path:
    """Write the site into ``target`` from ``rows`` (:func:`combine`'s frame
    over ``nights``); returns the page's path.  Every two of the last
    ``compare_nights`` nights (and each failed gate's two) are compared;
    the latest night's change is from ``baseline`` (a date; default: the
    night before it).  Commits link to ``repo_url``, else to the repository
    the newest night's CI run names."""
    dates = [n.date for n in nights]
    if baseline is not None and baseline not in dates:
        raise UsageError(f"--baseline {baseline}: no such night")
    compared = pairs.comparisons(nights, pairs.pairs_to_compare(nights, compare_nights))
    repo_url = repo_url or next((n.repository_url for n in reversed(nights) if n.repository_url), None)
    data = page_data(nights, rows, repo_url, dates.index(baseline) if baseline else None, list(compared))
    try:
        target.mkdir(parents=True, exist_ok=True)
        links = site.copy_linked(nights, target)
        site.write(target, site.site_files(data, nights, rows, links, title, compared))
    except OSError as err:
        raise UsageError(f"cannot write the site: {err.filename or target}: {err.strerror or err}") from None
    return target / "index.html"


def build(root: str | Path, target: str | Path, title: str = TITLE, repo_url: str | None = None,
          compare_nights: int = COMPARE_NIGHTS, baseline: str | None = None) -> Path:
    """Write the site into ``target`` from the nights under ``root`` (see
    :func:`write_site`); returns the page's path.  Raises ``UsageError`` on
    bad input or an unwritable site."""
    root, target = Path(root), Path(target)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a folder")
    nights = find_nights(root)
    return write_site(target, nights, load_history(nights), title, repo_url, compare_nights, baseline)


def _at_least_two(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 2, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Render the nightly history (ROOT/<date>/performance.csv) "
                                       "as a static site that works offline.")
    p.add_argument("root", metavar="ROOT", help="folder of the dated nights, e.g. results/nightly")
    p.add_argument("-o", "--output", metavar="SITE", required=True, help="folder to write index.html into")
    p.add_argument("--title", default=TITLE, help="page title")
    p.add_argument("--compare-nights", metavar="K", type=_at_least_two, default=COMPARE_NIGHTS,
                   help="compare every two of the last K nights for the page's side-by-side table "
                        f"(default {COMPARE_NIGHTS}; each failed gate's two nights are compared too)")
    p.add_argument("--baseline", metavar="DATE", help="the night the latest night's change is from "
                                                      "(default: the night before it)")
    p.add_argument("--repo-url", metavar="URL", default=default_repo_url(),
                   help="the repository commits link to, e.g. https://github.com/OWNER/NAME "
                        "(default: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY when set)")
    return p


def _check_site(root: Path, site: Path) -> None:
    """The site is written beside the history, never into it: its files
    would mix with the nights' (and a later page would read them)."""
    root, site = root.resolve(), site.resolve()
    if site == root or root in site.parents:
        raise UsageError(f"-o {site} is inside the history {root}: write the site elsewhere, "
                         "e.g. -o site")


def main(argv: Sequence[str] | None = None) -> int:
    """0 when the site was written, 2 on bad input."""
    def body() -> int:
        args = build_parser().parse_args(argv)
        if args.repo_url and not args.repo_url.startswith(("https://", "http://")):
            raise UsageError(f"--repo-url must be an http(s) URL, got {args.repo_url!r}")
        _check_site(Path(args.root), Path(args.output))
        index = build(args.root, args.output, args.title, args.repo_url and args.repo_url.rstrip("/"),
                      args.compare_nights, args.baseline)
        print(f"wrote {index}", file=sys.stderr)
        return 0

    return guarded(PROG, body)
