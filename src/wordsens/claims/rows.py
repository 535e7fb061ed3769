"""The rows of the claims table: :class:`Rows` turns a statistic and its interval, a universal claim's
counterexamples or a count into one row of :data:`wordsens.claims.stats.COLUMNS` with its verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .intervals import Interval, linear
from .stats import COLUMNS, Claim, Threshold, in_paper_setting


def check_columns(key: str, frame: pd.DataFrame, required: Sequence[str]) -> None:
    """Raise ``ValueError`` where the table ``key`` lacks a column its claims read."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"table {key!r} lacks the column(s) {missing}: it was not written by the workflow's "
            "aggregation rules (re-run snakemake to rebuild it)"
        )


class Rows:
    """The rows of the claims table, added one claim and scope at a time; :meth:`frame` gives the table.
    ``claims``: the definitions by id (every claim of the run: ``wordsens.studies.claims.catalogue``)."""

    def __init__(self, claims: Mapping[str, Claim]) -> None:
        self.rows: list[dict[str, object]] = []
        self.claims = dict(claims)

    def not_run(
        self,
        claim: str,
        why: str,
        *,
        map_: str = "",
        data: str = "",
        scope: str = "",
        threshold: Threshold | None = None,
        fields: dict[str, str] | None = None,
    ) -> None:
        self._add(claim, (map_, data, scope), math.nan, "not run", why, threshold=threshold, fields=fields)

    def estimate(
        self,
        claim: str,
        interval: Interval | Sequence[float] | np.ndarray,
        *,
        map_: str,
        data: str,
        scope: str,
        note: str = "",
        threshold: Threshold | None = None,
        fields: dict[str, str] | None = None,
        outside: str = "",
    ) -> None:
        """One row: a statistic with its interval and its verdict (:meth:`Claim.verdict`); ``no claim`` for a
        claim of the paper's data on synthetic rows, of Gaussian rows on other data, and where ``outside`` says
        why the rows are outside the claim's setting. ``threshold`` replaces the claim's default; ``fields``
        fill its text. Values instead of an interval: their mean with its t-interval, each value a unit."""
        if not isinstance(interval, Interval):
            interval = linear([np.asarray(interval, float)], [1.0])
        c = self.claims[claim]
        if not np.isfinite(interval.value):
            why = "the statistic is undefined on these rows" + (f"; {note}" if note else "")
            self.not_run(claim, why, map_=map_, data=data, scope=scope, threshold=threshold, fields=fields)
            return
        notes = [interval.short, note]
        if not outside and c.paper_data_only and not in_paper_setting(data):
            outside = "outside the paper's setting (synthetic rows)"
        if not outside and c.synthetic_only and in_paper_setting(data):
            outside = "a level measured on Gaussian rows, not on these"
        if outside:
            verdict = "no claim"
            notes.insert(0, f"{outside}: reported without a verdict")
        else:
            verdict = c.verdict(interval.value, interval.low, interval.high, threshold)
        note = "; ".join(x for x in notes if x)
        ci = (interval.low, interval.high)
        self._add(claim, (map_, data, scope), interval.value, verdict, note, ci, interval.units, threshold, fields)

    def universal(
        self,
        claim: str,
        counterexamples: Sequence[str],
        checked: int,
        *,
        map_: str,
        data: str,
        scope: str,
        note: str = "",
    ) -> None:
        """A statement about every row: ``holds`` with no counterexample among the ``checked`` rows,
        ``fails`` with one or more, the first three named in the note. Never inconclusive."""
        k = len(counterexamples)
        named = "; ".join(counterexamples[:3]) + (f"; and {k - 3} more" if k > 3 else "")
        text = f"{k} counterexample{'s' if k != 1 else ''} of {checked} rows" + (f": {named}" if k else "")
        note = f"{text}; {note}".strip("; ")
        self._add(claim, (map_, data, scope), float(k), "fails" if k else "holds", note, units=checked)

    def left_out(self, point: Mapping[str, object]) -> None:
        """A grid point the limits left out (``wordsens.pipeline.Grid.left_out``): a ``not run`` row of the
        claim ``left_out`` naming the point and what it needs."""
        needs = [f"needs {point['needs_gb']} GB on {point.get('device', 'cpu')}"] if "needs_gb" in point else []
        needs += [f"about {point['needs_hours']} hours"] if "needs_hours" in point else []
        why = "left out by the limits" + (f": {'; '.join(needs)}" if needs else "")
        where = (str(point.get("map") or ""), str(point.get("data") or ""), str(point.get("point", "")))
        self._add("left_out", where, math.nan, "not run", why)

    def count(self, claim: str, value: int, units: int, *, map_: str, data: str, scope: str, note: str) -> None:
        self._add(claim, (map_, data, scope), float(value), "no claim", note, units=units)

    def _add(
        self,
        claim: str,
        where: tuple[str, str, str],
        value: float,
        verdict: str,
        note: str,
        ci: tuple[float, float] = (math.nan, math.nan),
        units: int = 0,
        threshold: Threshold | None = None,
        fields: dict[str, str] | None = None,
    ) -> None:
        """One row of ``COLUMNS``: the claim's statement and statistic (``fields`` filled in), ``where`` (map,
        data, scope) and the row's values."""
        c = self.claims[claim]
        values = [claim, *where, *c.text(fields), value, *ci, c.expectation(threshold), verdict, units]
        self.rows.append(dict(zip(COLUMNS, [*values, c.source, c.setting, note], strict=True)))

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.rows, columns=COLUMNS)
        frame["units"] = frame["units"].astype("int64")
        for col in ("value", "ci_low", "ci_high"):
            frame[col] = frame[col].astype("float64")
        return frame
