"""Files: atomic writes, the embedding store, result tables (written, and stacked with checks).

Every output is written to a temporary name beside its target and renamed into place, so a killed
job never leaves a file that looks finished; it gets the mode the umask allows (0644 under 022), and
so does what a library writes on its own (``umask_modes``: transformers' ``save_pretrained``).
The embedding store records a checksum of its array so that a corrupt or truncated cache is
detected instead of used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is imported by the functions that need it: the Snakefile imports this module
    import pandas as pd

__all__ = [
    "CorruptCache",
    "EmbeddingStore",
    "LoggedJob",
    "atomic_path",
    "benchmark_times",
    "calibration_file",
    "concatenate",
    "current_umask",
    "file_digest",
    "load_embeddings",
    "read_json",
    "save_embeddings",
    "snakemake_log_jobs",
    "store_dir",
    "store_metas",
    "umask_modes",
    "write_both",
    "write_json",
    "write_table",
]


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
    umask 022; 0640 and 0750 under 027): for what a library writes with a mode of its own, e.g.
    transformers' ``save_pretrained``, whose ``model.safetensors`` comes out 0600 (safetensors 0.8's
    ``save_file`` writes private files), unreadable by the rest of the group. Links are left as they are."""
    umask = current_umask()
    for path in map(Path, paths):
        found = [path, *path.rglob("*")] if path.is_dir() else [path]
        for item in found:
            if not item.is_symlink():
                os.chmod(item, _umask_mode(item, umask))


