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
MAP_LABELS = {"rf": "RF", "drf": "DRF", "raf": "RAF", "relu_raf": "ReLU-RAF"}


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
    if not grids:
        problems.append("ws.maps is empty: give at least one map with its d and n lists")
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
    if problems:
        listing = "\n  ".join(problems)
        raise WorkflowError(f"invalid configuration:\n  {listing}")


check_config()

# ----------------------------------------------------------------------------- the WS job grid
_ALL_WS_JOBS = wsplan.ws_jobs(config)
_LIMIT = wsplan.memory_limit_bytes(config)
_FIT, _UNFIT = wsplan.split_fit(_ALL_WS_JOBS, _LIMIT)
if _UNFIT:
    if config["limits"]["unfit"] == "fail":
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
    if {"rf", "drf"} & set(ws_maps()):
        out += figure_files("fig2_rf_drf") + figure_files("fig2_rf_drf_scaled")
    if {"raf", "relu_raf"} & set(ws_maps()):
        out += figure_files("fig3_raf_relu_raf") + figure_files("fig3_raf_relu_raf_scaled")
    return out
