"""Two runs' claims tables side by side (a GPU node's and a CPU run's of the same configuration): for
every claim both ran (verdict neither ``not run`` nor missing), whether the verdicts agree.

    python benchmarks/claims_diff.py GPU/claims.csv CPU/claims.csv

Prints one line per claim whose verdicts differ, then the count; exits 1 where any differs. GPU and CPU
numbers are equal in law, not equal (docs/methods.md): an ``inconclusive`` beside a ``holds`` is an
interval on the edge, a ``holds`` beside a ``fails`` a real disagreement.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

KEY = ["claim", "map", "data", "scope"]


def verdicts(path: str) -> pd.Series:
    """The verdict of every claim of the table at ``path`` that ran, by claim, map, data and scope."""
    frame = pd.read_csv(path, keep_default_na=False)
    frame = frame[frame["verdict"] != "not run"]
    return frame.set_index(KEY)["verdict"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first")
    parser.add_argument("second")
    args = parser.parse_args()
    first, second = verdicts(args.first), verdicts(args.second)
    both = first.index.intersection(second.index)
    differ = [key for key in both if first[key] != second[key]]
    for key in differ:
        print(f"  {' / '.join(map(str, key))}: {first[key]} against {second[key]}")
    print(
        f"{len(both)} claims ran in both ({len(first)} and {len(second)} in each): "
        f"{len(both) - len(differ)} with the same verdict, {len(differ)} differ"
    )
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
