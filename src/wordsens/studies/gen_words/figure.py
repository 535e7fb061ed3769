"""The gen_words study's figures (Figures 4 and 5 with real words, in the layout of
``wordsens.plots.generalisation.gen_figure``) and its readable table of each simulation's best words.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...plots.common import map_label
from ...plots.generalisation import TRAINING_TITLES, gen_figure
from ..swaps import in_registry_order
from ..swaps.figure import markdown_start, markdown_table, number, write_markdown

# the rows' settings in the figure's legend, in its order
SETTING_LABELS = {
    "words": "best real word (exact over the vocabulary)",
    "cls": "continuous Delta at [CLS], radius sqrt(d) (the paper's)",
    "position": "continuous Delta at the word's position, radius sqrt(d)",
    "word_radius": "continuous Delta at the word's position, radius r* of the best word",
}


def gen_words_figure(
    table: pd.DataFrame,
    columns: Sequence[Sequence[Any]],
    paths: Sequence[str | Path],
    penalised: Sequence[str | Path] = (),
    *,
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> None:
    """Figure 4 with real words at ``paths`` (the surrogate and direct losses; colour: the setting of
    ``SETTING_LABELS``) and, where ``penalised`` names files, Figure 5 with real words (the penalised loss's
    best words; colour: penalty): rows = training, columns = the (map, n) of ``columns`` the table has."""
    if table.empty:
        raise ValueError("the gen_words table has no rows")
    paper = table[table["loss"].isin(["surrogate", "direct"])]
    gen_figure(paper, columns, paths, hue="setting", labels=SETTING_LABELS, left_out=left_out, settings=settings)
    if penalised:
        words = table[(table["loss"] == "penalised") & (table["setting"] == "words")]
        if words.empty:
            raise ValueError("the gen_words table has no penalised rows: run it with gen_words.penalties")
        gen_figure(words, columns, penalised, hue="penalty", left_out=left_out, settings=settings)


def gen_words_text(table: pd.DataFrame, path: str | Path, *, top: int = 5, stamp: str | None = None) -> str:
    """The Markdown table of each simulation per map, n and N: the review around the word position with the
    substitution of the direct loss's best word marked ``[original -> word]``, per training the best words
    of the surrogate and direct losses (the next ``top`` of the direct loss) with their Err, gamma_min and
    alignment a, the smallest Err of a word at gamma_min <= 1 and the continuous Delta's Err at [CLS];
    written atomically to ``path``; returns it."""
    intro = (
        "Per map, n and N, each simulation (a review learned with the opposite label of its changed sentence, a "
        "training set of other reviews, one word position): per training, the word of the vocabulary that "
        "minimises the surrogate loss and the one that minimises Err directly, with Err = (D1 + y)^2, "
        "gamma_min = max(|t0|, |D0|) and the alignment a; the next best words of the direct loss; the smallest Err "
        "of any word with gamma_min <= 1 (below 1: some real word learns the opposite label while the first stage "
        "stays unsure); and the Err of the paper's continuous Delta at [CLS] on the same simulation."
    )
    lines = markdown_start("The best real words of the gen_words study", stamp, intro)
    header = ["simulation", "review", "training", "the review around the word", "surrogate: word (Err, gamma, a)"]
    header += ["direct: word (Err, gamma, a)", "next best words (direct)", "smallest Err at gamma <= 1"]
    header += ["continuous at [CLS]: Err"]
    for name in in_registry_order(set(table["map"])):
        at_map = table[table["map"] == name]
        for (n, N), point in at_map.groupby(["n", "N"], sort=True):
            d, vocab = int(point["d"].iloc[0]), int(point["vocab"].iloc[0])
            lines += markdown_table(f"{map_label(name)}, d = {d}, n = {int(n)}, N = {int(N)} ({vocab} words)", header)
            for (simulation, training), rows in point.groupby(["simulation", "training"], sort=True):
                lines.append("| " + " | ".join(_cells(rows, int(simulation), str(training), top)) + " |")
            lines.append("")
    return write_markdown(path, lines)


def _number(value: Any) -> str:
    return number(value, ".3g")


def _cells(rows: pd.DataFrame, simulation: int, training: str, top: int) -> list[str]:
    """One simulation's and training's cells of ``gen_words_text``."""
    words = rows[rows["setting"] == "words"]
    surrogate = words[words["loss"] == "surrogate"].iloc[0]
    direct = words[words["loss"] == "direct"].iloc[0]
    marked = str(direct["context"]).replace(" -> ?]", f" -> {direct['word']}]", 1)  # the run's "[original -> ?]"
    cls = rows[(rows["setting"] == "cls") & (rows["loss"] == "direct")]

    def outcome(row: pd.Series) -> str:
        return f"{row['word']} ({_number(row['err'])}, {_number(row['gamma_min'])}, {_number(row['alignment'])})"

    return [
        str(simulation),
        str(int(direct["review_id"])),
        TRAINING_TITLES.get(training, training),
        marked.replace("|", "\\|"),
        outcome(surrogate),
        outcome(direct),
        ", ".join(json.loads(direct["top_words"])[1 : 1 + top]),
        _number(direct["frontier_err_at_1"]),
        _number(cls["err"].iloc[0]) if len(cls) else "-",
    ]


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``): the figures and each simulation's best words as text."""
    table = tables["table"]
    penalised = outputs.get("penalised", ())
    gen_words_figure(
        table, params["columns"], outputs["figures"], penalised, left_out=params["left_out"], settings=settings
    )
    gen_words_text(table, outputs["text"][0], stamp=settings.get("stamp"))
