"""Every file the workflow writes, through the package or through a library, gets the mode the user's
umask allows (0644 files and 0755 folders under umask 022), so that a collaborator can read it:
``wordsens.io.umask_modes``, the demo's models (safetensors writes weights 0600), and a walk over the
demo run's results and resources."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from wordsens.data import demo
from wordsens.io import atomic_path, current_umask, umask_modes


@pytest.fixture(params=[0o022, 0o027], ids=["umask022", "umask027"])
def umask(request) -> Iterator[int]:
    """The process's umask set to 022 (the usual one: 0644) and 027 (group read, others nothing)."""
    before = os.umask(request.param)
    yield request.param
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _wrong_modes(root: Path, umask: int) -> list[str]:
    """Every file not ``0o666 & ~umask`` and every folder not ``0o777 & ~umask`` under ``root``."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            continue
        want = (0o777 if path.is_dir() else 0o666) & ~umask
        if _mode(path) != want:
            out.append(f"{_mode(path):o} {path.relative_to(root)} (expected {want:o})")
    return out


def test_umask_modes_gives_what_open_and_mkdir_would(tmp_path, umask):
    folder = tmp_path / "model"
    (folder / "inner").mkdir(parents=True)
    private, script, inner = folder / "weights.bin", folder / "run.sh", folder / "inner" / "a.json"
    for path in (private, script, inner):
        path.write_text("x")
    private.chmod(0o600)
    script.chmod(0o700)
    inner.chmod(0o666)  # group- and world-writable: more than the umask allows
    (folder / "inner").chmod(0o700)
    (folder / "link").symlink_to(private)
    umask_modes(folder)
    assert _mode(private) == _mode(inner) == 0o666 & ~umask
    assert _mode(script) == _mode(folder / "inner") == _mode(folder) == 0o777 & ~umask
    assert (folder / "link").is_symlink()
    # one file given alone; atomic_path's files agree (the mode an ordinary open gives)
    private.chmod(0o600)
    umask_modes(private)
    assert _mode(private) == 0o666 & ~umask
    assert _mode(atomic_path(tmp_path / "out.txt", lambda p: p.write_text("y"))) == 0o666 & ~umask
    assert current_umask() == umask


def test_the_demo_models_are_readable_by_the_group(tmp_path, umask):
    """safetensors 0.8 writes model.safetensors 0600 whatever the umask; the demo's tiny BERT and
    tiny LM come out with the umask's modes, every file."""
    bert = demo.make_tiny_bert(tmp_path / "tiny-bert")
    lm = demo.make_tiny_causal_lm(tmp_path / "tiny-lm")
    assert (bert / "model.safetensors").is_file() and (lm / "model.safetensors").is_file()
    assert _wrong_modes(tmp_path, umask) == []


def test_every_file_of_the_demo_run_is_readable_by_the_group(demo_run):
    """The demo run's results and resources, walked: every file the umask's file mode, every folder its
    folder mode (the run inherits this process's umask)."""
    config = yaml.safe_load((demo_run / "config" / "demo.yaml").read_text())
    roots = [demo_run / config["results"], demo_run / config["resources"]]
    files = [p for root in roots for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "model.safetensors" for p in files) and any(p.suffix == ".parquet" for p in files)
    assert [line for root in roots for line in _wrong_modes(root, current_umask())] == []
