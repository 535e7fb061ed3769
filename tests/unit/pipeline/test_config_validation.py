"""A configuration's problems in one pass (the schema's, the cross-key checks and what this machine
cannot give, each once with its key and its fix), and the text Snakemake makes of ``--config`` values
read as the schema wants it (``'32'`` as 32), through the loader and through Snakemake itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_utils import WS_ONLY, copy_workflow, demo_config, snakemake, write_config

from wordsens import pipeline
from wordsens.pipeline.schema import coerce_text

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"
FIX = "point data.path at your copy (e.g. --config 'data={source: parquet, path: "


def _demo(changes: dict | None = None) -> dict:
    """config.yaml with config/demo.yaml and ``changes`` merged over it, not yet checked."""
    return demo_config(changes, check=False)


def _problems(config: dict) -> list[str]:
    with pytest.raises(pipeline.ConfigError) as info:
        pipeline.check(config)
    assert str(info.value).count("\n") == len(info.value.problems)  # a header, then one line each
    return info.value.problems


# ----------------------------------------------------------------------------- one pass
def test_a_typo_a_negative_n_and_a_missing_copy_in_one_message(tmp_path):
    """The schema's two problems and the machine's one (a local copy that is not there) together,
    each with its key and its fix; each fix leaves the others in the message."""
    missing = tmp_path / "imdb" / "train.parquet"
    typo = {"ws": {"trails": 3}}
    negative = {"ws": {"maps": {"raf": {"n": [-4, 8]}}}}
    copy = {"data": {"source": "parquet", "path": str(missing)}}
    problems = _problems(_demo(pipeline.merge(pipeline.merge(typo, negative), copy)))
    assert problems[:2] == [
        "ws.trails: unknown key; did you mean ws.trials?",
        "ws.maps.raf.n.0: -4 is less than the minimum of 1 -- Context lengths.",
    ]
    assert len(problems) == 3 and problems[2].startswith(f"data.path {str(missing)!r} does not exist")
    assert FIX in problems[2] and problems[2].endswith("or set data.source: hub")
    assert _problems(_demo(pipeline.merge(negative, copy))) == problems[1:]
    assert _problems(_demo(pipeline.merge(typo, copy))) == [problems[0], problems[2]]
    missing.parent.mkdir()
    missing.write_bytes(b"")
    assert _problems(_demo(pipeline.merge(typo, negative))) == problems[:2]
    assert pipeline.check(_demo(copy))["data"]["path"] == str(missing)


@pytest.mark.slow
def test_snakemake_names_the_three_in_one_message(tmp_path):
    """The same three mistakes in a --configfile: Snakemake stops before any job with one message."""
    workdir = copy_workflow(tmp_path / "wf")
    changes = {
        "ws": {"trails": 3, "maps": {"raf": {"n": [-4, 8]}}},
        "data": {"source": "parquet", "path": "nowhere/train.parquet"},
    }
    cf = write_config(workdir, "three.yaml", str(DEMO.relative_to(ROOT)), changes)
    out = snakemake(workdir, "-n", "--configfile", cf, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and text.count("invalid configuration:") == 1, text[-3000:]
    block = [line.strip() for line in text[text.index("invalid configuration:") :].splitlines()[1:4]]
    assert block[:2] == [
        "ws.trails: unknown key; did you mean ws.trials?",
        "ws.maps.raf.n.0: -4 is less than the minimum of 1 -- Context lengths.",
    ]
    assert block[2].startswith(f"data.path 'nowhere/train.parquet' does not exist (from {workdir}): {FIX}")


def test_validate_names_the_schemas_and_the_cross_key_problems_together():
    """``validate`` (no plugins, no machine) also runs the cross-key checks where the schema refuses
    a key: a cross-key problem of a key the schema accepted is named beside the schema's."""
    changes = {"limits": {"unfit": "maybe"}, "trained": {"head_reviews": 6}}
    with pytest.raises(pipeline.ConfigError) as info:
        pipeline.validate(_demo(changes))
    problems = info.value.problems
    assert len(problems) == 2 and problems[0].startswith("limits.unfit: 'maybe' is not one of ['skip', 'fail']")
    assert problems[1].startswith("trained.head_reviews = 6 > trained.reviews = 5")


def test_a_refused_key_is_not_named_again_by_the_other_checks(monkeypatch):
    """The cross-key checks run without the refused keys: what they then find about those keys (a
    grid removed, a map unknown without its plugin) is the schema's problem, said once."""
    only_raf = {"ws": {"maps": {"rf": None, "drf": None, "relu_raf": None, "raf": {"n": [0]}}}}
    # with raf's grid refused, ws.maps has nothing left, and ws.position 9 is beyond nothing
    problems = _problems(_demo(pipeline.merge(only_raf, {"ws": {"position": 9}})))
    assert problems == ["ws.maps.raf.n.0: 0 is less than the minimum of 1 -- Context lengths."]
    # plugins refused: the plugin's map is not called unknown
    plugin_map = {"plugins": "tests/plugins/toy_map.py", "ws": {"maps": {"toy": {"d": [8], "n": [4]}}}}
    problems = _problems(_demo(plugin_map))
    assert len(problems) == 1 and problems[0].startswith("plugins: 'tests/plugins/toy_map.py' is not of type 'array'")
    # a cross-key problem elsewhere is still named
    problems = _problems(_demo(pipeline.merge(plugin_map, {"gen": {"d": 128}})))
    assert problems[1:] == ["gen.d = 128 > the model width 64 (demo-tiny-bert): lower gen.d"]
    # a plugin that cannot be imported: its line, and no "unknown map" for the map it would register
    monkeypatch.setenv("WORDSENS_PLUGINS", "")
    missing = pipeline.merge(plugin_map, {"plugins": ["/no/such/plugin.py"], "gen": {"d": 128}})
    problems = _problems(_demo(missing))
    assert len(problems) == 2 and problems[0].startswith("plugins: ") and "/no/such/plugin.py" in problems[0]
    assert problems[1].startswith("gen.d = 128")


