# Helpers shared by the rules: paths, the job grid, per-job resources, config checks.
import hashlib
import json
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError

from wordsens import plan as wsplan
from wordsens import NUMERICS_VERSION

RES = config["results"].rstrip("/")
RSRC = config["resources"].rstrip("/")
DEMO_MODEL = "demo-tiny-bert"


def model_tag():
    """Folder name of the encoder: changing the model (or layer) gives new files, never an overwrite."""
    name = config["model"]["name"]
    if name == DEMO_MODEL:
        return DEMO_MODEL
    path = Path(name).expanduser()
    if path.exists():
        digest = hashlib.blake2b(str(path.resolve()).encode(), digest_size=4).hexdigest()
        return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', path.name)}-{digest}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def model_files():
    """Files of a local model, as rule inputs (a rebuilt or edited model re-runs its consumers)."""
    name = config["model"]["name"]
    if name == DEMO_MODEL:
        return [f"{RSRC}/demo/tiny-bert/config.json"]
    path = Path(name).expanduser()
    return [str(path / "config.json")] if (path / "config.json").exists() else []


def model_width():
    """Hidden size from a local config.json (local folder, demo or Hugging Face cache), else None."""
    name = config["model"]["name"]
    if name == DEMO_MODEL:
        return 64
    candidates = [Path(name).expanduser() / "config.json"]
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            candidates.append(Path(cached))
    except Exception:
        pass
    for candidate in candidates:
        if candidate.is_file():
            return int(json.loads(candidate.read_text()).get("hidden_size", 0)) or None
    return {"bert-base-uncased": 768, "bert-base-cased": 768, "bert-large-uncased": 1024}.get(name)


EMB = f"{RSRC}/embeddings/{model_tag()}/layer{config['model']['layer']}"
EMB_FILES = [f"{EMB}/hidden.npy", f"{EMB}/index.parquet", f"{EMB}/meta.json"]


def check_config():
    """Refuse bad configurations before any job runs, naming the key."""
    problems = []
    data, model, ws = config["data"], config["model"], config["ws"]
    if data["pool_size"] % 2:
        problems.append(f"data.pool_size must be even (half per label), got {data['pool_size']}")
    if data["source"] in ("aclimdb", "tarball", "parquet") and not data.get("path"):
        problems.append(f"data.source {data['source']} needs data.path")
    grids = {m: g for m, g in (ws.get("maps") or {}).items() if g}
    gen = config.get("gen") or {}
    if not grids and not (gen.get("fig4") or gen.get("fig5")):
        problems.append("ws.maps is empty and gen has no figure: give at least one map with its d and n lists")
    for figure in ("fig4", "fig5"):
        fig = gen.get(figure) or {}
        for map_name, ns in (fig.get("maps") or {}).items():
            if "imdb" in gen.get("data", []):
                too_long = [n for n in ns or [] if n > model["max_length"]]
                if too_long:
                    problems.append(f"gen.{figure}.maps.{map_name} has n = {too_long} > model.max_length")
            if gen.get("position", 0) >= min(ns or [1]):
                problems.append(f"gen.position {gen.get('position')} is beyond n = {min(ns)} of gen.{figure}.maps.{map_name}")
        if "imdb" in gen.get("data", []) and fig.get("N"):
            if max(fig["N"]) + 1 > data["pool_size"]:
                problems.append(f"gen.{figure}.N = {max(fig['N'])} needs data.pool_size >= {max(fig['N']) + 1}")
    if "imdb" in gen.get("data", []) and (gen.get("fig4") or gen.get("fig5")):
        width = model_width()
        if width is not None and gen.get("d", 768) > width:
            problems.append(f"gen.d = {gen.get('d')} > the model width {width} ({model['name']})")
    width = model_width() if ws["data"] == "imdb" else None
    for map_name, grid in grids.items():
        if ws["data"] == "imdb":
            too_long = [n for n in grid["n"] if n > model["max_length"]]
            if too_long:
                problems.append(f"ws.maps.{map_name}.n has {too_long} > model.max_length = {model['max_length']}")
            if width is not None:
                too_wide = [d for d in grid["d"] if d > width]
                if too_wide:
                    problems.append(f"ws.maps.{map_name}.d has {too_wide} > the model width {width} ({model['name']})")
        position = ws["position"]
        if position != "all":
            if not isinstance(position, int) or position < 0:
                problems.append(f"ws.position must be a token index >= 0 or 'all', got {position!r}")
            elif position >= min(grid["n"]):
                problems.append(f"ws.position {position} is beyond the smallest n = {min(grid['n'])} of ws.maps.{map_name}")
    probes = config["probes"]
    f3 = probes["fig3"]
    if probes["enabled"] and f3["text"] is None and f3["token"] > f3["min_tokens"]:
        problems.append(f"probes.fig3.token {f3['token']} is beyond the default text's probes.fig3.min_tokens = "
                        f"{f3['min_tokens']} tokens; raise min_tokens or lower the token")
    lm = probes["lm"]
    if lm["enabled"] and lm["model"] != "demo-tiny-lm" and not Path(lm["model"]).expanduser().exists():
        from wordsens.data import hub_reachable

        if not hub_reachable():
            problems.append(f"probes.lm.model {lm['model']!r} is not a local folder and the Hugging Face Hub is not "
                            "reachable: point probes.lm.model at a local causal LM or set probes.lm.enabled: false")
    if problems:
        listing = "\n  ".join(problems)
        raise WorkflowError(f"invalid configuration:\n  {listing}")


