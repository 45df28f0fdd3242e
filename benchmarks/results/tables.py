"""Tables of numbers and text, formatted alike wherever one is rendered:
the report's, compare's, and the standalone tools' (``render_table``).

Numbers are right-aligned, in fixed point (never an exponent), whole numbers
as such and others to ``SIGNIFICANT`` digits; text is left as it is.
"""
from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd
from tabulate import tabulate

SIGNIFICANT = 3  # significant digits of a number that is not whole


def is_number(value: Any) -> bool:
    return not isinstance(value, (str, bool)) and value is not None and not pd.isna(value)


def fixed(value: float) -> str:
    """``value`` to ``SIGNIFICANT`` digits in fixed point, its whole part in
    full: 3831.2 -> "3831", 15.52 -> "15.5", 0.07123 -> "0.0712"."""
    if not math.isfinite(value):
        return str(value)
    rounded = float(f"{value:.{SIGNIFICANT}g}")
    if rounded == 0:
        return "0"
    decimals = max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(rounded))))
    return f"{value:.{decimals}f}"


def column(values: list, missing: str = "") -> list[str]:
    """One column's cells: text as it is, a missing value ``missing``, numbers
    as whole numbers when every one is, else each to ``SIGNIFICANT`` digits."""
    numbers = [float(v) for v in values if is_number(v)]
    whole = all(v.is_integer() for v in numbers if math.isfinite(v))
    return [(str(int(v)) if whole and math.isfinite(v) else fixed(float(v))) if is_number(v)
            else missing if v is None or pd.isna(v) else str(v) for v in values]


def cells(rows: list[list], missing: str = "") -> list[list[str]]:
    """``rows`` with every column formatted by ``column``."""
    if not rows:
        return []
    columns = [column(list(values), missing) for values in zip(*rows)]
    return [list(row) for row in zip(*columns)]


MARKDOWN = "pipe"  # GitHub's tables, with the alignment row that right-aligns numbers
# A cell that is a number, with its unit, interval or count: "1.50x [1.40, 1.60]",
# "85% [70%, 100%]", "1/2", "1 of 3", "0.0712".
_NUMBER = re.compile(r"^[-+]?\d[\d.,]*(x|%)?(/\d+)*( \[.*\]| \(n=\d+\)| of \d+)?$")


def render(headers: list[str], rows: list[list[str]], tablefmt: str) -> str:
    """``rows`` (cells already formatted) as a table: a column holding any
    number right-aligned, the others left; in markdown, a pipe in a cell
    escaped so that it does not split the cell."""
    if tablefmt == MARKDOWN:
        rows = [[cell.replace("|", "\\|") for cell in row] for row in rows]
    align = ["right" if any(_NUMBER.match(row[i]) for row in rows) else "left" for i in range(len(headers))]
    # disable_numparse: cells are already formatted; keep them verbatim.
    return tabulate(rows, headers=headers, tablefmt=tablefmt, colalign=align, disable_numparse=True)


def render_table(headers: list[str], rows: list[list], tablefmt: str = "simple", missing: str = "") -> str:
    """``rows`` of numbers and text as a table, formatted as the report's
    are: numbers in fixed point, right-aligned; a missing value ``missing``."""
    return render(list(headers), cells([list(row) for row in rows], missing), tablefmt)
