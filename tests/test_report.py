"""bench/report.py: every figure comes from a suite's result file, the newest of each suite and
machine kind is shown, and a ratio is printed only between results of one machine kind."""

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


def _result(when: str, machine: dict, *rows: dict) -> dict:
    """A pytest-benchmark JSON as the suites write it: each row is one benchmark's extra_info."""
    return {"datetime": when, "commit_info": {"id": "abcdef1234567"}, "machine_info": {"pycraftax": machine},
            "benchmarks": [{"name": f"{r.pop('test')}[x]", "stats": {"median": 1.0, "rounds": 5}, "extra_info": r}
                           for r in rows]}


CPU = {"cpu": "CPU X", "cores": 2}


def _c_result(when: str, rate: float) -> dict:
    return _result(when, CPU, dict(test="test_step", num_envs=64, threads=1, throughput=rate / 2),
                   dict(test="test_step", num_envs=64, threads=2, throughput=rate),
                   dict(test="test_reset", num_envs=64, threads=2, throughput=500.0))


def _upstream_result(when: str, rate: float) -> dict:
    return _result(when, CPU, dict(test="test_step", num_envs=64, mode="auto", env="Craftax-Symbolic-v1",
                                   throughput=rate),
                   dict(test="test_reset", num_envs=64, throughput=5.0))


def test_ratio_only_between_results_of_one_machine_kind(tmp_path):
    report = _report_module()
    _write(tmp_path / "2026-01-01-cpu-x-2c-c.json", _c_result("2026-01-01T10:00:00", 300_000.0))
    _write(tmp_path / "2026-01-01-cpu-x-2c-upstream.json", _upstream_result("2026-01-01T10:05:00", 1_000.0))
    _write(tmp_path / "2026-01-02-other-8c-upstream.json", _upstream_result("2026-01-02T10:00:00", 10.0))
    text = report.build_report(tmp_path)
    assert "| 64 | 150 k | 300 k | 1,000 | - | 300x | - |" in text
    assert "| 64 | - | 500 | 5.0 | 100x |" in text
    assert "30,000x" not in text and "commit abcdef1234" in text


def test_a_loaded_machine_is_named_beside_its_table(tmp_path):
    report = _report_module()
    loaded = _c_result("2026-01-01T10:00:00", 300_000.0)
    loaded["machine_info"]["pycraftax"] = dict(CPU, load_average_1min=7.5)
    _write(tmp_path / "2026-01-01-cpu-x-2c-c.json", loaded)
    assert "load average 7.5 on 2 cores (other jobs ran" in report.build_report(tmp_path)
    loaded["machine_info"]["pycraftax"]["load_average_1min"] = 0.3
    _write(tmp_path / "2026-01-01-cpu-x-2c-c.json", loaded)
    assert "load average" not in report.build_report(tmp_path)


def test_newest_result_of_each_suite_and_kind(tmp_path):
    """The run time recorded in the file decides, not the name."""
    report = _report_module()
    _write(tmp_path / "2026-01-05-cpu-x-2c-c.json", _c_result("2026-01-01T10:00:00", 100_000.0))
    _write(tmp_path / "2026-01-02-cpu-x-2c-c.json", _c_result("2026-01-02T10:00:00", 200_000.0))
    text = report.build_report(tmp_path)
    assert "2026-01-02-cpu-x-2c-c.json" in text and "| 64 | 100 k | 200 k |" in text
    assert "2026-01-05-cpu-x-2c-c.json" not in text


def test_unknown_files_are_listed_not_read(tmp_path):
    report = _report_module()
    _write(tmp_path / "mystery.json", {"x": 1})
    _write(tmp_path / "2026-01-01-cpu-x-2c-c.json", _c_result("2026-01-01T10:00:00", 100_000.0))
    text = report.build_report(tmp_path)
    assert "- mystery.json" in text and "## C reference on the CPU" in text


def test_a_suite_without_its_own_section_gets_a_generic_table(tmp_path):
    report = _report_module()
    _write(tmp_path / "2026-01-01-cpu-x-2c-jax_loop.json",
           _result("2026-01-01T10:00:00", CPU, dict(test="test_loop", unit="env steps/s", num_envs=8,
                                                    throughput=1234.0)))
    text = report.build_report(tmp_path)
    assert "## jax_loop" in text and "| test_loop | num_envs=8 | 1,234 | env steps/s |" in text