# ----------------------------------------------------------------------------- --config text
def _given(config: dict, given: dict) -> dict:
    """``given`` merged over ``config`` and read as ``check`` reads Snakemake's --config values."""
    merged = pipeline.merge(config, given)
    coerce_text(merged, given)
    return merged


def test_config_text_is_read_as_the_schema_wants_it():
    """What ``snakemake --config`` hands over (nested values as text: ``'trained={n: [32]}'`` gives
    ``{"n": ["32"]}``) becomes the number, boolean or null the schema wants there; text the schema
    wants stays text."""
    given = {
        "trained": {"n": ["32"], "head_n": "32"},
        "ws": {
            "maps": {"raf": {"d": ["16"], "n": ["8"]}, "mh_raf": {"d": ["16"], "n": ["8"], "options": {"heads": "2"}}},
            "trials": "2",
            "search": {"tol": "1e-6", "max_steps": "50"},
        },
        "limits": {"memory_gb": "250", "max_job_hours": "null"},
        "probes": {"enabled": "False", "fig3": {"text": "null"}},
        "plots": {"palette": "123", "dpi": "100"},
        "variants": "null",
    }
    config = _given(_demo(), given)
    assert config["trained"]["n"] == [32] and config["trained"]["head_n"] == 32
    assert config["ws"]["maps"]["raf"] == {"d": [16], "n": [8]} and config["ws"]["trials"] == 2
    assert config["ws"]["maps"]["mh_raf"]["options"] == {"heads": 2}  # a map's options: as YAML reads them
    assert config["ws"]["search"]["tol"] == 1e-6 and config["ws"]["search"]["max_steps"] == 50
    assert config["limits"]["memory_gb"] == 250 and config["limits"]["max_job_hours"] is None
    assert config["probes"]["enabled"] is False and config["probes"]["fig3"]["text"] is None
    assert config["plots"]["palette"] == "123" and config["plots"]["dpi"] == 100 and config["variants"] is None
    checked = pipeline.check(config)
    assert [j.params["n"] for j in pipeline.Grid(checked).jobs if j.rule == "trained"] == [[32], [32]]
    # ws.position: an integer or the text "all"
    assert _given(_demo(), {"ws": {"position": "3"}})["ws"]["position"] == 3
    assert _given(_demo(), {"ws": {"position": "all"}})["ws"]["position"] == "all"
    # only what --config gave: a file's quoted "2" is left to the schema
    assert _given(_demo({"ws": {"trials": "2"}}), {"seed": 3})["ws"]["trials"] == "2"


def test_config_text_that_is_no_number_is_named_with_its_key():
    given = {"trained": {"n": ["-1", "abc"], "head_n": "1.5"}, "ws": {"position": "x"}, "probes": {"enabled": "yes"}}
    problems = _problems(_given(_demo(), given))
    assert problems[0].startswith("probes.enabled: 'yes' is not of type 'boolean'")  # YAML 1.1's, not 1.2's
    assert problems[1].startswith("trained.head_n: '1.5' is not of type 'integer', 'null'")
    assert problems[2].startswith("trained.n.0: -1 is less than the minimum of 1")  # read, then refused
    assert problems[3].startswith("trained.n.1: 'abc' is not of type 'integer'")
    assert problems[4].startswith("ws.position: 'x' is not valid under any of the given schemas")
    assert len(problems) == 5


@pytest.mark.slow
def test_snakemake_config_values_reach_the_jobs(tmp_path):
    """A dry run with ``--config 'trained={n: [32]}'`` and a ``ws`` grid override: the configuration
    is accepted and the grid's jobs are the ones given (d = 16, n = 6, two trials in one job each)."""
    workdir = copy_workflow(tmp_path / "wf")
    changes = {
        **WS_ONLY,
        "results": "results/text",
        "ws": {"maps": {"rf": None, "drf": None, "relu_raf": None, "raf": {"d": [32], "n": [4]}}},
        "trained": {"layers": [1], "n": [8], "head_n": None, "reviews": 1, "maps": ["trained_attention"]},
    }
    cf = write_config(workdir, "text.yaml", str(DEMO.relative_to(ROOT)), changes)
    grid = "ws={maps: {raf: {d: [16], n: [6]}}, trials: 2, trials_per_job: 1}"
    out = snakemake(workdir, "-n", "--configfile", cf, "--config", "trained={n: [32]}", grid, check=False)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert text.count("setting=d16_n6") == 2 and "d32_n4" not in text  # one job per trial
    assert "rule trained:" in text and "layer=1" in text
