"""Files: atomic writes (a temporary name beside the target renamed into place, with the mode the umask
allows: a killed job never leaves a file that looks finished), JSON, result tables (written, and stacked
with checks), a job's log; a damaged cache is a ``CorruptCache``. It imports nothing of wordsens.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is imported by the functions that need it: the Snakefile imports this module
    import pandas as pd


class CorruptCache(ValueError):
    """A cached file is missing, truncated or does not match its recorded checksum."""


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _umask_mode(path: Path, umask: int) -> int:
    """What an ordinary ``open`` (0o666) or ``mkdir`` (0o777: folders and executables) gives ``path``."""
    full = 0o777 if path.is_dir() or os.stat(path).st_mode & 0o111 else 0o666
    return full & ~umask


def umask_modes(*paths: str | os.PathLike) -> None:
    """Give each path, and everything under each folder among them, the mode an ordinary ``open`` or
    ``mkdir`` would give it under this process's umask (0644 files, 0755 folders and executables under
    umask 022): for what a library writes with a mode of its own, e.g. ``save_pretrained``'s private
    ``model.safetensors`` (0600). Links are left as they are."""
    umask = current_umask()
    for path in map(Path, paths):
        found = [path, *path.rglob("*")] if path.is_dir() else [path]
        for item in found:
            if not item.is_symlink():
                os.chmod(item, _umask_mode(item, umask))


def atomic_path(target: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``target``, then rename it into place, with the mode an
    ordinary ``open`` would give it (0644 under umask 022), not the temporary file's private 0600."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        os.chmod(tmp_path, 0o666 & ~current_umask())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return target


def write_text(target: str | os.PathLike, text: str, encoding: str | None = None) -> Path:
    """``text`` written atomically to ``target``."""
    return atomic_path(target, lambda path: path.write_text(text, encoding=encoding))


def write_json(target: str | os.PathLike, obj: Any) -> Path:
    return write_text(target, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CorruptCache(f"{path} is missing; re-run the rule that writes it") from None
    except json.JSONDecodeError as err:
        raise CorruptCache(f"{path} is not valid JSON ({err}); delete it and re-run") from None


def write_table(target: str | os.PathLike, frame) -> Path:
    """Write a pandas DataFrame as Parquet, atomically."""
    return atomic_path(target, lambda p: frame.to_parquet(p, index=False))


def file_digest(path: str | os.PathLike) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(8 * 1024**2), b""):
            h.update(block)
    return h.hexdigest()


def log_to(path: str | os.PathLike | None) -> None:
    """Send this process's stdout/stderr (warnings, progress, tracebacks) to a job's log file."""
    import sys

    if not path:
        return
    import platform
    import time

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a", buffering=1)  # noqa: SIM115 - stays open: the job's stdout/stderr from here on
    sys.stderr = handle
    sys.stdout = handle
    # which machine and scheduler job ran this attempt (a retried job appends a second header)
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M:%S')} host={platform.node()} pid={os.getpid()} "
        f"slurm_job_id={os.environ.get('SLURM_JOB_ID', '')}",
        flush=True,
    )


def prepend_pythonpath(path: str | os.PathLike) -> None:
    """Put ``path`` first on PYTHONPATH, so that processes started from here (workflow jobs,
    local or on SLURM with ``--export=ALL``) import this checkout's package."""
    current = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), current) if p)


# Metric columns that must be present and finite in every word-sensitivity row.
_FINITE = ("lower", "ws", "phi_norm", "delta_norm")


def concatenate(paths: Iterable[str | os.PathLike], rows: Iterable[int] | None = None) -> pd.DataFrame:
    """Read per-job Parquet files and stack them; a missing, unreadable or non-finite file is an error,
    and so is a file whose row count is not the one its job ran (``rows``, one count per file in
    order: ``Job.rows`` of the plan)."""
    import pandas as pd

    paths = list(paths)
    expected: list[int | None] = [None] * len(paths) if rows is None else list(rows)
    if len(expected) != len(paths):
        raise ValueError(f"{len(paths)} result files but {len(expected)} row counts")
    frames = []
    for path, count in zip(paths, expected, strict=True):
        try:
            frame = pd.read_parquet(path)
        except Exception as err:  # pyarrow raises several types for damaged files
            raise CorruptCache(f"{path} cannot be read ({type(err).__name__}: {err}); delete it and re-run") from err
        if frame.empty:
            raise CorruptCache(f"{path} holds no rows; delete it and re-run")
        if count is not None and len(frame) != count:
            raise CorruptCache(
                f"{path} holds {len(frame)} rows but its job ran {count} (a replaced or damaged file); "
                "delete it and re-run: Snakemake recomputes exactly that job"
            )
        for column in _FINITE:
            if column in frame and not np.isfinite(frame[column].to_numpy(dtype=float)).all():
                raise ValueError(f"{path} has non-finite values in column {column!r}")
        frames.append(frame)
    if not frames:
        raise ValueError("no result files to aggregate: the grid selected no job")
    return pd.concat(frames, ignore_index=True)


def write_both(frame: pd.DataFrame, parquet: str | os.PathLike, csv: str | os.PathLike) -> None:
    """``frame`` as Parquet and as CSV, each written atomically."""
    write_table(parquet, frame)
    atomic_path(csv, lambda p: frame.to_csv(p, index=False, float_format="%.10g"))
