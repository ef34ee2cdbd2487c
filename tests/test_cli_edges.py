"""The command line's edges: files that are not checkpoints, unwritable outputs, a run
directory that already holds a run, --help listing choices and defaults, the recipe printed
and never switched by the backend, the progress display off a terminal, the closing summary."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import types

import numpy as np
import pytest

from pycraftax import cli
from pycraftax.progress import Progress
from pycraftax.train import cli as train_cli
from pycraftax.train.config import RECIPES, TrainConfig
from pycraftax.train.trainer import Trainer, set_blas_threads

set_blas_threads(1)
TINY_FLAGS = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "96", "--num-minibatches", "2",
              "--update-epochs", "1", "--width", "16", "--hidden", "8"]


@pytest.fixture
def not_checkpoints(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not an archive\n")
    other = tmp_path / "other.npz"
    np.savez(other, a=np.zeros(3))
    single = tmp_path / "array.npy"
    np.save(single, np.zeros(3))
    return [str(text), str(other), str(single), str(tmp_path)]


def _one_clean_line(err: str, path: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and path in lines[0], err
    assert "expected a checkpoint.npz or params.npz" in lines[0], err


@pytest.mark.parametrize("command", ["eval", "render"])
def test_not_a_checkpoint_is_one_line(command, not_checkpoints, tmp_path, capsys):
    for path in not_checkpoints:
        extra = ["--out", str(tmp_path / "x.gif")] if command == "render" else []
        assert cli.main([command, "--checkpoint", path, *extra]) == 2, path
        _one_clean_line(capsys.readouterr().err, path)
    assert not (tmp_path / "x.gif").exists()


def test_resume_from_not_a_checkpoint(not_checkpoints, capsys):
    for path in not_checkpoints[:3]:  # the directory is no file: "no checkpoint at"
        assert cli.main(["train", "--resume", path]) == 2
        _one_clean_line(capsys.readouterr().err, path)


def test_params_npz_is_no_resumable_checkpoint(tmp_path, capsys):
    from pycraftax.train import interop, numpy_ppo as npp

    path = str(tmp_path / "params.npz")
    interop.save_npz(path, npp.init_params(npp.ModelConfig(width=8, hidden=8)))
    assert cli.main(["train", "--resume", path]) == 2
    err = capsys.readouterr().err
    _one_clean_line(err, path)
    assert "no training state" in err


def test_render_checks_its_output_before_the_episode(tmp_path, capsys, monkeypatch):
    import pycraftax.render

    def must_not_run(*a, **k):
        raise AssertionError("the episode was played before the output was checked")

    monkeypatch.setattr(pycraftax.render, "record_episode", must_not_run)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for out, why in ((blocker / "episode.gif", "exists and is not a directory"), (tmp_path, "is a directory")):
        assert cli.main(["render", "--out", str(out), "--max-steps", "3"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("pycraftax render: error: --out: ") and why in err and "Traceback" not in err
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert cli.main(["render", "--out", str(locked / "e.gif"), "--max-steps", "3"]) == 2
        assert "not writable" in capsys.readouterr().err
    monkeypatch.undo()
    nested = tmp_path / "new" / "dir" / "e.gif"  # a missing directory is created
    assert cli.main(["render", "--out", str(nested), "--max-steps", "3", "--block-size", "6"]) == 0
    assert nested.stat().st_size > 0


def test_train_refuses_an_existing_run_unless_forced(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", *TINY_FLAGS, "--quiet", "--out", out]) == 0
    capsys.readouterr()
    before = {name: os.stat(os.path.join(out, name)).st_mtime_ns for name in os.listdir(out)}
    assert cli.main(["train", *TINY_FLAGS, "--quiet", "--out", out, "--seed", "4"]) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--force" in err and "--resume" in err
    assert {name: os.stat(os.path.join(out, name)).st_mtime_ns for name in os.listdir(out)} == before
    assert cli.main(["train", *TINY_FLAGS, "--quiet", "--out", out, "--seed", "4", "--force"]) == 0
    lines = [json.loads(ln) for ln in open(os.path.join(out, "metrics.jsonl"))]
    assert [m["update"] for m in lines] == [1, 2, 3]  # the old run's lines are gone, not appended to
    meta = json.loads(str(np.load(os.path.join(out, "checkpoint.npz"))["meta"]))
    assert meta["config"]["seed"] == 4
    capsys.readouterr()
    (tmp_path / "plain").write_text("")
    assert cli.main(["train", *TINY_FLAGS, "--quiet", "--out", str(tmp_path / "plain")]) == 2
    assert "not a directory" in capsys.readouterr().err


def _option_actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{parser.prog} {name}", a, sub) for a in _option_actions_of(sub))
                yield from _option_actions(sub)


def _option_actions_of(parser):
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_help_lists_choices_and_defaults():
    parser = cli.build_parser()
    seen = 0
    for prog, action, sub in _option_actions(parser):
        text = train_cli.HelpFormatter(prog)._get_help_string(action) or ""
        flag = action.option_strings[-1]
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)) or action.required \
                or action.help == argparse.SUPPRESS:  # a hidden option (scripted runs) shows no help at all
            continue
        assert "default" in text, f"{prog} {flag}: no default in its help: {text!r}"
        if action.choices is not None:
            usage = sub.format_help()
            assert all(str(c) in usage for c in action.choices), f"{prog} {flag}"
        seen += 1
    assert seen > 40
    train_help = parser._subparsers._group_actions[0].choices["train"].format_help()
    for words in ("float32 or float64", "optimistic or auto", "{small,paper,fast,strong}", "{auto,cuda,c}"):
        assert words in train_help


def _args(argv):
    return cli.build_parser().parse_args(["train", *argv])


def test_recipe_is_explicit_and_not_switched_by_backend():
    default = train_cli.config_from_args(_args([]))
    assert default == TrainConfig() == TrainConfig.from_recipe("small")
    assert (default.num_envs, default.num_steps, default.width, default.hidden, default.total_timesteps) == \
           (64, 32, 128, 128, 491_520)  # the README's CPU job
    for backend in ("c", "cuda", "auto"):
        assert train_cli.config_from_args(_args(["--backend", backend])) == default
        paper = train_cli.config_from_args(_args(["--backend", backend, "--recipe", "paper", "--seed", "2"]))
        assert paper == TrainConfig(**RECIPES["paper"], seed=2)
    assert train_cli.config_from_args(_args(["--recipe", "fast", "--width", "64"])).width == 64
    with pytest.raises(SystemExit):
        _args(["--recipe", "huge"])
    with pytest.raises(ValueError, match="recipe must be one of"):
        TrainConfig.from_recipe("huge")


def test_train_prints_the_recipe_and_a_formatted_summary(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", *TINY_FLAGS, "--backend", "c", "--quiet", "--out", out]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("recipe small (the default; --recipe paper or --recipe fast or --recipe strong for "
                              "another")
    assert text[0].endswith(": 64 envs x 32 steps, 4 epochs x 8 minibatches, model gru, width 128, hidden 128, "
                            "491,520 env steps")
    assert text[1] == "  overridden by flags: --total-timesteps 96, --num-envs 4, --num-steps 8, " \
                      "--update-epochs 1, --num-minibatches 2, --width 16, --hidden 8"
    assert text[2].startswith("PPO-RNN (NumPy) (float32) on Craftax-Symbolic-v1 (c env): 4 envs x 8 steps, ")
    done = next(ln for ln in text if ln.startswith("done: "))
    assert re.fullmatch(r"done: 3/3 updates, 96 env steps in \d+ s \([\d,]+ steps/s\)", done), done
    # one score, as the paper reports it (summary.report), and every file the run wrote
    assert sum(ln.count("return") for ln in text[text.index(done):]) <= 1
    assert len([ln for ln in text if "score" in ln]) == 1
    files = [os.path.join(out, name) for name in ("metrics.jsonl", "checkpoint.npz", "params.npz", "skill_ladder.json",
                                                  "learning_curve.png")]
    written = [f for f in files if os.path.exists(f)]  # learning_curve.png once an episode has ended
    assert text[-1] == "files: " + ", ".join(written) and set(files[:4]) <= set(written)


def test_a_run_stopped_by_its_time_limit_lists_only_the_files_it_has(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", *TINY_FLAGS, "--backend", "c", "--quiet", "--out", out, "--time-limit", "1e-9"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert any(ln.startswith("stopped (time limit") for ln in text)
    assert f"continue with: pycraftax train --resume {os.path.join(out, 'checkpoint.npz')}" in text
    listed = text[-1].removeprefix("files: ").split(", ")
    assert text[-1].startswith("files: ") and os.path.join(out, "checkpoint.npz") in listed
    assert all(os.path.exists(f) for f in listed) and not os.path.exists(os.path.join(out, "params.npz"))


def test_closing_summary_formats_its_numbers():
    config = TrainConfig.from_recipe("paper")
    trainer = types.SimpleNamespace(config=config, update=15_258, stop_reason=None,
                                    history=[dict(return_window=36.41234567)])
    line = train_cli.closing_summary(trainer, 0, 3158.4)
    assert line == "done: 15,258/15,258 updates, 999,948,288 env steps in 52.6 min (316,600 steps/s)"


def test_progress_lines_off_a_terminal_and_a_bar_on_one():
    stream = io.StringIO()
    bar = Progress(1000, "steps", stream=stream, terminal=False, interval_s=0)
    for done in (250, 500, 1000):
        bar.update(done, "return 1.50")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) == 3
    assert lines[0].startswith(" 25.0% 250/1,000 steps") and lines[-1].endswith("| return 1.50")
    held = io.StringIO()
    bar = Progress(1000, "steps", stream=held, terminal=False, interval_s=3600)
    for done in (1, 2, 3):
        bar.update(done)
    bar.close()  # the first and the last, not every update
    assert [ln.split()[1] for ln in held.getvalue().splitlines()] == ["1/1,000", "3/1,000"]
    tty = io.StringIO()
    bar = Progress(10, "steps", stream=tty, terminal=True)
    bar.update(5)
    bar.close()
    assert tty.getvalue().startswith("\r[############............] 5/10 steps") and tty.getvalue().endswith("\n")


def test_training_progress_off_a_terminal(tmp_path):
    stream = io.StringIO()
    cfg = TrainConfig(num_envs=4, num_steps=8, total_timesteps=96, num_minibatches=2, update_epochs=1, width=16,
                      hidden=8)
    Trainer(cfg).run(progress=Progress(cfg.num_updates * cfg.steps_per_update, "steps", stream=stream,
                                       terminal=False, interval_s=0))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert all(re.search(r"\| update \d entropy \d\.\d\d|\| update \d return", ln) for ln in lines), lines
    assert lines[-1].startswith("100.0% 96/96 steps")


def test_cli_progress_is_plain_lines_when_stderr_is_captured(tmp_path, capsys):
    assert cli.main(["train", *TINY_FLAGS, "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "96/96 steps" in err


def test_numbers_for_people():
    from pycraftax.progress import format_count, format_duration

    assert [format_count(n) for n in (999, 12_345, 999_948_288, 1_000_000_000)] == ["999", "12.3k", "999.9M", "1.00B"]
    assert [format_duration(s) for s in (12.4, 3158.4, 7200, float("inf"))] == ["12 s", "52.6 min", "2.0 h", "?"]
    from pycraftax.train import summary

    lines = [dict(update=u, env_steps=1_000_448 * u, episodes=2, episode_return=2.0, return_window=2.0, sps=1e4,
                  iteration_s=100.0) for u in range(1, 4)]
    text = summary.report(summary.summarize(lines))
    assert "curve: 3.0M steps 2.00" in text and "training time 5.0 min (10,004 steps/s)" in text


def test_a_run_too_large_for_the_memory_is_refused_before_it_starts(tmp_path, monkeypatch, capsys):
    """The rollout buffers are checked against the free memory once the env exists, before the
    first update would fail to allocate them (or draw the OOM killer) with a run half-written."""
    from pycraftax.train import trainer as trainer_module

    monkeypatch.setattr(trainer_module, "available_host_memory", lambda: 1 << 20)
    cfg = TrainConfig(num_envs=4, num_steps=8, total_timesteps=96, num_minibatches=2, update_epochs=1, width=16,
                      hidden=8)
    # 4 envs x 8 steps x 8268 float32 obs, and a minibatch's half of them: 1.59 MB
    with pytest.raises(MemoryError, match=r"PPO-RNN \(NumPy\) on the CPU: num_envs 4 x num_steps 8 need about "
                                          r"0\.00 GiB .* only 0\.00 GiB are free; use at most about 2 envs"):
        Trainer(cfg)
    out = tmp_path / "run"
    assert cli.main(["train", *TINY_FLAGS, "--backend", "c", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pycraftax train: error: PPO-RNN (NumPy) on the CPU: num_envs 4") and "Traceback" not in err
    assert not (out / "metrics.jsonl").exists()


@pytest.mark.parametrize("argv, message", [
    (["eval", "--pretrained", "fast-1e9", "--seed", "-1"], "--seed must be in [0, 2**32), got -1"),
    (["worlds", "--seed", str(2**32)], f"--seed must be in [0, 2**32), got {2**32}"),
    (["eval", "--pretrained", "fast-1e9", "--episodes", "0"], "--episodes must be >= 1, got 0"),
    (["render", "--block-size", "3"], "--block-size must be in [6, 256], got 3"),
    (["render", "--fps", "0"], "--fps must be > 0, got 0.0"),
    (["train", "--blas-threads", "0"], "--blas-threads must be >= 1, got 0"),
    (["summary", "x", "--final-fraction", "1.5"], "--final-fraction must be in (0, 1], got 1.5"),
])
def test_an_option_out_of_range_is_named_alone_with_its_value(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(f"error: {message}")



def test_version_is_the_package_version(capsys):
    import pycraftax

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"pycraftax {pycraftax.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", pycraftax.__version__)
