"""The shipped policies (pycraftax.pretrained) through the package API and the command line, on
the CPU; their play in the official env is checked in conformance/test_pretrained_upstream.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pycraftax import cli, pretrained
from pycraftax.train.evaluation import evaluate
from pycraftax.train.policy import Policy


def test_every_shipped_policy_loads_and_names_its_env():
    assert pretrained.names() == ["fast-1e9"]
    for name in pretrained.names():
        params = pretrained.load(name)
        policy = Policy(params)
        assert policy.model == pretrained.PRETRAINED[name]["model"]
        assert policy.env_id == pretrained.PRETRAINED[name]["env_id"]
        assert all(v.dtype == np.float32 and np.isfinite(v).all() for v in params.values())


def test_unknown_name_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"must be one of \['fast-1e9'\], got 'paper-1e9'"):
        pretrained.path("paper-1e9")


def test_the_fast_policy_plays_well_above_random():
    res = evaluate(pretrained.load("fast-1e9"), num_episodes=8, num_envs=8, seed=5)
    assert res["episodes"] == 8
    assert res["return_mean"] > 10  # random actions score about 1; its training ended near 31
    assert res["achievements"]["place_table"] > 0.5


def test_evaluation_does_not_depend_on_how_many_envs_run_at_once():
    """Episode i of an evaluation with seed S plays the same world, env keys and action uniforms
    whatever num_envs (and num_episodes): every episode's return is the same."""
    params = pretrained.load("fast-1e9")
    runs = {n: evaluate(params, num_episodes=2, num_envs=n, seed=5) for n in (1, 2)}
    assert runs[1]["episodes"] == runs[2]["episodes"] == 2
    assert runs[1]["returns"] == runs[2]["returns"]
    assert runs[1]["achievements"] == runs[2]["achievements"] and runs[1]["length_mean"] == runs[2]["length_mean"]
    assert runs[1]["returns"][0] != runs[1]["returns"][1]  # different worlds, not one episode twice
    assert evaluate(params, num_episodes=1, num_envs=4, seed=5)["returns"] == runs[1]["returns"][:1]


def test_eval_and_render_take_pretrained(tmp_path, capsys):
    assert cli.main(["eval", "--pretrained", "fast-1e9", "--episodes", "2", "--num-envs", "2", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["episodes"] == 2 and res["env_id"] == "Craftax-Symbolic-v1"
    gif = tmp_path / "ep.gif"
    assert cli.main(["render", "--pretrained", "fast-1e9", "--max-steps", "30", "--out", str(gif)]) == 0
    assert gif.stat().st_size > 0
    assert "pretrained fast-1e9" in capsys.readouterr().out


def test_eval_needs_exactly_one_policy_source(capsys):
    with pytest.raises(SystemExit):
        cli.main(["eval"])
    assert "one of the arguments --checkpoint --pretrained is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["eval", "--pretrained", "fast-1e9", "--checkpoint", "x.npz"])
    with pytest.raises(SystemExit):
        cli.main(["eval", "--pretrained", "nope"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(num_episodes=0), ValueError, "num_episodes must be >= 1, got 0"),
    (dict(num_episodes=2.5), TypeError, "num_episodes must be an int >= 1, got float 2.5"),
    (dict(num_envs=0), ValueError, "num_envs must be >= 1, got 0"),
    (dict(max_steps=0), ValueError, "max_steps must be >= 1, got 0"),
    (dict(seed=-1), ValueError, "seed must be >= 0, got -1"),
    (dict(greedy="yes"), TypeError, "greedy must be a bool, got str 'yes'"),
])
def test_evaluate_names_a_bad_argument(kwargs, exc, message):
    with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")):
        evaluate(pretrained.load("fast-1e9"), **kwargs)


def test_policy_step_names_a_bad_input():
    policy = Policy(pretrained.load("fast-1e9"))
    obs, done, h = np.zeros((2, 8268), np.float32), np.zeros(2, bool), policy.initial_state(2)
    with pytest.raises(ValueError, match=r"obs must have shape \(N, 8268\) \(Craftax-Symbolic-v1's float obs\), "
                                         r"got \(2, 100\)"):
        policy.step(np.zeros((2, 100), np.float32), done, h)
    with pytest.raises(ValueError, match=r"done must be a bool array of shape \(2,\), got bool \(3,\)"):
        policy.step(obs, np.zeros(3, bool), h)
    with pytest.raises(ValueError, match=r"h must have shape \(2, 256\)"):
        policy.step(obs, done, np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"num_envs must be >= 1, got 0"):
        policy.initial_state(0)
    h, logits = policy.step(obs, done, h)
    with pytest.raises(ValueError, match=r"logits must have shape \(N, 43\), got \(2, 5\)"):
        policy.act(np.random.default_rng(0), logits[:, :5], greedy=False)
    assert policy.act(np.random.default_rng(0), logits, greedy=True).shape == (2,)
