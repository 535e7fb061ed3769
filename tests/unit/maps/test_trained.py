"""The maps of a pre-trained checkpoint (wordsens.maps.trained, wordsens.data.checkpoint): both maps against
the transformers modules of every layer of the demo's tiny BERT and of one layer of the packaged MiniLM, the
fast search of ``trained_attention`` against the plain map (value and gradient) and the estimate against the
authors' algorithm, the CLI, and bad input."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from wordsens import maps, search
from wordsens.data import checkpoint, demo, models
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry
from wordsens.maps.trained import ATTENTION_KEYS
from wordsens.search import SearchContext

ROOT = Path(__file__).resolve().parents[3]
MINILM = models.PACKAGED_MODELS["minilm"]
needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec(MINILM.module) is None,
    reason=f'{MINILM.distribution} is not installed (pip install -e ".[pretrained]")',
)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """These searches run on one torch thread (``one_thread`` in conftest.py)."""


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    """The demo's tiny random BERT, as the workflow builds it (2 layers, width 64, 4 heads)."""
    return str(demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny"))


def _attention(W: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: W[key] for key in ATTENTION_KEYS}


def _against_transformers(model: str, layer: int, n: int) -> None:
    encoder = checkpoint.load_checkpoint(model, attentions=True)
    block = checkpoint.encoder_layer(encoder, layer)
    d = int(encoder.config.hidden_size)
    h = int(encoder.config.num_attention_heads)
    W = checkpoint.layer_weights(model, layer)
    X = torch.randn(2, n, d, generator=torch.Generator().manual_seed(layer)) * 2.0
    with torch.no_grad():
        heads = block.attention.self(X)[0]  # (2, n, d): every head's output, concatenated
        sublayer = block.attention.output.dense(heads)
        whole = block(X)
        whole = whole[0] if isinstance(whole, tuple) else whole
        ours = maps.trained_attention(X, _attention(W))
        torch.testing.assert_close(ours, sublayer, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(maps.trained_layer(X, W), whole, rtol=1e-5, atol=1e-5)
        dh = d // h
        for head in (1, h):
            one = checkpoint.trained_attention_weights(0, n, d, model=model, layer=layer, head=head)
            assert set(one) == set(ATTENTION_KEYS[:6]) and one["Wq"].shape == (1, d, dh)
            torch.testing.assert_close(
                maps.trained_attention(X, one), heads[..., (head - 1) * dh : head * dh], rtol=1e-5, atol=1e-5
            )
    # the residual and LayerNorm are the layer's, not the sublayer's: the two maps differ
    assert not torch.allclose(ours, whole, atol=1e-2)


def test_both_maps_equal_every_layer_of_the_tiny_bert(tiny_bert):
    for layer in (1, 2):
        _against_transformers(tiny_bert, layer, n=9)


@needs_minilm
def test_both_maps_equal_a_layer_of_minilm():
    _against_transformers("minilm", 4, n=12)
    W = checkpoint.trained_layer_weights(0, 5, 384, model="minilm", layer=4)
    assert W["Wq"].shape == (12, 384, 32) and W["W1"].shape == (384, 1536) and float(W["eps"]) == pytest.approx(1e-12)


def test_options_and_weights_are_checked_before_any_search(tiny_bert):
    X = synthetic_sample(6, 64, seed=0)
    with pytest.raises(ValueError, match="d = 64, got d = 32; set d = 64"):
        checkpoint.trained_attention_weights(0, 6, 32, model=tiny_bert, layer=1)
    with pytest.raises(ValueError, match=r"layer must be in \[1, 2\]"):
        search.estimate("trained_layer", X, seed=0, options={"model": tiny_bert, "layer": 3})
    with pytest.raises(ValueError, match=r"head must be in \[1, 4\]"):
        search.estimate("trained_attention", X, seed=0, options={"model": tiny_bert, "head": 5})
    with pytest.raises(ValueError, match="must be a positive integer"):
        search.estimate("trained_attention", X, seed=0, options={"model": tiny_bert, "layer": 0})
    with pytest.raises(ValueError, match="neither a local folder nor reachable"):
        checkpoint.layer_weights(str(Path(tiny_bert) / "no_such_model"), 1)
    W = checkpoint.layer_weights(tiny_bert, 1)
    with pytest.raises(ValueError, match="must be a dict with the tensors"):
        maps.trained_attention(X.float(), {key: W[key] for key in ATTENTION_KEYS[:7]})  # Wo without bo
    with pytest.raises(ValueError, match=r"d = 32 \(the width of X\)"):
        maps.trained_layer(X[:, :32].float(), W)
    bad = dict(W, eps=torch.tensor(0.0))
    with pytest.raises(ValueError, match="eps > 0"):
        maps.trained_layer(X.float(), bad)
    bad = dict(W, b1=W["b1"][:-1])
    with pytest.raises(ValueError, match="'b1' has shape"):
        maps.trained_layer(X.float(), bad)


def test_eps_may_be_the_models_own_float(tiny_bert):
    """``config.layer_norm_eps`` is a Python float: ``trained_layer`` takes it as given, or as a 0-d
    tensor, and both equal the transformers layer in float64 (to 1e-13); the estimate takes it too."""
    encoder = checkpoint.load_checkpoint(tiny_bert).double()
    block = checkpoint.encoder_layer(encoder, 2)
    eps = encoder.config.layer_norm_eps
    assert isinstance(eps, float)
    W = {key: value.double() for key, value in checkpoint.layer_weights(tiny_bert, 2).items()}
    X = torch.randn(2, 9, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(5)) * 2.0
    with torch.no_grad():
        whole = block(X)
        whole = whole[0] if isinstance(whole, tuple) else whole
        for value in (eps, torch.tensor(eps, dtype=torch.float64)):
            torch.testing.assert_close(maps.trained_layer(X, dict(W, eps=value)), whole, rtol=0, atol=1e-13)
    options = {"model": tiny_bert, "layer": 2}
    by_number, by_tensor = (
        search.estimate("trained_layer", X[0], seed=0, weights=dict(W, eps=value), options=options, max_steps=20)
        for value in (eps, torch.tensor(eps, dtype=torch.float64))
    )
    assert by_number.lower == by_tensor.lower > 0
    for value, message in ((float("inf"), "'eps' is inf; give a finite number"), (-1.0, "eps > 0")):
        with pytest.raises(ValueError, match=message):
            maps.trained_layer(X, dict(W, eps=value))


def test_registry_entries_and_studies_of_every_map(tiny_bert):
    from wordsens.pipeline.points import variant_maps

    for name in ("trained_attention", "trained_layer"):
        spec = registry.get(name)
        assert name in maps.names() and spec.checkpoint and spec.options["model"] == "minilm"
        X = synthetic_sample(3, 64, seed=1).float()
        weights = maps.sample_weights(name, 0, 3, 64, model=tiny_bert, layer=2)
        assert torch.equal(getattr(maps, name)(X, weights), maps.apply(name, X, weights))
    assert registry.get("trained_attention").fast is not None and registry.get("trained_layer").fast is not None
    every = variant_maps({"maps": "all"})  # the random maps' study leaves the checkpoint's maps out
    built = {"trained_attention", "trained_layer", "matched_attention", "matched_layer", "ln_block"}
    assert "mh_raf" in every and not built & set(every)
    assert all(registry.get(name).checkpoint for name in built)


def test_a_grid_naming_a_trained_map_is_refused_before_any_job():
    import yaml

    from wordsens import pipeline

    config = pipeline.merge(
        yaml.safe_load((ROOT / "config.yaml").read_text()), yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    )
    pipeline.validate(config)  # the demo as shipped
    for changes, key in (
        ({"variants": {"maps": ["mh_raf", "trained_attention"]}}, "variants.maps (trained_attention)"),
        ({"ws": {"maps": {"raf": None, "trained_layer": {"d": [64], "n": [8]}}}}, "ws.maps.trained_layer"),
    ):
        with pytest.raises(pipeline.ConfigError) as info:
            pipeline.validate(pipeline.merge(config, changes))
        assert f"{key}: trained_" in str(info.value) and "is a pre-trained checkpoint's layer" in str(info.value)


# --------------------------------------------------------------------------- the searches


@pytest.mark.parametrize("head", [None, 3])
def test_fast_value_and_gradient_against_the_full_map(tiny_bert, head):
    n, d = 7, 64
    X = synthetic_sample(n, d, seed=2)
    W = {
        key: value.double()
        for key, value in checkpoint.trained_attention_weights(0, n, d, model=tiny_bert, layer=2, head=head).items()
    }
    spec = registry.get("trained_attention")
    options = spec.option_values({"model": tiny_bert, "layer": 2, "head": head})
    ctx = SearchContext(spec=spec, dtype=torch.float64, device=torch.device("cpu"), options=options)
    prepare = registry.resolve(spec.fast)(X, 0, W, ctx)
    gen = torch.Generator().manual_seed(4)
    for position in (0, n - 1):
        problem = prepare(position)
        D = 3 * torch.randn(5, d, dtype=torch.float64, generator=gen)
        D[0] = 0.0
        Dg = D.clone().requires_grad_(True)
        onehot = torch.zeros((n, 1), dtype=X.dtype)
        onehot[position] = 1.0
        diff = maps.apply("trained_attention", X + onehot * Dg[:, None, :], W) - maps.apply("trained_attention", X, W)
        full = (diff.flatten(1) ** 2).sum(-1)
        (g_full,) = torch.autograd.grad(full.sum(), Dg)
        value, grad = problem.value_and_grad(D)
        torch.testing.assert_close(value, full.detach(), rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(grad[1:], g_full[1:], rtol=1e-7, atol=1e-8)
        assert problem.phi_norm == pytest.approx(float(maps.apply("trained_attention", X, W).norm()), rel=1e-12)


@pytest.mark.parametrize(
    "name,options",
    [("trained_attention", {"layer": 1}), ("trained_attention", {"layer": 2, "head": 2}), ("trained_layer", {})],
)
def test_estimate_is_at_least_the_reference(tiny_bert, name, options):
    n, d = 6, 64
    options = {"model": tiny_bert, **options}
    X = synthetic_sample(n, d, seed=3)
    W = maps.sample_weights(name, 0, n, d, dtype=torch.float64, **options)
    ours = search.estimate(name, X, seed=0, weights=W, options=options, device="cpu")
    ref = search.estimate(name, X, seed=0, weights=W, options=options, method="reference", device="cpu")
    assert ours.lower >= ref.lower * (1 - 1e-9) and ref.steps == 50 * n, (ours.lower, ref.lower)
    # the weights the options name are those passed: the same estimate without them
    again = search.estimate(name, X, seed=0, options=options, device="cpu")
    assert again.lower == pytest.approx(ours.lower, rel=1e-6)
    assert ours.delta_norm <= math.sqrt(d) * (1 + 1e-12)


@pytest.mark.slow
def test_cli_runs_a_trained_map_offline(tiny_bert):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    common = ["--n", "5", "--option", f"model={tiny_bert}", "--max-steps", "60", "--device", "cpu"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "wordsens.cli",
            "ws",
            "--map",
            "trained_attention",
            "--option",
            "layer=2",
            "--d",
            "64",
            *common,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["map"] == "trained_attention" and result["options"]["layer"] == 2 and result["lower"] > 0
    bad = subprocess.run(
        [sys.executable, "-m", "wordsens.cli", "ws", "--map", "trained_layer", "--d", "32", *common],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert bad.returncode != 0 and "set d = 64" in bad.stderr


# --------------------------------------------------------------------------- the study's rows


def test_layer_inputs_are_the_hidden_states_entering_the_layer(tiny_bert):
    from wordsens.data import embed
    from wordsens.experiments.trained import layer_inputs

    tokenizer, encoder = embed.load_encoder(tiny_bert, "cpu")
    texts = ["a good film with a great cast and a sad story " * 3, "the worst movie i have seen, bad acting " * 3]
    batch = embed.encode(tokenizer, texts, 10)
    with torch.no_grad():
        states = encoder(**batch, output_hidden_states=True).hidden_states
    for layer in (1, 2):
        raw = layer_inputs(tokenizer, encoder, texts, layer=layer, n=10, normalise=False)
        torch.testing.assert_close(raw, states[layer - 1].double(), rtol=1e-5, atol=1e-5)
        X = layer_inputs(tokenizer, encoder, texts, layer=layer, n=10, normalise=True)
        torch.testing.assert_close(X.norm(dim=-1), torch.full((2, 10), 8.0, dtype=torch.float64))
        torch.testing.assert_close(X / X.norm(dim=-1, keepdim=True), raw / raw.norm(dim=-1, keepdim=True))
    with pytest.raises(ValueError, match="fewer than n = 40 tokens"):
        layer_inputs(tokenizer, encoder, texts, layer=1, n=40, normalise=True)


def test_trained_rows_put_each_map_beside_its_counterparts_on_the_same_sample(tiny_bert):
    from wordsens.experiments.trained import trained_rows

    X = synthetic_sample(6, 64, seed=7) * 0.5  # rows of norm 4: the model's own scale differs from the paper's
    common = {"model": tiny_bert, "layer": 2, "heads": 4, "seed": 3, "review": 1, "max_steps": 20}
    rows = trained_rows(X, positions=1, specials=True, draws=2, **common)
    per_row = [
        ("paper", "trained_attention", 0),
        ("paper", "mh_raf", 0),
        ("paper", "mh_raf", 1),
        ("paper", "trained_layer", 0),
        ("paper", "block", 0),
        ("paper", "block", 1),
        ("paper", "ln_block", 0),
        ("paper", "ln_block", 1),
        ("model", "trained_attention", 0),
        ("model", "matched_attention", 0),
        ("model", "matched_attention", 1),
        ("model", "trained_layer", 0),
        ("model", "matched_layer", 0),
        ("model", "matched_layer", 1),
    ]
    assert [(r["convention"], r["map"], r["draw"]) for r in rows] == [run for run in per_row for _ in range(3)]
    assert [r["token"] for r in rows[:3]] == ["word", "[CLS]", "[SEP]"] and rows[1]["position"] == 0
    assert {r["kind"] for r in rows if r["map"].startswith("trained")} == {"trained"}
    assert {r["n"] for r in rows} == {6} and {r["head"] for r in rows} == {0}
    # each row is the search of its map on this very sample, with the seed the rows record
    paper = X * (8.0 / X.norm(dim=-1, keepdim=True))
    for row, options in ((rows[0], {"model": tiny_bert, "layer": 2}), (rows[3], {"heads": 4})):
        assert row["convention"] == "paper" and row["map"] in ("trained_attention", "mh_raf")
        again = search.estimate(
            row["map"], paper, seed=row["seed"], position=row["position"], options=options, device="cpu", max_steps=20
        )
        assert again.lower == pytest.approx(row["ws"], rel=1e-6)
        assert row["radius"] == pytest.approx(8.0) and row["row_norm"] == pytest.approx(8.0)
    # the model's convention: the raw rows, the ball of the moved row's norm
    model = rows[24]
    assert (model["convention"], model["map"]) == ("model", "trained_attention")
    assert model["radius"] == pytest.approx(float(X[model["position"]].norm()))
    assert model["row_norm"] == pytest.approx(float(X.norm(dim=-1).mean()))
    again = search.estimate(
        "trained_attention",
        X,
        seed=model["seed"],
        position=model["position"],
        options={"model": tiny_bert, "layer": 2},
        device="cpu",
        max_steps=20,
        radius=model["radius"],
    )
    assert again.lower == pytest.approx(model["ws"], rel=1e-6)
    # draws differ, every counterpart shares a draw's seed (block and ln_block: the same random weights)
    blocks = [r for r in rows if r["map"] in ("block", "ln_block") and r["token"] == "word"]
    assert blocks[0]["seed"] == blocks[2]["seed"] != blocks[1]["seed"]
    with pytest.raises(ValueError, match="unknown trained maps"):
        trained_rows(X, maps_=("mh_raf",), **common)
    with pytest.raises(ValueError, match="unknown conventions"):
        trained_rows(X, conventions=("raw",), **common)
    heads = trained_rows(X, positions=1, per_head=True, **common)
    assert [r["head"] for r in heads] == [1, 2, 3, 4] and {r["convention"] for r in heads} == {"paper"}
    together = math.sqrt(sum(r["phi_norm"] ** 2 for r in heads))
    assert [r["ws_heads"] for r in heads] == pytest.approx([r["ws"] * r["phi_norm"] / together for r in heads])


def _trained_table(counterparts=None, heads=4):
    """A synthetic table of the trained study: 2 layers, n = 32 (and a few rows at n = 16), 5 reviews, word
    rows: each trained map at WS 2 (layer 1) or 3 (layer 2) plus review / 10, each counterpart of
    ``counterparts`` ((trained, random, convention); default all) at WS 1 over 2 draws; [CLS] rows far
    above; ``heads`` per-head rows at n = 32 (WS layer + head / 10)."""
    import pandas as pd

    from wordsens.maps import registry

    if counterparts is None:
        counterparts = [
            (name, c.map, c.convention)
            for name in ("trained_attention", "trained_layer")
            for c in registry.get(name).counterparts
        ]
    rows = []
    base = {"model": "/models/tiny", "d": 64, "head": 0, "position": 3, "entropy": 2.0}
    for layer in (1, 2):
        for review in range(5):
            for n, token in ((32, "word"), (32, "[CLS]"), (16, "word")):
                scale = 10.0 if token == "[CLS]" else 1.0
                for trained, random, convention in counterparts:
                    common = {
                        **base,
                        "review": review,
                        "layer": layer,
                        "n": n,
                        "convention": convention,
                        "token": token,
                    }
                    rows.append(
                        {
                            **common,
                            "map": trained,
                            "kind": "trained",
                            "draw": 0,
                            "ws": scale * (layer + 1 + review / 10),
                        }
                    )
                    rows += [
                        {**common, "map": random, "kind": "random", "draw": k, "ws": scale * (1 + (k - 0.5) / 10)}
                        for k in (0, 1)
                    ]
    rows += [
        {
            **base,
            "review": 0,
            "layer": layer,
            "n": 32,
            "convention": "paper",
            "token": "word",
            "map": "trained_attention",
            "kind": "trained",
            "draw": 0,
            "head": h,
            "ws": layer + h / 10,
            "ws_heads": (layer + h / 10) / 4,
        }
        for layer in (1, 2)
        for h in range(1, heads + 1)
    ]
    frame = pd.DataFrame(rows).drop_duplicates(["review", "layer", "n", "convention", "token", "map", "draw", "head"])
    return frame.reset_index(drop=True)


def _styles(ax) -> dict[str, int]:
    """How many series of each style a panel has ("-": paper convention, "--": model scale): its labelled
    lines (not the error bars' caps, not the reference line)."""
    styles = [line.get_linestyle() for line in ax.get_lines() if not line.get_label().startswith("_")]
    return {style: styles.count(style) for style in sorted(set(styles))}


def test_trained_figure_draws_the_ratios_per_counterpart_and_convention_the_entropies_and_heads(tmp_path):
    from matplotlib.colors import to_rgb

    from wordsens.claims import trained_ratios
    from wordsens.plots import trained_figure

    table = _trained_table()
    paths = [tmp_path / "fig_trained.png", tmp_path / "fig_trained.pdf"]
    fig = trained_figure(table, paths)
    assert all(p.stat().st_size > 0 for p in paths)
    attention, layer, entropy, heat = fig.axes[:4]
    # per counterpart one series over the layers (paper solid, model dashed), at the word rows of the largest n
    assert _styles(attention) == {"-": 1, "--": 1} and _styles(layer) == {"-": 2, "--": 1}
    expected = trained_ratios(table[(table["head"] == 0) & (table["token"] == "word")])
    first = next(line for line in attention.get_lines() if line.get_label() == "mh_raf, paper")
    mh = expected[(expected["random"] == "mh_raf")].sort_values("layer")
    assert list(first.get_ydata()) == pytest.approx(list(mh["value"]))
    assert list(mh["value"]) == pytest.approx([2.2, 3.2])  # (layer + 1 + mean review / 10) / 1
    assert [round(float(x)) for x in first.get_xdata()] == [1, 2]
    # the intervals over the 5 reviews: one error bar per point
    assert len(attention.collections) == 2
    assert "trained attention" in attention.get_title() and "trained encoder layer" in layer.get_title()
    colours = {to_rgb(line.get_color()) for line in layer.get_lines() if not line.get_label().startswith("_")}
    assert len(colours) == 3  # block, ln_block, matched_layer
    assert max(max(line.get_ydata()) for line in attention.get_lines()) < 5  # the [CLS] rows (10x) are not drawn
    assert "rows at [CLS]/[SEP]: in the table and claims" in fig.get_suptitle()
    assert "5 reviews, word rows, 2 draws per counterpart" in fig.get_suptitle()
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert any("mh_raf" in label for label in labels) and any("model scale" in label for label in labels)
    assert len(entropy.get_lines()) >= 4  # trained and counterpart per convention, and ln n
    assert heat.collections[0].get_array().shape == (2, 4)  # 2 layers x 4 heads
    assert "n = 32" in heat.get_title() and "all heads" in heat.collections[0].colorbar.ax.get_ylabel()
    with pytest.raises(ValueError, match="no rows of whole maps"):
        trained_figure(table[table["head"] > 0], paths)


def test_trained_figure_marks_a_missing_pair_and_missing_heads_not_run(tmp_path):
    from wordsens.plots import trained_figure

    table = _trained_table(counterparts=[("trained_attention", "mh_raf", "paper")], heads=0)
    path = tmp_path / "fig_trained.png"
    left_out = [{"layer": 3, "needs_gb": 40.0}]
    fig = trained_figure(table, [path], left_out=left_out, settings={"palette": "rocket", "dpi": 60, "stamp": "toy"})
    assert path.stat().st_size > 0
    attention, layer, entropy, heat = fig.axes[:4]
    assert _styles(attention) == {"-": 1} and entropy.get_lines()
    for ax in (layer, heat):
        assert not ax.axison and not ax.get_lines() and not ax.collections
        assert any(text.get_text().startswith("not run") for text in ax.texts)
    assert any("layer=3 (needs 40 GB)" in text.get_text() for text in attention.texts)
    assert [t.get_text() for t in fig.texts if t.get_label() == "stamp"] == ["toy"]
