"""``python -m wordsens.cli``: the ``wordsens`` command."""

import sys

from .command import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
