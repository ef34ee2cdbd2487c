"""bench/report.py: every figure comes from a result file, and a ratio against upstream is
printed only when upstream was measured in the same device session."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _report_module(name: str = "report"):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data))


def _sweep(time_utc: str) -> dict:
    return {"time_utc": time_utc, "device": "GPU X", "machine": {"commit": "abc"},
            "results": [{"num_envs": 4096, "fresh_env_steps_per_s": 3.0e6, "steady_env_steps_per_s": 2.0e6,
                         "steady_episode_ends_per_env_step": 0.0012, "steady_steps": "50..149",
                         "allocated_bytes_per_env": 1000}]}


def _upstream(time_utc: str) -> dict:
    return {"time_utc": time_utc, "results": [
        {"mode": "optimistic", "num_envs": 16384, "steps_per_s": 5.0e5, "first_call_seconds": 40.0, "device": "gpu"}]}


def test_ratio_only_with_upstream_from_the_same_session(tmp_path):
    report = _report_module()
    _write(tmp_path / "cuda-step-a.json", _sweep("2026-01-01T10:00:00Z"))
    _write(tmp_path / "upstream-gpu-a.json", _upstream("2026-01-01T10:10:00Z"))
    text = report.build_report(tmp_path)
    assert "| 4,096 | 3.00 M | 2.00 M | 0.12% (50..149) | 4.0x | 1,000 |" in text
    _write(tmp_path / "upstream-gpu-a.json", _upstream("2026-01-01T12:00:00Z"))
    text = report.build_report(tmp_path)
    assert "4.0x" not in text and "| 4,096 | 3.00 M | 2.00 M | 0.12% (50..149) | 1,000 |" in text


def test_newest_run_first_whatever_the_names(tmp_path):
    """Version names do not sort in time order (v13 before v9 as text): the run time decides."""
    report = _report_module()
    _write(tmp_path / "cuda-step-v9.json", _sweep("2026-01-01T10:00:00Z"))
    _write(tmp_path / "cuda-step-v13.json", _sweep("2026-01-02T10:00:00Z"))
    _write(tmp_path / "cuda-step-undated.json", {k: v for k, v in _sweep("").items() if k != "time_utc"})
    text = report.build_report(tmp_path)
    order = [text.index(f"(cuda-step-{name}.json") for name in ("v13", "v9", "undated")]
    assert order == sorted(order)


def test_unknown_files_are_listed_not_read(tmp_path):
    report = _report_module()
    _write(tmp_path / "mystery.json", {"x": 1})
    _write(tmp_path / "worldgen-a.json", {"c": [], "upstream": [], "machine": {}})
    text = report.build_report(tmp_path)
    assert "- mystery.json" in text and "World generation (worldgen-a.json" in text


def test_training_run_score_and_section(tmp_path):
    """The score weights each update's mean return by its episodes, over the last 1% of
    updates; the report prints it from the summary file."""
    summary = _report_module("train_summary")
    lines = [dict(update=u, env_steps=1000 * u, episodes=2, episode_return=1.0, sps=10.0, iteration_s=1.0,
                  achievements={"collect_wood": 0.5}) for u in range(1, 199)]
    lines += [dict(update=199, env_steps=199_000, episodes=1, episode_return=10.0, sps=10.0, iteration_s=1.0,
                   achievements={"collect_wood": 1.0}),
              dict(update=200, env_steps=200_000, episodes=3, episode_return=2.0, sps=10.0, iteration_s=1.0,
                   achievements={"collect_wood": 1.0})]
    s = summary.summarize(lines)
    assert s["final_updates"] == 2 and s["final_episodes"] == 4
    assert abs(s["final_return"] - (10.0 + 3 * 2.0) / 4) < 1e-12
    assert abs(s["final_percent_of_max"] - 100 * 4.0 / 226) < 1e-12
    assert s["training_seconds"] == 200.0 and s["env_steps"] == 200_000
    _write(tmp_path / "train-x.json", dict(run="x", recipe="r", resets="optimistic", gpu="G", commit="c", **s))
    text = _report_module().build_report(tmp_path)
    assert "### Training run (train-x.json" in text and "4.00 (1.77%)" in text


def test_training_run_parts_follow_on(tmp_path):
    """A run continued over leases is summarised from its metrics parts in order; a gap or an
    overlap between parts is an error, not a silently shifted curve."""
    summary = _report_module("train_summary")

    def part(name, updates):
        path = tmp_path / name
        path.write_text("".join(json.dumps(dict(update=u, env_steps=10 * u, episodes=1, episode_return=float(u),
                                                return_window=float(u), sps=1.0)) + "\n" for u in updates))
        return path

    a, b, gap = part("a.jsonl", range(1, 4)), part("b.jsonl", range(4, 7)), part("c.jsonl", range(5, 7))
    lines = summary.load_parts([a, b])
    assert [m["update"] for m in lines] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="previous part ended at 3"):
        summary.load_parts([a, gap])
    pytest.importorskip("matplotlib")
    summary.plot(lines, "t", tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_resumed_part_is_summarised_with_the_runs_update_numbers(tmp_path):
    """The metrics a resumed chunk writes begin mid-run: its curve lists only step counts inside
    it, its throughput counts only its own steps, and its score uses the final 1% of the run's
    updates (not of the chunk's)."""
    from pycraftax.train import summary

    lines = [dict(update=u, env_steps=1000 * u, episodes=1, episode_return=float(u), sps=10.0, iteration_s=2.0,
                  achievements={"collect_wood": 1.0}) for u in range(2001, 3001)]
    s = summary.summarize(lines)
    assert (s["first_update"], s["last_update"]) == (2001, 3000)
    assert s["final_updates"] == 30 and s["final_episodes"] == 30
    assert abs(s["final_return"] - sum(range(2971, 3001)) / 30) < 1e-9
    assert [c["env_steps"] for c in s["curve"]] == [3_000_000]
    assert s["mean_steps_per_s"] == 1_000_000 / 2_000
    text = summary.report(s)
    assert "updates 2,001..3,000 of a resumed run" in text and "(500 steps/s in these updates)" in text
