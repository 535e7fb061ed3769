"""The rows of the claims table: :class:`Rows` turns a statistic and its interval
(:mod:`wordsens.claims.intervals`), a universal claim's counterexamples or a count into one row of
:data:`wordsens.claims.stats.COLUMNS`, with the claim's statement, expectation, setting and verdict
(:meth:`wordsens.claims.stats.Claim.verdict`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .intervals import Interval
from .stats import COLUMNS, Claim, Threshold, catalogue, in_paper_setting

__all__ = ["Rows", "check_columns"]


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
    ``claims``: the definitions by id (default: every claim, ``wordsens.claims.stats.catalogue``)."""

    def __init__(self, claims: Mapping[str, Claim] | None = None) -> None:
        self.rows: list[dict[str, object]] = []
        self.claims = dict(catalogue() if claims is None else claims)

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
        self._add(claim, map_, data, scope, math.nan, (math.nan, math.nan), 0, "not run", why, threshold, fields)

    def estimate(
        self,
        claim: str,
        interval: Interval,
        *,
        map_: str,
        data: str,
        scope: str,
        note: str = "",
        threshold: Threshold | None = None,
        fields: dict[str, str] | None = None,
        outside: str = "",
    ) -> None:
        """One row: a statistic with its interval (:mod:`wordsens.claims.intervals`) and its verdict
        (:meth:`Claim.verdict`); ``inconclusive`` with "not enough data" where the interval has too few
        units; ``no claim`` for a claim of the paper's data on the synthetic companion's rows, of Gaussian
        rows on other data, and where ``outside`` says why the rows are outside the claim's setting.
        ``threshold`` replaces the claim's default; ``fields`` fill its statement and statistic."""
        c = self.claims[claim]
        if not np.isfinite(interval.value):
            self.not_run(
                claim,
                "the statistic is undefined on these rows" + (f"; {note}" if note else ""),
                map_=map_,
                data=data,
                scope=scope,
                threshold=threshold,
                fields=fields,
            )
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
        self._add(
            claim,
            map_,
            data,
            scope,
            interval.value,
            (interval.low, interval.high),
            interval.units,
            verdict,
            "; ".join(x for x in notes if x),
            threshold,
            fields,
        )

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
        verdict = "fails" if k else "holds"
        self._add(
            claim,
            map_,
            data,
            scope,
            float(k),
            (math.nan, math.nan),
            checked,
            verdict,
            f"{text}; {note}".strip("; "),
            None,
            None,
        )

    def left_out(self, point: Mapping[str, object]) -> None:
        """A grid point the limits left out (``wordsens.pipeline.Grid.left_out``): a ``not run`` row of the
        claim ``left_out`` naming the point and what it needs."""
        needs = [f"needs {point['needs_gb']} GB on {point.get('device', 'cpu')}"] if "needs_gb" in point else []
        needs += [f"about {point['needs_hours']} hours"] if "needs_hours" in point else []
        why = "left out by the limits" + (f": {'; '.join(needs)}" if needs else "")
        self.not_run("left_out", why, map_=str(point.get("map") or ""), data=str(point.get("data") or ""),
                     scope=str(point.get("point", "")))  # fmt: skip

    def count(self, claim: str, value: int, units: int, *, map_: str, data: str, scope: str, note: str) -> None:
        self._add(claim, map_, data, scope, float(value), (math.nan, math.nan), units, "no claim", note, None, None)

    def _add(
        self,
        claim: str,
        map_: str,
        data: str,
        scope: str,
        value: float,
        ci: tuple[float, float],
        units: int,
        verdict: str,
        note: str,
        threshold: Threshold | None,
        fields: dict[str, str] | None,
    ) -> None:
        c = self.claims[claim]
        statement, statistic = c.text(fields)
        self.rows.append(
            {
                "claim": claim,
                "map": map_,
                "data": data,
                "scope": scope,
                "statement": statement,
                "statistic": statistic,
                "value": value,
                "ci_low": ci[0],
                "ci_high": ci[1],
                "expectation": c.expectation(threshold),
                "verdict": verdict,
                "units": units,
                "source": c.source,
                "setting": c.setting,
                "note": note,
            }
        )

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.rows, columns=COLUMNS)
        frame["units"] = frame["units"].astype("int64")
        for col in ("value", "ci_low", "ci_high"):
            frame[col] = frame[col].astype("float64")
        return frame
