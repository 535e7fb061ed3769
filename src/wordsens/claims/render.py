"""Renderings of the claims table: plain text for the terminal, Markdown, an HTML page for the report, and its
files (``write_claims``)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import atomic_path, write_text
from .stats import VERDICTS


def _num(x: float) -> str:
    if not np.isfinite(x):
        return "-"
    return f"{x:.4g}"


def _value(row: pd.Series) -> str:
    if row["verdict"] == "not run":
        return "-"
    if np.isfinite(row["ci_low"]):
        return f"{_num(row['value'])} [{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
    if np.isfinite(row["value"]) and float(row["value"]).is_integer():
        return str(int(row["value"]))  # a count: counterexamples, rows, simulations
    return _num(row["value"])


def _note(row: pd.Series) -> str:
    note = row["note"]
    return "" if not isinstance(note, str) else note


def _summary(frame: pd.DataFrame) -> str:
    counts = frame["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in VERDICTS]
    return f"{len(frame)} claims: " + ", ".join(parts)


def format_claims(frame: pd.DataFrame) -> str:
    """A plain-text table for the terminal: one line per claim and scope, its note indented below."""
    head = ["claim", "map", "data", "scope", "value [95% CI]", "expected", "verdict"]
    body = [
        [
            str(r["claim"]),
            str(r["map"]) or "-",
            str(r["data"]) or "-",
            str(r["scope"]) or "-",
            _value(r),
            str(r["expectation"]),
            str(r["verdict"]),
        ]
        for _, r in frame.iterrows()
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()
    out = [line, "-" * len(line)]
    for b, (_, r) in zip(body, frame.iterrows(), strict=True):
        out.append("  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip())
        if _note(r):
            out.append(f"    {_note(r)}")
    out.append("")
    out.append(
        _summary(frame) + "  (statements, settings and sources: see the CSV and docs/claims.md; 95% CI from the "
        "independent units: trials, simulations, reviews; inconclusive: the interval holds both passing and "
        "failing values, or there is not enough data for one)"
    )
    return "\n".join(out)


_TABLE_COLUMNS = [
    ("claim", "claim"),
    ("map", "map"),
    ("data", "data"),
    ("scope", "scope"),
    ("statement", "statement"),
    ("value", "value [95% CI]"),
    ("expectation", "expected"),
    ("verdict", "verdict"),
    ("source", "source"),
    ("note", "note"),
]


def _cells(row: pd.Series) -> list[str]:
    special = {"value": _value, "note": _note}
    return [special[col](row) if col in special else str(row[col]) for col, _ in _TABLE_COLUMNS]


def pipe_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a Markdown pipe table: ``header``, its rule, then one line per row (``|`` in a cell escaped)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]


def claims_markdown(frame: pd.DataFrame) -> str:
    """A Markdown (pipe) table of the claims, with a one-line summary."""
    table = pipe_table([h for _, h in _TABLE_COLUMNS], (_cells(row) for _, row in frame.iterrows()))
    return "\n".join([_summary(frame), "", *table]) + "\n"


_COLOURS = {
    "holds": "#d9f2d9",
    "fails": "#f8d7da",
    "inconclusive": "#fff3cd",
    "not run": "#eeeeee",
    "no claim": "#ffffff",
}


def claims_html(frame: pd.DataFrame) -> str:
    """A self-contained HTML page of the claims (for the Snakemake report), verdicts coloured."""
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in _TABLE_COLUMNS)
    body = []
    for _, row in frame.iterrows():
        colour = _COLOURS.get(str(row["verdict"]), "#ffffff")
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in _cells(row))
        body.append(f'<tr style="background:{colour}">{cells}</tr>')
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Claims</title>'
        "<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}</style></head><body>"
        f"<p>{html.escape(_summary(frame))}. The interval is a 95% interval from the independent units a "
        "statistic rests on: trials (word sensitivity), simulations (generalisation) or reviews (trained "
        "encoder). A verdict holds or fails when the whole interval is on one side of the threshold, and is "
        "inconclusive when it holds both or when there is not enough data for an interval; a universal claim "
        "('on every row') fails on one counterexample, named in the note.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></body></html>\n"
    )


def write_claims(frame: pd.DataFrame, csv: str | Path, html: str | Path) -> None:
    """The claims table (``wordsens.studies.claims.compute_claims``) as CSV and as the report's HTML page."""
    atomic_path(csv, lambda p: frame.to_csv(p, index=False, float_format="%.6g"))
    write_text(html, claims_html(frame))