check_config()

# ----------------------------------------------------------------------------- the WS job grid
_ALL_WS_JOBS = wsplan.ws_jobs(config)
_LIMIT = wsplan.memory_limit_bytes(config)
_FIT, _UNFIT = wsplan.split_fit(_ALL_WS_JOBS, _LIMIT)
# --lint checks the workflow's code, not whether this machine can run its grid
_LINTING = "--lint" in sys.argv
if _UNFIT:
    if config["limits"]["unfit"] == "fail" and not _LINTING:
        raise WorkflowError(wsplan.unfit_message(_UNFIT, _LIMIT))
    print(f"leaving out (limits.unfit = skip):\n{wsplan.unfit_message(_UNFIT, _LIMIT)}", file=sys.stderr)
WS_JOBS = {(job.map, job.setting, job.chunk): job for job in _FIT}


def ws_chunk_files(map_name):
    return [f"{RES}/ws/{m}/{s}/chunk{c}.parquet" for (m, s, c) in WS_JOBS if m == map_name]


def ws_maps():
    return sorted({m for (m, _, _) in WS_JOBS})


def ws_job(wildcards):
    try:
        return WS_JOBS[(wildcards.map, wildcards.setting, int(wildcards.chunk))]
    except KeyError:
        raise WorkflowError(f"no word-sensitivity job {wildcards.map}/{wildcards.setting}/chunk{wildcards.chunk} "
                            "in this configuration") from None


