"""The gen_words study's claims (:data:`DEFINITIONS`) and its rows of the claims table (:func:`gen_words_claims`;
docs/claims.md): ``gen_words_reach``, the rate of simulations where a move learns the opposite label while the
first stage stays unsure, and ``gen_words_rf_vs_raf``, RF's alignment ratio above RAF's on paired simulations (a
simulation index is the same review, training set and position for every map), with a verdict only where the
derived bounds set the two maps apart (:func:`separated`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...claims.intervals import MIN_UNITS, clopper_pearson, linear
from ...claims.rows import Rows, check_columns
from ...claims.stats import ESTIMATE, RATE, Claim, raf_alignment_threshold
from ...theory import rf_law
from . import SETTINGS

# the columns gen_words_claims reads; a table without one of them is an error (wordsens.claims.table)
REQUIRED = (
    "model",
    "map",
    "d",
    "n",
    "N",
    "simulation",
    "training",
    "loss",
    "penalty",
    "setting",
    "alignment",
    "radius",
    "reaches",
)

_SETTING = (
    "the gen_words study: an encoder's vocabulary at one word position of IMDb reviews, layer 0, the paper's "
    "first stage"
)
DEFINITIONS = (
    Claim(
        "gen_words_reach",
        "a move that learns the opposite label while the first stage stays unsure (Err < 1 at gamma_min <= 1): "
        "how often a real word finds one, beside the continuous Delta (the paper makes no claim)",
        "rate of simulations where some word of the vocabulary (setting words) or some loss's continuous Delta "
        "(the other settings) reaches Err < 1 with gamma_min <= 1",
        setting=_SETTING,
        kind=RATE,
    ),
    Claim(
        "gen_words_rf_vs_raf",
        "one real word separates a sentence more under random attention features than under random features: on "
        "the same simulation, the surrogate loss's best word leaves RF's alignment ratio a above RAF's",
        "mean over paired simulations of a(RF) - a(RAF), the surrogate loss's best word of each",
        ">",
        0.0,
        "paper (Figure 4: RF cannot flip its prediction, RAF can) carried to real words; derived",
        _SETTING,
        kind=ESTIMATE,
    ),
)


def separated(n: int, d: int, radius: float) -> tuple[bool, str]:
    """Whether the derived bounds set RF and RAF apart at (n, d) for words that move their row by at most
    ``radius``: RF's alignment a >= 1 - S(n) r / sqrt(d) (the bound of ``fig4_rf_alignment``, at radius r:
    its relative feature change grows like r) above the alignment ``raf_alignment_threshold(d)`` below which
    a RAF row separates the sentences. With the reason, for the note."""
    rf_floor = 1.0 - float(rf_law(n)) * radius / math.sqrt(d)
    raf = raf_alignment_threshold(d)
    relation = ">" if rf_floor > raf else "<="
    return rf_floor > raf, f"RF's bound 1 - S(n) r/sqrt(d) = {rf_floor:.3g} {relation} RAF's separation a = {raf:.3g}"


def _data(model: str) -> str:
    return f"imdb:{model}"


def reach_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, map, d, n, N, training, setting): ``hits`` (simulations where some row reaches) and
    ``total`` (simulations)."""
    keys = ["model", "map", "d", "n", "N", "training", "setting"]
    per = frame.groupby([*keys, "simulation"], sort=True)["reaches"].any().reset_index()
    out = per.groupby(keys, sort=True)["reaches"].agg(hits="sum", total="size").reset_index()
    return out.astype({"hits": int, "total": int})


def paired_alignment(frame: pd.DataFrame, first: str = "rf", second: str = "raf") -> pd.DataFrame:
    """Per (model, d, n, N, training, simulation) where both maps ran: the surrogate loss's best word's
    alignment of each (``a_first``, ``a_second``) and their difference ``diff``."""
    words = frame[(frame["setting"] == "words") & (frame["loss"] == "surrogate")]
    keys = ["model", "d", "n", "N", "training", "simulation"]
    a = {
        m: words[words["map"] == m].groupby(keys, sort=True)["alignment"].first().rename(f"a_{m}")
        for m in (first, second)
    }
    both = pd.concat(a.values(), axis=1, join="inner").dropna().reset_index()
    return both.assign(diff=both[f"a_{first}"] - both[f"a_{second}"])


def gen_words_claims(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    """The study's rows of its table (absent: it did not run): the reach rates and the paired RF-RAF
    alignment comparison."""
    frame = tables.get("gen_words")
    if frame is not None:
        check_columns("gen_words", frame, REQUIRED)
    if frame is None or frame.empty:
        for claim in DEFINITIONS:
            rows.not_run(claim.id, "no gen_words table (gen_words.parquet): the gen_words study did not run")
        return
    frame = frame.assign(model=frame["model"].astype(str), training=frame["training"].astype(str))
    rates = reach_rates(frame)
    rates = rates.assign(_setting=rates["setting"].map({s: i for i, s in enumerate(SETTINGS)}))
    rates = rates.sort_values(["model", "map", "d", "n", "N", "training", "_setting"], kind="stable")
    for r in rates.itertuples():
        scope = f"d={int(r.d)}, n={int(r.n)}, N={int(r.N)}, {r.training}, {r.setting}"
        note = f"{int(r.hits)} of {int(r.total)} simulations"
        interval = clopper_pearson(int(r.hits), int(r.total))
        rows.estimate("gen_words_reach", interval, map_=str(r.map), data=_data(r.model), scope=scope, note=note)
    _rf_vs_raf(rows, frame)


def _rf_vs_raf(rows: Rows, frame: pd.DataFrame) -> None:
    maps_ = set(frame["map"])
    if not {"rf", "raf"} <= maps_:
        missing = " and ".join(m for m in ("rf", "raf") if m not in maps_)
        why = f"the study ran no {missing} (gen_words.maps): the comparison pairs RF's and RAF's simulations"
        rows.not_run("gen_words_rf_vs_raf", why, map_="rf, raf")
        return
    pairs = paired_alignment(frame)
    if pairs.empty:
        why = "RF and RAF share no (d, n, N, simulation): give both the same n in gen_words.maps"
        rows.not_run("gen_words_rf_vs_raf", why, map_="rf, raf")
        return
    words = frame[(frame["setting"] == "words") & (frame["loss"] == "surrogate")]
    for (model, d, n, N, training), part in pairs.groupby(["model", "d", "n", "N", "training"], sort=True):
        diffs = part["diff"].to_numpy(float)
        at = words[(words["model"] == model) & (words["d"] == d) & (words["n"] == n) & (words["N"] == N)]
        apart, why = separated(int(n), int(d), float(at["radius"].max()))
        rows.estimate(
            "gen_words_rf_vs_raf",
            linear([diffs], [1.0], minimum=MIN_UNITS, unit="simulations"),
            map_="rf, raf",
            data=_data(str(model)),
            scope=f"d={int(d)}, n={int(n)}, N={int(N)}, {training}",
            note=f"{_note(part['a_rf'].to_numpy(float), part['a_raf'].to_numpy(float))}; {why}",
            outside="" if apart else "the derived bounds do not set RF and RAF apart at these sizes",
        )


def _note(a_rf: Sequence[float] | np.ndarray, a_raf: Sequence[float] | np.ndarray) -> str:
    rf, raf = np.asarray(a_rf, float), np.asarray(a_raf, float)
    return (
        f"{len(rf)} paired simulations; median a: RF {np.median(rf):.3f}, RAF {np.median(raf):.3f}; "
        f"RAF below RF in {int((raf < rf).sum())} of {len(rf)}"
    )
