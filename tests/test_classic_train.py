"""Craftax-Classic through the CPU trainer and the CLI: `pycraftax train --env
Craftax-Classic-Symbolic-v1` (a tiny run of seconds), then `eval`, `summary` and `render` of its
checkpoint, and render_frame of Classic states."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import pycraftax
from pycraftax import cli
from pycraftax.achievements import CLASSIC_NAMES_BY_INDEX
from pycraftax.render import record_episode, render_frame
from pycraftax.train import summary
from pycraftax.train.config import TrainConfig
from pycraftax.train.trainer import Trainer, set_blas_threads

CLASSIC = "Craftax-Classic-Symbolic-v1"
TINY = dict(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 3, update_epochs=1, num_minibatches=2, width=16,
            hidden=8, checkpoint_every=1, seed=2, env_id=CLASSIC)

set_blas_threads(1)


def test_trainer_is_sized_from_the_env(tmp_path):
    trainer = Trainer(TrainConfig(**TINY), str(tmp_path))
    assert trainer.model_config.obs_size == 1345 and trainer.model_config.num_actions == 17
    assert trainer.params["params/Dense_0/kernel"].shape == (1345, 16)
    buf, _ = trainer.rollout()
    assert buf["obs"].shape == (8, 4, 1345) and buf["actions"].max() < 17
    state = trainer.env.get_state()
    state["timestep"][:] = 10000 - 1  # every episode reaches max_timesteps on the next step
    trainer.env.set_state(state)
    lines = trainer.run(progress=False)
    assert len(lines) == 3 and all(np.isfinite(m["total_loss"]) for m in lines)
    assert all(0 < m["entropy"] <= np.log(17) + 1e-6 for m in lines)
    assert lines[0]["episodes"] == 4  # all ended on the first step of the run
    s = summary.summarize(summary.load(tmp_path / "metrics.jsonl")[:1])  # the update whose episodes ended
    assert s["max_return"] == 22.0 and s["final_percent_of_max"] == pytest.approx(100 * s["final_return"] / 22)
    assert set(s["achievement_success_rates"]) == set(CLASSIC_NAMES_BY_INDEX)
    resumed = Trainer.resume(str(tmp_path / "checkpoint.npz"))
    assert resumed.config.env_id == CLASSIC and resumed.env.env_id == CLASSIC


def test_bad_env_id_is_named():
    with pytest.raises(ValueError, match="env_id must be one of"):
        TrainConfig(**dict(TINY, env_id="Crafter"))


def test_cli_train_eval_summary_render(tmp_path, capsys):
    out = str(tmp_path / "run")
    args = ["--env", CLASSIC, "--num-envs", "16", "--num-steps", "16", "--total-timesteps", "512",
            "--num-minibatches", "2", "--update-epochs", "1", "--width", "16", "--hidden", "8", "--quiet",
            "--seed", "1", "--out", out]
    assert cli.main(["train", *args]) == 0
    text = capsys.readouterr().out
    assert f"on {CLASSIC} (c env)" in text
    checkpoint = os.path.join(out, "checkpoint.npz")
    assert cli.main(["eval", "--checkpoint", checkpoint, "--episodes", "1", "--num-envs", "2", "--json",
                     "--max-steps", "20000"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["env_id"] == CLASSIC and res["episodes"] == 1
    assert sorted(res["achievements"]) == sorted(CLASSIC_NAMES_BY_INDEX)
    assert cli.main(["summary", out, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    result = result[0] if isinstance(result, list) else result
    assert result["max_return"] == 22.0 and result["env_steps"] == 512
    gif = str(tmp_path / "episode.gif")
    assert cli.main(["render", "--checkpoint", checkpoint, "--out", gif, "--max-steps", "5"]) == 0
    assert os.path.getsize(gif) > 0
    assert cli.main(["render", "--checkpoint", checkpoint, "--env", "Craftax-Symbolic-v1", "--out", gif,
                     "--max-steps", "5"]) == 2
    assert "does not match the policy" in capsys.readouterr().err


def test_render_frame_of_classic_states():
    env = pycraftax.make(CLASSIC, num_envs=2, backend="c")
    env.reset(seed=0)
    state = env.get_state()
    local = render_frame(state, 0, "local", tile=8)
    floor = render_frame(state, 0, "floor", tile=4)
    assert local.shape[:2][1] == 9 * 8 and local.dtype == np.uint8
    assert floor.shape[1] == 64 * 4
    assert not np.array_equal(render_frame(state, 1, "floor", tile=4), floor)  # two worlds, two pictures
    r, c = (int(v) for v in state["player_position"][0])
    assert np.all(floor[r * 4, c * 4] == 255)  # the player is the white tile (its corner: the tick is black)


def test_record_episode_of_random_classic_actions():
    frames, summary = record_episode(None, seed=1, max_steps=6, tile=4, env_id=CLASSIC)
    assert summary["env_id"] == CLASSIC and len(frames) == 7
    assert frames[0].shape[1] == 9 * 4


def test_pytorch_engine_is_sized_from_the_env(tmp_path):
    """The PyTorch engine (model gru: the paper's network) on Classic, as the GPU trains it, here on
    the CPU: 1,345 inputs, 17 actions, 22 achievements, a resumable checkpoint."""
    pytest.importorskip("torch")
    from pycraftax.train.torch_trainer import TorchTrainer

    trainer = TorchTrainer(TrainConfig(**TINY), str(tmp_path), device="cpu")
    assert (trainer.model_config.obs_size, trainer.model_config.num_actions) == (1345, 17)
    assert trainer.params["params/Dense_0/kernel"].shape == (1345, 16)
    state = trainer.env.get_state()
    state["timestep"][:] = 10000 - 1  # every episode reaches max_timesteps on the next step
    trainer.env.set_state(state)
    lines = trainer.run(progress=False)
    assert len(lines) == 3 and all(np.isfinite(m["total_loss"]) for m in lines)
    assert all(0 < m["entropy"] <= np.log(17) + 1e-5 for m in lines)
    assert lines[0]["episodes"] == 4 and list(lines[0]["achievements"]) == list(CLASSIC_NAMES_BY_INDEX)
    resumed = TorchTrainer.resume(str(tmp_path / "checkpoint.npz"), device="cpu")
    assert resumed.env.env_id == CLASSIC and resumed.update == 3
