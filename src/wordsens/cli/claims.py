"""``wordsens claims``: print the claims table of a run: the paper's statements checked on its own tables

Compute the claims table (wordsens.claims) from the tables of a workflow's results folder
(RESULTS_DIR/tables/*.parquet: each registered study reads its own, e.g. ws_<map>, gen_fig4_<data>, trained,
swaps, gen_words; variants for the maps without a ws_<map> table; a table not there makes its claims 'not run')
and print it: per claim and scope the statistic, its 95% interval from the independent units it rests on
(trials, simulations, reviews), the expectation, the setting the claim comes from and the verdict (holds, fails,
inconclusive, not run, no claim; docs/claims.md). The same table as the workflow's tables/claims.csv."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..arguments import add_command


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    claims = add_command(sub, "claims", __doc__)
    claims.add_argument("results", metavar="RESULTS_DIR", help="the results folder of a run (config key 'results')")
    claims.add_argument(
        "--format",
        choices=["text", "markdown", "csv"],
        default="text",
        help="text (a terminal table, the default), markdown (a pipe table) or csv (every column)",
    )


def run(args: argparse.Namespace) -> str:
    """The claims table of ``args.results`` in ``args.format``; neither torch nor the plotting libraries
    are imported."""
    from ..claims import claims_markdown, format_claims
    from ..studies.claims import claims_from_results

    frame = claims_from_results(args.results)
    if args.format == "csv":
        return frame.to_csv(index=False, float_format="%.6g")
    return claims_markdown(frame) if args.format == "markdown" else format_claims(frame) + "\n"
