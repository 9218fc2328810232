"""The evaluation's result tables as text and as JSON: Markdown tables, ``value [lo, hi]``
interval cells, and JSON-ready numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from groundsense.calibration import interval_text


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub Markdown table of ``frame`` (index as the first column), floats rounded."""

    def cell(value: object) -> str:
        if isinstance(value, (float, np.floating)):
            return "—" if not math.isfinite(value) else f"{value:.{digits}f}"
        return str(value)

    header = ["", *map(str, frame.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in frame.itertuples(name=None):  # keeps each column's type (iterrows would upcast ints)
        lines.append("| " + " | ".join([str(row[0]), *map(cell, row[1:])]) + " |")
    return "\n".join(lines)


def interval_at(frame: pd.DataFrame, row: str, columns: Sequence[str] = ("diff", "lo", "hi"),
                sign: str = "") -> str:
    """:func:`interval_text` of ``row``'s value, lo and hi (``columns``, in that order) in ``frame``."""
    value, lo, hi = frame.loc[row, list(columns)].to_numpy(dtype=float)
    return interval_text(value, lo, hi, sign)


def cell(frame: pd.DataFrame, row: str, column: str) -> float:
    """``frame.loc[row, column]``, a number (pandas types a cell as any scalar)."""
    return float(frame.loc[row, [column]].to_numpy(dtype=float)[0])


def interval_cells(frame: pd.DataFrame, value: str = "auc") -> pd.Series:
    """Each row's ``value [lo, hi]`` from its ``value``, ``lo`` and ``hi`` columns."""
    cells = [interval_text(v, lo, hi) for v, lo, hi in zip(frame[value], frame["lo"], frame["hi"])]
    return pd.Series(cells, index=frame.index, dtype=object)


def bracketed(frame: pd.DataFrame) -> pd.DataFrame:
    """Merge every ``X``, ``X lo``, ``X hi`` column triple into one ``X [95% CI]`` text column."""
    out = pd.DataFrame(index=frame.index)
    for column in frame.columns:
        if column.endswith((" lo", " hi")) and column[:-3] in frame.columns:
            continue
        if f"{column} lo" in frame.columns:
            out[f"{column} [95% CI]"] = [interval_text(v, lo, hi) for v, lo, hi in
                                         zip(frame[column], frame[f"{column} lo"], frame[f"{column} hi"])]
        else:
            out[column] = frame[column]
    return out


def frame_numbers(frame: pd.DataFrame) -> dict:
    """``{row: {column: value}}`` with string keys and Python scalars."""
    return {str(index): {str(k): _scalar(v) for k, v in row.items()} for index, row in frame.to_dict("index").items()}


def json_safe(value: object) -> object:
    """``value`` with NaN and infinities as null and numpy scalars as Python ones."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return _scalar(value)


def _scalar(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value
