"""bench/screen_recipes.py: variants run side by side as `pycraftax train` runs, one table ranks
them by their summary score, a failed run is reported without stopping the others, and bad
variant specs are refused before anything runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY = "--num-envs 4 --num-steps 8 --num-minibatches 2 --update-epochs 1 --width 16 --hidden 8 --backend c"


def _screen():
    spec = importlib.util.spec_from_file_location("bench_screen_recipes", ROOT / "bench" / "screen_recipes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_variants_run_and_are_ranked_and_a_failure_is_reported(tmp_path, capsys):
    screen = _screen()
    out = tmp_path / "screen"
    status = screen.main(["--recipe", "small", "--steps", "128", "--out", str(out), "--common", TINY,
                          "base", "lr=--lr 1e-3", "broken=--lr -1"])
    assert status == 1  # one variant failed
    result = json.loads((out / "screen.json").read_text())
    runs = {r["name"]: r for r in result["runs"]}
    assert set(runs) == {"base", "lr", "broken"}
    for name in ("base", "lr"):
        assert runs[name]["exit"] == 0
        assert runs[name]["score"]["env_steps"] == 128
        assert (out / name / "params.npz").is_file()
    assert runs["lr"]["flags"] == ["--lr", "1e-3"] and "--lr 1e-3" in runs["lr"]["command"]
    assert runs["broken"]["exit"] == 2 and runs["broken"]["score"] is None
    assert [r["name"] for r in result["runs"]][-1] == "broken"  # ranked by score, runs without one last
    returns = [r["score"]["final_return"] for r in result["runs"][:2]]
    assert returns == sorted(returns, reverse=True)
    captured = capsys.readouterr()
    assert "| variant | flags | return |" in captured.out and "| broken | --lr -1 | - |" in captured.out
    assert "broken failed (exit status 2)" in captured.err and "lr must be a number in (0, inf)" in captured.err


@pytest.mark.parametrize("variants, message", [
    (["a b"], "its name must be letters, digits"),
    (["x=--out elsewhere"], "--out belong to the screen"),
    (["x=--total-timesteps=5"], "--total-timesteps belong to the screen"),
    (["same", "same=--lr 1e-3"], "variant names must differ"),
])
def test_bad_variants_are_refused_before_anything_runs(tmp_path, capsys, variants, message):
    out = tmp_path / "screen"
    assert _screen().main(["--steps", "128", "--out", str(out), *variants]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_an_existing_screen_is_not_overwritten(tmp_path, capsys):
    out = tmp_path / "screen"
    (out / "base").mkdir(parents=True)
    assert _screen().main(["--steps", "128", "--out", str(out), "base"]) == 2
    assert "already holds a screen or a run of these names" in capsys.readouterr().err
