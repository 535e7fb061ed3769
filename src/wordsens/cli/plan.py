"""``wordsens plan``: print the planned grid: jobs, hours, memory, devices, the jobs left out, when the run ends

Load config.yaml, --configfile files and --config values the way Snakemake does: validated against
workflow/schemas/config.schema.yaml with its defaults filled, then checked across keys. Print, before anything
runs, the jobs per map and figure with their estimated hours, peak memory and device, the jobs that cannot fit
this machine (limits.memory_gb, limits.gpu_memory_gb, limits.max_job_hours), which the workflow leaves out
(limits.unfit: skip) or refuses (fail), and the expected wall time of the run on --cores cores with its critical
path (docs/cli.md)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from ..arguments import add_command


def _cores(text: str) -> int:
    """A positive number of cores."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of cores, got {text!r}")
    return int(text)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    """The ``plan`` subcommand and its options, which ``plan_text`` takes."""
    plan = add_command(sub, "plan", __doc__)
    plan.add_argument("--configfile", nargs="*", default=[], help="config files merged over config.yaml, in order")
    plan.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="values merged over the files, as snakemake --config reads them, e.g. 'limits={memory_gb: 8}'",
    )
    plan.add_argument("--base", default="config.yaml", help="the base configuration (default config.yaml)")
    plan.add_argument(
        "--cores",
        type=_cores,
        default=os.cpu_count() or 1,
        help="cores the run's wall time is planned for (default: this machine's)",
    )
    plan.add_argument(
        "--gpu",
        nargs="?",
        type=float,
        const=80.0,
        default=None,
        metavar="GB",
        help="plan for one GPU with GB of memory (default 80) where limits.gpu_memory_gb is auto: the device auto "
        "jobs that finish sooner there (weighed against --cores) go there, 2 at once while their GPU memory fits",
    )
    plan.add_argument(
        "--calibrate",
        nargs="+",
        default=None,
        metavar="RESULTS_DIR|LOG",
        help="fit the time model on finished runs of this configuration (results folders with benchmarks/, "
        "Snakemake logs .snakemake/log/*.log), store it (WORDSENS_CALIBRATION, else ~/.cache/wordsens/"
        "calibration.json) and print predicted against measured seconds",
    )
    plan.add_argument(
        "--probe",
        action="store_true",
        help="time a small probe of this machine's speed (about 5 s, one thread) and scale the built-in time "
        "model by it (a stored fit keeps its coefficients); stored like --calibrate",
    )


def run(args: argparse.Namespace) -> str:
    """What ``plan_text`` prints for ``args``, ``--config`` read by Snakemake's own parser. The planner and
    Snakemake are imported only here."""
    from ..pipeline import plan_text

    # Snakemake's own parser (imported only when used: importing snakemake.cli takes seconds)
    overrides = __import__("snakemake.cli").cli.parse_config(args.config) if args.config else {}
    probe: Callable[[], float] | None = None
    if args.probe:  # the probe times a search: planning itself never imports the searches
        from ..search.probe import probe_seconds

        probe = probe_seconds
    return plan_text([args.base, *args.configfile], overrides, args.cores, args.gpu, args.calibrate, probe) + "\n"
