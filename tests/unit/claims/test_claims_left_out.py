"""The grid points a run's limits leave out are rows of the claims table (issue 45): one ``not run`` row of
the claim ``left_out`` per point, naming it and what it needs, from the plan's ``Grid.left_out`` (the
workflow's claims rule passes them); a run without left-out points has none."""

from __future__ import annotations

from workflow_utils import demo_config

from wordsens import compute, pipeline
from wordsens.studies.claims import compute_claims


def test_every_left_out_point_is_a_not_run_row():
    config = demo_config({"ws": {"maps": {"drf": {"d": [16], "n": [8, 12], "L": [2, 3]}}}})
    tight = pipeline.Grid(config, limits=compute.Limits(cpu=int(0.45 * 1024**3), gpu=None))
    points = tight.left_out()
    assert points, "the tight limits leave some point out"
    table = compute_claims({}, points)
    rows = table[table["claim"] == "left_out"]
    assert len(rows) == len(points) and set(rows["verdict"]) == {"not run"}
    assert list(rows["scope"]) == [p["point"] for p in points]
    first = rows.iloc[0]
    assert first["note"].startswith(f"left out by the limits: needs {points[0]['needs_gb']} GB on cpu")
    roomy = pipeline.Grid(config, limits=compute.Limits(cpu=64 * 1024**3, gpu=None))
    assert roomy.left_out() == [] and "left_out" not in set(compute_claims({}, roomy.left_out())["claim"])


def test_a_point_left_out_for_its_time_names_the_hours():
    table = compute_claims({}, [{"point": "ws drf d768_n80_L8", "map": "drf", "needs_gb": 2.0, "needs_hours": 19.0}])
    note = table.loc[table["claim"] == "left_out", "note"].iloc[0]
    assert note == "left out by the limits: needs 2.0 GB on cpu; about 19.0 hours"