def test_gpu_ratio_against_upstream_on_the_same_gpu_only(tmp_path):
    report = _report_module()
    gpu = {"gpu": "GPU Y", "cpu": "CPU Z", "cores": 16}
    _write(tmp_path / "2026-01-01-gpu-y-cuda.json",
           _result("2026-01-01T10:00:00", gpu, dict(test="test_step", num_envs=4096, mode="auto", obs="compact",
                                                    throughput=2.0e6)))
    _write(tmp_path / "2026-01-01-gpu-y-upstream.json",
           _result("2026-01-01T10:01:00", gpu, dict(test="test_step", num_envs=4096, mode="optimistic",
                                                    env="Craftax-Symbolic-v1", device="cuda:0", throughput=5.0e5),
                   dict(test="test_step", num_envs=64, mode="auto", env="Craftax-Symbolic-v1", device="TFRT_CPU_0",
                        throughput=1.0e6)))  # upstream on the host CPU: not a GPU peer
    text = report.build_report(tmp_path)
    assert "| 4,096 | - | 2.0 M | - | - | 4.0x |" in text and "| 64 | 1.0 M |" not in text.split("## CUDA")[1]


def test_step_async_rows_beside_the_synchronous_step(tmp_path):
    report = _report_module()
    gpu = {"gpu": "GPU Y", "cpu": "CPU Z", "cores": 16}
    _write(tmp_path / "2026-01-01-gpu-y-cuda.json",
           _result("2026-01-01T10:00:00", gpu,
                   dict(test="test_step", num_envs=4096, mode="auto", obs="compact", throughput=2.0e6),
                   dict(test="test_step_async", num_envs=4096, mode="auto", obs="compact", calls="step_async",
                        throughput=3.0e6),
                   dict(test="test_step_async", num_envs=1024, mode="auto", obs="compact", calls="step_async",
                        throughput=1.0e6)))
    text = report.build_report(tmp_path)
    assert "| 4,096 | 2.0 M | 3.0 M |" in text and "| 1,024 | - | 1.0 M |" in text
    assert "| 4,096 | - | 2.0 M | - | - |" in text  # the sweep's table keeps step() only


def test_plots_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    report = _report_module()
    results = tmp_path / "results"
    results.mkdir()
    _write(results / "2026-01-01-cpu-x-2c-c.json", _c_result("2026-01-01T10:00:00", 100_000.0))
    text = report.build_report(results, tmp_path / "plots")
    assert (tmp_path / "plots" / "steps_vs_envs.png").stat().st_size > 1000
    assert "![steps_vs_envs.png](plots/steps_vs_envs.png)" in text


def test_result_names_of_the_machine_kinds_parse():
    """The machine kind names the files nox writes; the report must read the suite back from them."""
    report = _report_module()
    conftest = _report_module("conftest")
    for info in ({"gpu": "NVIDIA H200", "cpu": "Intel(R) Xeon(R) Processor"}, {"cpu": "AMD EPYC 7B13 64-Core Processor",
                                                                               "cores": 2}):
        kind = conftest.machine_kind(info)
        m = report.RESULT_NAME.match(f"2026-01-01-{kind}-jax_loop.json")
        assert m and m["kind"] == kind and m["suite"] == "jax_loop"
    assert conftest.machine_kind({"gpu": "NVIDIA H200"}) == "nvidia-h200"


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
    assert "## Published training runs" in text and "| x | `train-x.json` | 200,000 | 4.0 (1.8%) | 3 min | not reached |" in text


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


def test_classic_c_rows_beside_upstream_classic(tmp_path):
    report = _report_module()
    classic = "Craftax-Classic-Symbolic-v1"
    c_rows = [dict(test="test_step_classic", env=classic, mode=mode, num_envs=64, threads=threads,
                   throughput=rate) for mode, threads, rate in
              (("auto", 1, 100_000.0), ("auto", 2, 150_000.0), ("optimistic", 1, 120_000.0),
               ("optimistic", 2, 200_000.0))]
    c_rows.append(dict(test="test_reset_classic", env=classic, num_envs=64, threads=1, throughput=400.0))
    _write(tmp_path / "2026-01-01-cpu-x-2c-c.json", _result("2026-01-01T10:00:00", CPU, *c_rows))
    _write(tmp_path / "2026-01-01-cpu-x-2c-upstream.json", _result(
        "2026-01-01T10:05:00", CPU,
        dict(test="test_step_classic", env=classic, mode="auto", num_envs=64, throughput=1_000.0),
        dict(test="test_step_classic", env=classic, mode="optimistic", num_envs=64, throughput=2_000.0)))
    text = report.build_report(tmp_path)
    # best C over upstream in the same mode, and per core: C's 1 thread over upstream's rate / 2 cores
    assert "| 64 | 1,000 | 100 k | 150 k | 150x | 200x | 2,000 | 120 k | 200 k | 100x | 120x | - |" in text
    assert "Classic world generation" in text and "| 64 | 400 | - |" in text