def atomic_path(target: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``target``, then rename it into place.

    The file gets the mode an ordinary ``open`` would give it (``0o666`` less the umask: 0644 under
    umask 022), not the private 0600 of the temporary file, so collaborators can read the results.
    """
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


def write_json(target: str | os.PathLike, obj: Any) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"

    def write(path: Path) -> None:
        path.write_text(text)

    return atomic_path(target, write)


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


# --------------------------------------------------------------------------- embedding store


@dataclass
class EmbeddingStore:
    """Hidden states of a pool of reviews: ``hidden`` (reviews, max_length, width), memory-mapped.

    ``index`` has one row per review: ``review_id``, ``label`` (0/1), ``length`` (tokens including
    ``[CLS]`` and ``[SEP]``). ``meta`` records the model, layer, max_length and the checksum.
    """

    hidden: np.ndarray
    index: Any  # pandas.DataFrame
    meta: dict[str, Any]
    path: Path

    def __len__(self) -> int:
        return int(self.hidden.shape[0])

    @property
    def max_length(self) -> int:
        return int(self.hidden.shape[1])

    @property
    def width(self) -> int:
        return int(self.hidden.shape[2])


_FILES = ("hidden.npy", "index.parquet", "meta.json")


def store_dir(config: dict, *, long: bool = False) -> str:
    """The folder of a configuration's embedding store: one per model and layer, and the long-context
    store (``long``) beside it at ``long_context.max_length``."""
    from .data.models import model_tag

    model = config["model"]
    path = f"{config['resources'].rstrip('/')}/embeddings/{model_tag(model['name'])}/layer{model['layer']}"
    return f"{path}_len{config['long_context']['max_length']}" if long else path


def store_metas(config: dict) -> dict[str, dict[str, Any]]:
    """The meta.json of each of a configuration's stores that exists (``main``, ``long``); an
    unreadable one is left out (the jobs that load the store name it)."""
    found = {}
    for store in ("main", "long"):
        if store == "long" and not config.get("long_context"):
            continue
        meta = Path(store_dir(config, long=store == "long")) / "meta.json"
        if meta.is_file():
            try:
                found[store] = read_json(meta)
            except CorruptCache:
                continue
    return found


def save_embeddings(directory: str | os.PathLike, hidden: np.ndarray, index, meta: dict[str, Any]) -> Path:
    """Write a store (``hidden.npy``, ``index.parquet``, then ``meta.json`` with the checksum).

    A store with NaN/Inf values is refused (``wordsens.data.inputs.InputError``) before anything
    is written."""
    from .data.inputs import check_finite

    directory = Path(directory)
    if hidden.ndim != 3 or hidden.shape[0] != len(index):
        raise ValueError(
            f"hidden must be (reviews, max_length, width) with one index row per review, "
            f"got {hidden.shape} and {len(index)} index rows"
        )
    check_finite(hidden)

    def write_array(path: Path) -> None:
        with open(path, "wb") as fh:
            np.save(fh, hidden)

    atomic_path(directory / "hidden.npy", write_array)
    write_table(directory / "index.parquet", index)
    meta = dict(meta, shape=list(hidden.shape), dtype=str(hidden.dtype), digest=file_digest(directory / "hidden.npy"))
    write_json(directory / "meta.json", meta)
    return directory


def load_embeddings(path: str | os.PathLike, *, verify: bool = True) -> EmbeddingStore:
    """Open a store (its directory, or any file in it); raise ``CorruptCache`` when it is damaged."""
    import pandas as pd

    path = Path(path)
    directory = path.parent if path.is_file() else path
    if not directory.is_dir():
        raise FileNotFoundError(f"no embedding store at {path}: expected a directory with {', '.join(_FILES)}")
    missing = [name for name in _FILES if not (directory / name).exists()]
    if missing:
        raise CorruptCache(f"embedding store {directory} lacks {', '.join(missing)}; re-run the embedding rule")
    meta = read_json(directory / "meta.json")
    if verify and file_digest(directory / "hidden.npy") != meta.get("digest"):
        raise CorruptCache(
            f"{directory / 'hidden.npy'} does not match its recorded checksum (corrupt or truncated); "
            "delete the store and re-run the embedding rule"
        )
    try:
        hidden = np.load(directory / "hidden.npy", mmap_mode="r")
    except ValueError as err:
        raise CorruptCache(f"{directory / 'hidden.npy'} cannot be read ({err}); delete it and re-run") from None
    if list(hidden.shape) != list(meta.get("shape", [])):
        raise CorruptCache(f"{directory / 'hidden.npy'} has shape {hidden.shape}, meta.json says {meta.get('shape')}")
    index = pd.read_parquet(directory / "index.parquet")
    if len(index) != hidden.shape[0]:
        raise CorruptCache(f"{directory} index has {len(index)} rows for {hidden.shape[0]} reviews")
    return EmbeddingStore(hidden=hidden, index=index, meta=meta, path=directory)


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


# ----------------------------------------------------------------------------- measured run times
def benchmark_times(results: str | os.PathLike) -> dict[str, float]:
    """Wall seconds of every job with a Snakemake benchmark file under ``results/benchmarks`` (the
    ``benchmark:`` of the rules), by its path below that folder without ``.tsv``
    (``ws/rf/d16_n8/chunk0``, ``gen/fig4/imdb/raf_n8_N6_d16/chunk0``, ``embed/<model>_layer0``);
    the mean of the ``s`` column where a file holds repeats."""
    import csv

    root = Path(results) / "benchmarks"
    times: dict[str, float] = {}
    for path in sorted(root.rglob("*.tsv")):
        with open(path, newline="") as fh:
            seconds = [float(row["s"]) for row in csv.DictReader(fh, delimiter="\t") if row.get("s")]
        if seconds:
            times[path.relative_to(root).with_suffix("").as_posix()] = sum(seconds) / len(seconds)
    return times


@dataclass(frozen=True)
class LoggedJob:
    """One finished job of a Snakemake log: its id, rule, inputs and outputs, start and finish
    (whole seconds since the run's first stamp, as the log writes them)."""

    jobid: int
    rule: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def snakemake_log_jobs(path: str | os.PathLike) -> tuple[list[LoggedJob], dict[str, float]]:
    """The finished jobs of a Snakemake log (``.snakemake/log/*.snakemake.log``), in finishing order,
    and the run's ``elapsed`` seconds and ``cores`` where the log states them. A job that started but
    never finished (failed, or the run was stopped) is not listed."""
    import re
    from datetime import datetime

    text = Path(path).read_text(errors="replace")
    stamp = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$", re.M)
    parts = stamp.split(text)
    started: dict[int, tuple[str, tuple[str, ...], tuple[str, ...], datetime]] = {}
    finished: list[tuple[int, datetime]] = []
    origin: datetime | None = None

    def files(block: str, key: str) -> tuple[str, ...]:
        match = re.search(rf"^\s+{key}: (.*)$", block, re.M)
        return tuple(f.strip() for f in match.group(1).split(",") if f.strip()) if match else ()

    for when, block in zip(parts[1::2], parts[2::2], strict=True):
        at = datetime.strptime(" ".join(when.split()), "%a %b %d %H:%M:%S %Y")
        origin = origin or at
        head = re.match(r"\s*(?:local)?(?:checkpoint|rule) (\w+):", block)
        number = re.search(r"^\s+jobid: (\d+)$", block, re.M)
        if head and number:
            started[int(number.group(1))] = (head.group(1), files(block, "input"), files(block, "output"), at)
        finished += [(int(done), at) for done in re.findall(r"^Finished jobid: (\d+)", block, re.M)]
    jobs = []
    for jobid, at in finished:
        if jobid in started and origin is not None:
            rule, inputs, outputs, begin = started[jobid]
            jobs.append(
                LoggedJob(jobid, rule, inputs, outputs, (begin - origin).total_seconds(), (at - origin).total_seconds())
            )
    run: dict[str, float] = {}
    elapsed = re.search(r"^Elapsed time: (\d+):(\d\d):(\d\d(?:\.\d+)?)", text, re.M)
    if elapsed:
        h, m, s = elapsed.groups()
        run["elapsed"] = int(h) * 3600 + int(m) * 60 + float(s)
    cores = re.search(r"^Provided cores: (\d+)", text, re.M)
    if cores:
        run["cores"] = float(cores.group(1))
    return jobs, run


def calibration_file() -> Path | None:
    """Where ``wordsens plan --calibrate`` stores this machine's time calibration: ``$WORDSENS_CALIBRATION``
    (``none``: no stored calibration, the built-in one), else
    ``$XDG_CACHE_HOME/wordsens/calibration.json`` (``~/.cache/wordsens/calibration.json``)."""
    chosen = os.environ.get("WORDSENS_CALIBRATION")
    if chosen is not None:
        return None if chosen.lower() in ("", "none") else Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "wordsens" / "calibration.json"