def canonical(obj):
    """Params with sorted keys: Snakemake compares params as text, and the order of keys in a
    config file (or after a --configfile merge) must not trigger re-runs."""
    if isinstance(obj, dict):
        return {key: canonical(obj[key]) for key in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [canonical(value) for value in obj]
    return obj


def ws_params(wildcards):
    """The configuration slice one WS job depends on (its params: a change re-runs exactly it)."""
    job = ws_job(wildcards)
    ws = config["ws"]
    return canonical({
        "map": job.map, "d": job.d, "n": job.n, "L": job.L, "trials": list(job.trials), "seed": config["seed"],
        "data": ws["data"], "threads": ws["threads"],
        "settings": {"position": ws["position"], "method": ws["method"], "device": ws["device"],
                     "min_tokens": ws["min_tokens"], "search": dict(ws["search"])},
        "numerics_version": NUMERICS_VERSION,
    })


def ws_mem_mb(wildcards):
    return max(256, -(-ws_job(wildcards).memory_bytes // 1024**2))


def ws_runtime(wildcards):
    """Minutes: generous (5x the estimate + 5 minutes)."""
    return int(5 + 5 * ws_job(wildcards).seconds / 60)


def ws_inputs(wildcards):
    return EMB_FILES if config["ws"]["data"] == "imdb" else []


def figure_files(stem):
    return [f"{RES}/figures/{stem}.{ext}" for ext in config["plots"]["formats"]]


def reviews_inputs(wildcards):
    data = config["data"]
    if data["source"] == "demo":
        return [f"{RSRC}/demo/aclImdb"]
    if data.get("path") and Path(data["path"]).expanduser().exists():
        return [str(Path(data["path"]).expanduser())]
    return []


def embed_mem_mb(wildcards):
    m, d = config["model"], config["data"]
    width = model_width() or 1024
    store = d["pool_size"] * m["max_length"] * width * (2 if m["dtype"] == "float16" else 4)
    batch = m["batch_size"] * m["max_length"] * width * 4 * 40  # activations of one forward pass
    return int((2 * store + batch) / 1024**2) + 2048  # + the model and the interpreter


def tables_for(maps):
    return {m: f"{RES}/tables/ws_{m}.parquet" for m in maps if m in ws_maps()}


def final_outputs():
    out = [f"{RES}/tables/ws_{m}.parquet" for m in ws_maps()]
    out += probe_outputs()
    for figure, data in gen_figures():
        out.append(f"{RES}/tables/gen_{figure}_{data}.parquet")
        stem = "fig4_generalisation" if figure == "fig4" else "fig5_penalised"
        out += figure_files(f"{stem}_{data}")
    if {"rf", "drf"} & set(ws_maps()):
        out += figure_files("fig2_rf_drf") + figure_files("fig2_rf_drf_scaled")
    if {"raf", "relu_raf"} & set(ws_maps()):
        out += figure_files("fig3_raf_relu_raf") + figure_files("fig3_raf_relu_raf_scaled")
    return out


# ----------------------------------------------------------------------------- generalisation jobs
_ALL_GEN_JOBS = wsplan.gen_jobs(config)
_GEN_FIT, _GEN_UNFIT = wsplan.split_fit(_ALL_GEN_JOBS, _LIMIT)
if _GEN_UNFIT:
    if config["limits"]["unfit"] == "fail" and not _LINTING:
        raise WorkflowError(wsplan.unfit_message(_GEN_UNFIT, _LIMIT))
    print(f"leaving out (limits.unfit = skip):\n{wsplan.unfit_message(_GEN_UNFIT, _LIMIT)}", file=sys.stderr)
GEN_JOBS = {(job.figure, job.data, job.setting, job.chunk): job for job in _GEN_FIT}


def gen_job(wildcards):
    try:
        return GEN_JOBS[(wildcards.figure, wildcards.gdata, wildcards.gsetting, int(wildcards.chunk))]
    except KeyError:
        raise WorkflowError(
            f"no generalisation job {wildcards.figure}/{wildcards.gdata}/{wildcards.gsetting}/chunk{wildcards.chunk}"
        ) from None


def gen_params(wildcards):
    job = gen_job(wildcards)
    gen = config["gen"]
    return canonical({
        "figure": job.figure, "map": job.map, "n": job.n, "N": job.N, "d": job.d, "data": job.data,
        "simulations": list(job.simulations), "searches": [list(s) for s in job.searches], "seed": config["seed"],
        "threads": gen["threads"],
        "settings": {"position": gen["position"], "device": gen["device"], "min_tokens": gen["min_tokens"],
                     "search": dict(gen["search"])},
        "numerics_version": NUMERICS_VERSION,
    })


def gen_mem_mb(wildcards):
    return max(256, -(-gen_job(wildcards).memory_bytes // 1024**2))


def gen_runtime(wildcards):
    return int(5 + 5 * gen_job(wildcards).seconds / 60)


def gen_inputs(wildcards):
    return EMB_FILES if wildcards.gdata == "imdb" else []


def gen_chunk_files(figure, data):
    return [f"{RES}/gen/{f}/{g}/{s}/chunk{c}.parquet" for (f, g, s, c) in GEN_JOBS if f == figure and g == data]


def gen_figures():
    """(figure, data) pairs with at least one job."""
    return sorted({(f, g) for (f, g, _, _) in GEN_JOBS})


def gen_columns(figure):
    """Panel order of a generalisation figure: RF, RAF, ReLU-RAF, each by increasing n (the
    paper's order, whatever the order of keys in the config files)."""
    maps_ = (config["gen"].get(figure) or {}).get("maps") or {}
    order = ["rf", "raf", "relu_raf"]
    return [[m, int(n)] for m in order for n in sorted(maps_.get(m) or [])]


# ----------------------------------------------------------------------------- probes
DEMO_LM = "demo-tiny-lm"


def probe_model_name():
    return config["probes"]["model"] or config["model"]["name"]


def _model_files_for(name, demo_path):
    if name in (DEMO_MODEL, DEMO_LM):
        return [f"{RSRC}/demo/{demo_path}/config.json"]
    path = Path(name).expanduser()
    return [str(path / "config.json")] if (path / "config.json").exists() else []


def probe_model_files():
    return _model_files_for(probe_model_name(), "tiny-bert")


def lm_model_files():
    return _model_files_for(config["probes"]["lm"]["model"], "tiny-lm")


def probe_pool():
    """The review pool, when panel 3's text is drawn from it."""
    if config["probes"]["fig3"]["text"] is None:
        return [f"{RSRC}/pools/{model_tag()}/pool.parquet"]
    return []


def probe_mem_mb(wildcards):
    return 4096


def lm_mem_mb(wildcards):
    return 32000 if config["probes"]["lm"]["model"] != DEMO_LM else 2048


def probe_outputs():
    probes = config["probes"]
    out = []
    if probes["enabled"]:
        out += [f"{RES}/tables/fig1_attention.csv", f"{RES}/tables/fig3_layer_changes.csv"]
        out += figure_files("fig1_attention") + figure_files("fig3_panel3_layer_changes")
        out += figure_files("fig3_panel4_scores")
    if probes["lm"]["enabled"]:
        out += [f"{RES}/tables/fig1_lm_answers.csv"] + figure_files("fig1_lm_answers")
    return out