def test_time_to_the_scoreboards_scores():
    """The first update whose score over the last-1% window reaches each scoreboard entry, and
    the training time up to it; none reached past the run's best; no entries for Classic."""
    from pycraftax.train import summary

    top = summary.MAX_RETURN
    returns = [0.0] * 50 + [0.153 * top] * 2 + [0.17 * top] * 48  # 100 updates: a window of 1
    lines = [dict(update=u + 1, env_steps=10 * (u + 1), episodes=1, episode_return=r, sps=1.0, iteration_s=2.0,
                  env_id="Craftax-Symbolic-v1") for u, r in enumerate(returns)]
    table = {t["name"]: t for t in summary.summarize(lines)["time_to_scoreboard"]}
    assert table["PPO-RNN"]["update"] == 51 and table["PPO-RNN"]["training_seconds"] == 102.0
    assert table["PPO-RNN"]["env_steps"] == 510
    assert table["PQN-RNN"]["update"] == 53 and table["PPO-GTrXL"]["update"] is None
    lines[52]["episodes"] = 0  # an update without ended episodes scores nothing on its own
    assert {t["name"]: t for t in summary.time_to_scores(lines, 1)}["PQN-RNN"]["update"] == 54
    assert "PPO-RNN 15.3% at 510 steps" in summary.report(summary.summarize(lines))
    classic = [dict(m, env_id="Craftax-Classic-Symbolic-v1") for m in lines]
    assert summary.summarize(classic)["time_to_scoreboard"] == []


def test_summary_names_the_file_and_line_it_cannot_read(tmp_path):
    from pycraftax.train import summary

    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match=r"empty.jsonl: no metrics lines yet"):
        summary.load(empty)
    other = tmp_path / "other.jsonl"
    other.write_text('{"update": 1}\n')
    with pytest.raises(ValueError, match=r"other.jsonl, line 1: not a metrics line of pycraftax train \(no \['env_steps'"):
        summary.load(other)
    broken = tmp_path / "broken.jsonl"
    good = dict(update=1, env_steps=8, episodes=0, episode_return=None, sps=1.0)
    broken.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"broken.jsonl, line 2: not JSON"):
        summary.load(broken)


def test_wall_clock_plot_places_a_run_at_its_solo_rate_and_the_ladder_is_in_seconds(tmp_path):
    """A run on the wall-clock plot sits at env steps over its training rate (a run that shared its
    GPU at its solo rate); the published points file is read, not listed as unknown; the fast
    recipe's skill ladder is tabulated in seconds."""
    pytest.importorskip("matplotlib")
    report = _report_module()
    assert report.run_seconds({"mean_steps_per_s": 2e6}, 1e9) == 500.0
    assert report.run_seconds({"mean_steps_per_s": 2e6, "solo_steps_per_s": 4e6}, 1e9) == 250.0
    results = tmp_path / "results"
    results.mkdir()
    run = dict(run="fast-recipe-1e9", recipe="fast: model cell-gru (...)", env_steps=999_000_000,
               final_return=37.0, final_percent_of_max=16.4, training_seconds=290.0, mean_steps_per_s=3.4e6,
               curve=[dict(env_steps=10_000_000, episode_return=2.0, percent_of_max=0.9, episodes=10)],
               skill_ladder={"collect_wood": dict(env_steps=557_056, seconds=1.4, update=1),
                             "make_diamond_armour": dict(env_steps=445_169_664, seconds=127.7, update=425)})
    _write(results / "train-fast.json", run)
    _write(results / report.PUBLISHED, dict(points=[dict(name="P", percent=15.3, seconds=10400.0, source="s"),
                                                    dict(name="Q", percent=16.0, seconds=None, source="s")]))
    text = report.build_report(results, tmp_path / "plots")
    assert (tmp_path / "plots" / "score_vs_wallclock.png").stat().st_size > 1000
    assert report.PUBLISHED not in text
    assert "## Skill ladder of the fast recipe" in text and "| make_diamond_armour | 127.7 | 445.2 M |" in text
