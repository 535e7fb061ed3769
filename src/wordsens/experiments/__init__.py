"""What the bodies of every study's jobs share: the word-sensitivity trials of a job as tidy result rows
(``ws_rows``; ``ws_job``, the body of the WS studies' jobs) and the provenance every row records (``provenance``,
``config_hash``, ``job_peak_mb``), with what each row of a review's sample holds (``token_kinds``). The
studies' own bodies are in their folders (``wordsens.studies``).
"""

from .rows import config_hash, job_peak_mb, provenance, token_kinds, ws_job, ws_rows

__all__ = ["config_hash", "job_peak_mb", "provenance", "token_kinds", "ws_job", "ws_rows"]
