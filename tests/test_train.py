"""The CPU trainer (pycraftax/train/trainer.py) and its CLI: a tiny run of a few seconds.

    /work/venv/bin/python -m pytest tests/test_train.py
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from pycraftax import cli
from pycraftax.train import interop
from pycraftax.train import numpy_ppo as npp
from pycraftax.train.evaluation import evaluate
from pycraftax.train.trainer import TrainConfig, Trainer, set_blas_threads

TINY = dict(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 4, update_epochs=2, num_minibatches=2, width=16,
            hidden=8, checkpoint_every=1, seed=3)

set_blas_threads(1)


def test_tiny_run_shapes_and_finite(tmp_path):
    trainer = Trainer(TrainConfig(**TINY), str(tmp_path))
    before = {k: v.copy() for k, v in trainer.params.items()}
    buf, _ = trainer.rollout()
    T, N = TINY["num_steps"], TINY["num_envs"]
    assert buf["obs"].shape == (T, N, 8268) and buf["obs"].dtype == np.float32
    for k in ("dones", "actions", "values", "log_probs", "rewards", "advantages", "targets"):
        assert buf[k].shape == (T, N), k
    assert buf["h0"].shape == (N, TINY["hidden"])
    assert buf["actions"].min() >= 0 and buf["actions"].max() < 43
    assert np.all(buf["log_probs"] <= 0)
    lines = trainer.run(progress=False)
    assert len(lines) == trainer.config.num_updates - 0  # run() starts from update 0 .. all updates
    for m in lines:
        for k in ("total_loss", "value_loss", "actor_loss", "entropy", "grad_norm", "sps"):
            assert np.isfinite(m[k]), (k, m)
        assert 0 < m["entropy"] <= np.log(43) + 1e-6
    assert any(np.any(trainer.params[k] != before[k]) for k in before)
    for k, v in trainer.params.items():
        assert v.dtype == np.float32 and np.all(np.isfinite(v)), k
    metrics = [json.loads(ln) for ln in open(tmp_path / "metrics.jsonl")]
    assert [m["update"] for m in metrics] == [1, 2, 3, 4]
    assert os.path.exists(tmp_path / "checkpoint.npz") and os.path.exists(tmp_path / "params.npz")
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]  # atomic writes left no temp files
    params = interop.load_npz(str(tmp_path / "params.npz"))
    assert all(np.array_equal(params[k], trainer.params[k]) for k in params)
    res = evaluate(params, num_episodes=1, num_envs=2, seed=0, max_steps=20)
    assert set(res) >= {"episodes", "return_mean", "length_mean", "achievements"}


def _state_equal(a: Trainer, b: Trainer):
    for k in a.params:
        assert np.array_equal(a.params[k], b.params[k]), k
        assert np.array_equal(a.opt_state["mu"][k], b.opt_state["mu"][k]), k
        assert np.array_equal(a.opt_state["nu"][k], b.opt_state["nu"][k]), k
    assert a.opt_state["count"] == b.opt_state["count"]
    assert np.array_equal(a.hstate, b.hstate) and np.array_equal(a.obs, b.obs)
    assert np.array_equal(a.last_done, b.last_done)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    sa, sb = a.env.get_state(), b.env.get_state()
    assert all(np.array_equal(sa[k], sb[k]) for k in sa)


def test_resume_is_bit_exact(tmp_path):
    cfg = TrainConfig(**TINY)
    straight = Trainer(cfg, str(tmp_path / "a"))
    straight.run(progress=False)
    half = Trainer(cfg, str(tmp_path / "b"))
    half.run(max_updates=2, progress=False)
    assert half.update == 2
    del half
    resumed = Trainer.resume(str(tmp_path / "b" / "checkpoint.npz"))
    assert resumed.update == 2 and resumed.config == cfg
    resumed.run(progress=False)
    assert resumed.update == straight.update == 4
    _state_equal(straight, resumed)
    la = [json.loads(ln) for ln in open(tmp_path / "a" / "metrics.jsonl")]
    lb = [json.loads(ln) for ln in open(tmp_path / "b" / "metrics.jsonl")]
    drop = ("sps", "rollout_s", "learn_s")
    assert [{k: v for k, v in m.items() if k not in drop} for m in la] == \
           [{k: v for k, v in m.items() if k not in drop} for m in lb]


def test_resume_from_older_checkpoint_truncates_metrics(tmp_path):
    cfg = TrainConfig(**dict(TINY, checkpoint_every=2))
    t = Trainer(cfg, str(tmp_path))
    t.run(max_updates=3, progress=False)  # checkpoint at update 2 and 3 (end of this call)
    t.save_checkpoint(str(tmp_path / "old.npz"))
    t.run(progress=False)
    r = Trainer.resume(str(tmp_path / "old.npz"))
    assert r.update == 3
    r.run(progress=False)
    assert [json.loads(ln)["update"] for ln in open(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]


@pytest.mark.parametrize("bad, match", [
    (dict(num_envs=0), "num_envs"), (dict(num_steps=-1), "num_steps"), (dict(width=0), "width"),
    (dict(hidden=0), "hidden"), (dict(num_minibatches=3), "must divide"), (dict(update_epochs=0), "update_epochs"),
    (dict(total_timesteps=10), "at least"), (dict(lr=0.0), "lr"), (dict(gamma=1.5), "gamma"),
    (dict(clip_eps=-0.1), "clip_eps"), (dict(dtype="float16"), "dtype"), (dict(num_envs=2.0), "num_envs"),
    (dict(max_grad_norm=float("nan")), "max_grad_norm"), (dict(resets="sometimes"), "resets"),
    (dict(num_envs=24, num_minibatches=4, total_timesteps=10**6), "multiple of reset_ratio"),
])
def test_config_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**dict(TINY, **bad)).validate()
    with pytest.raises(ValueError, match=match):
        Trainer(TrainConfig(**dict(TINY, **bad)))


def test_unknown_option():
    with pytest.raises(ValueError, match="unknown training option"):
        TrainConfig.from_dict(dict(TINY, learning_rate=1e-3))


def test_cli_rejects_bad_values_before_work(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", "--num-envs", "6", "--num-minibatches", "4", "--out", out]) == 2
    assert "must divide" in capsys.readouterr().err
    assert not os.path.exists(out)
    with pytest.raises(SystemExit):
        cli.main(["train", "--bogus", "1"])
    with pytest.raises(SystemExit):
        cli.main(["train", "--width", "abc"])
    assert cli.main(["train", "--resume", str(tmp_path / "none.npz")]) == 2


def test_cli_train_resume_eval(tmp_path, capsys):
    out = str(tmp_path / "run")
    args = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "96", "--num-minibatches", "2",
            "--update-epochs", "1", "--width", "16", "--hidden", "8", "--quiet", "--out", out]
    assert cli.main(["train", *args]) == 0
    assert cli.main(["train", "--resume", os.path.join(out, "checkpoint.npz"), "--width", "32"]) == 2
    assert cli.main(["train", "--resume", os.path.join(out, "checkpoint.npz"), "--quiet"]) == 0
    assert cli.main(["eval", "--checkpoint", os.path.join(out, "checkpoint.npz"), "--episodes", "1",
                     "--num-envs", "2", "--json"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["episodes"] == 1 and len(res["achievements"]) == 67


def test_float64_trainer_step():
    t = Trainer(TrainConfig(**dict(TINY, dtype="float64")))
    m = t.step()
    assert t.params["params/Dense_0/kernel"].dtype == np.float64 and np.isfinite(m["total_loss"])
    npp.check_params(t.params, t.model_config)


def test_resets_follow_ppo_rnn_and_old_checkpoints_stay_auto():
    """Optimistic resets by default with ppo_rnn.py's reset_ratio min(16, num_envs); the env
    the trainer builds uses them; a checkpoint config written before the option existed
    (no "resets") resumes with the auto resets it was trained with."""
    assert TrainConfig().resets == "optimistic" and TrainConfig(num_envs=64).reset_ratio == 16
    assert TrainConfig(num_envs=4, num_minibatches=4).reset_ratio == 4 and TrainConfig(resets="auto").reset_ratio is None
    t = Trainer(TrainConfig(**TINY))
    assert (t.env.resets, t.env.reset_ratio) == ("optimistic", 4)
    old = TrainConfig(**TINY).to_dict()
    del old["resets"]
    assert TrainConfig.from_dict(old).resets == "auto"
    assert Trainer(TrainConfig(**dict(TINY, resets="auto"))).env.resets == "auto"


def test_cli_resets_flag(tmp_path):
    out = str(tmp_path / "run")
    args = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "32", "--num-minibatches", "2",
            "--update-epochs", "1", "--width", "16", "--hidden", "8", "--quiet", "--out", out]
    assert cli.main(["train", *args, "--resets", "auto"]) == 0
    meta = json.loads(str(np.load(os.path.join(out, "checkpoint.npz"))["meta"]))
    assert meta["config"]["resets"] == "auto"
    assert cli.main(["train", *args, "--resets", "never"]) == 2


def test_time_limit_stops_with_checkpoint_and_resumes_bit_exactly(tmp_path, capsys):
    """A run that hits --time-limit stops between updates with a checkpoint; resuming it
    continues exactly like an uninterrupted run."""
    cfg = TrainConfig(**dict(TINY, checkpoint_every=100))
    straight = Trainer(cfg, str(tmp_path / "a"))
    straight.run(progress=False)
    limited = Trainer(cfg, str(tmp_path / "b"))
    limited.run(progress=False, time_limit_s=1e-9)  # the first update already used up the limit
    assert limited.update == 1 and limited.stop_reason.startswith("time limit")
    ckpt = str(tmp_path / "b" / "checkpoint.npz")
    assert json.loads(str(np.load(ckpt)["meta"]))["update"] == 1  # written although checkpoint_every is 100
    assert not os.path.exists(tmp_path / "b" / "params.npz")  # final weights only at the end
    resumed = Trainer.resume(ckpt)
    resumed.run(progress=False, time_limit_s=3600)
    assert resumed.stop_reason is None and resumed.update == straight.update
    _state_equal(straight, resumed)


def test_stop_request_finishes_the_update(tmp_path):
    t = Trainer(TrainConfig(**dict(TINY, checkpoint_every=100)), str(tmp_path))
    t.run(progress=False, log=lambda m: t.request_stop("SIGTERM") if m["update"] == 2 else None)
    assert t.update == 2 and t.stop_reason == "SIGTERM"
    assert json.loads(str(np.load(tmp_path / "checkpoint.npz")["meta"]))["update"] == 2


def test_cli_time_limit(tmp_path, capsys):
    out = str(tmp_path / "run")
    args = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "96", "--num-minibatches", "2",
            "--update-epochs", "1", "--width", "16", "--hidden", "8", "--quiet", "--out", out]
    assert cli.main(["train", *args, "--time-limit", "0"]) == 2
    assert "--time-limit" in capsys.readouterr().err and not os.path.exists(out)
    assert cli.main(["train", *args, "--time-limit", "1e-9"]) == 0
    text = capsys.readouterr().out
    assert "stopped (time limit" in text and "1/3 updates" in text and "--resume" in text
    assert cli.main(["train", "--resume", os.path.join(out, "checkpoint.npz"), "--quiet"]) == 0
    assert "done: 3/3 updates" in capsys.readouterr().out


def test_cli_summary_of_a_run(tmp_path, capsys):
    """`pycraftax train` ends with the run's score and achievements; `pycraftax summary` prints
    the same from the run directory (and JSON, and a plot); bad paths are clear errors."""
    out = str(tmp_path / "run")
    args = ["--num-envs", "16", "--num-steps", "16", "--total-timesteps", "768", "--num-minibatches", "2",
            "--update-epochs", "1", "--width", "16", "--hidden", "8", "--quiet", "--out", out]
    assert cli.main(["train", *args]) == 0
    text = capsys.readouterr().out
    assert "768 env steps over 3 updates; " in text
    assert cli.main(["summary", out]) == 0
    assert "768 env steps over 3 updates; " in capsys.readouterr().out
    assert cli.main(["summary", os.path.join(out, "metrics.jsonl"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["updates"] == 3 and s["env_steps"] == 768 and len(s["achievement_success_rates"]) in (0, 67)
    no_episodes = [dict(update=1, env_steps=8, episodes=0, episode_return=None, return_window=None, sps=1.0)]
    (tmp_path / "young.jsonl").write_text(json.dumps(no_episodes[0]) + "\n")
    assert cli.main(["summary", str(tmp_path / "young.jsonl")]) == 0
    assert "no score yet: no episode ended in the last 1 updates" in capsys.readouterr().out
    assert cli.main(["summary", str(tmp_path / "nowhere")]) == 2
    assert "no metrics file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["summary", out, "--final-fraction", "0"])


def test_pytorch_engine_drives_the_env_through_its_public_interface():
    """The PyTorch engine reads no private field of the env or of pycraftax.cuda_env: it steps
    the env through step_async/step_wait and keeps its key stream through env.key."""
    import ast

    from pycraftax.train import torch_trainer

    tree = ast.parse(open(torch_trainer.__file__).read())
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = ast.unparse(node.value)
            if owner in ("env", "self.env", "cuda_env"):
                private.append(f"line {node.lineno}: {owner}.{node.attr}")
    assert not private, private
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert {"step_async", "step_wait", "key"} <= used


def test_a_cuda_trainer_checkpoint_evaluates_and_resumes_on_the_pytorch_engine(tmp_path, capsys):
    """A checkpoint of the hand-written CUDA trainer (gone; its layout: the weights and Adam moments
    by flax name, the Adam count in counters[1], backend "cuda", env states and obs of its own)
    still evaluates, and `pycraftax train --resume` continues it on the PyTorch engine with its
    learner."""
    pytest.importorskip("torch")
    from pycraftax.train.loop import read_checkpoint, write_npz_fast

    out = tmp_path / "numpy"
    assert cli.main(["train", "--backend", "c", "--num-envs", "4", "--num-steps", "4", "--num-minibatches", "2",
                     "--update-epochs", "1", "--width", "8", "--hidden", "8", "--total-timesteps", "48",
                     "--checkpoint-every", "2", "--quiet", "--out", str(out)]) == 0
    data = read_checkpoint(str(out / "checkpoint.npz"))
    meta = {k: v for k, v in data["meta"].items() if k not in ("opt_count", "rng")}
    meta.update(backend="cuda", config=dict(meta["config"], total_timesteps=96))  # 3 of 6 updates done
    old = {k: v for k, v in data.items() if k not in ("meta", "rng")}
    old.update(counters=np.array([3, data["meta"]["opt_count"], 7, 0], np.int64),
               env_episode_return=np.zeros(4, np.float32), meta=np.array(json.dumps(meta)))
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    write_npz_fast(str(legacy / "checkpoint.npz"), old)
    capsys.readouterr()
    assert cli.main(["eval", "--checkpoint", str(legacy / "checkpoint.npz"), "--episodes", "1", "--num-envs", "1",
                     "--max-steps", "5", "--json"]) in (0, 1)
    from pycraftax.train.torch_trainer import TorchTrainer

    t = TorchTrainer.resume(str(legacy / "checkpoint.npz"), device="cpu")
    assert t.update == 3 and t.config.num_updates == 6 and t.opt_steps == data["meta"]["opt_count"] == 6
    for k, v in t.params.items():
        np.testing.assert_array_equal(v, data[k])
    t.env.close()
    assert cli.main(["train", "--resume", str(legacy / "checkpoint.npz"), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "resumed" in text and "PPO-RNN (PyTorch)" in text and "the envs start new episodes" in text
    resumed = read_checkpoint(str(legacy / "checkpoint.npz"))["meta"]
    assert resumed["backend"] == "torch" and resumed["update"] == 6 and resumed["opt_count"] == 12
