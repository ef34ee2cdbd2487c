"""step()'s info["final_obs"] on backend="c", both games, both reset strategies: the obs of the
state each ended episode ended in (by death and by the time limit), equal to step_env's obs and
observe() of that state; the default step (no final_obs) unchanged by it; the gymnasium
VectorEnv passing it on as infos["final_obs"] with final_obs_is_terminal."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from conformance.final_obs_check import assert_same_without_final_obs, check_final_obs, step_env_keys
from pycraftax import jax_random
from pycraftax.gymnasium_env import CraftaxVectorEnv

GAMES = ["Craftax-Symbolic-v1", "Craftax-Classic-Symbolic-v1", "Craftax-Pixels-v1", "Craftax-Classic-Pixels-v1"]
RESETS = [("auto", None), ("optimistic", 4)]
NUM_ENVS = 8
MAX_TIMESTEPS = 5


def make(env_id, resets="auto", reset_ratio=None, **params):
    return pycraftax.make(env_id, num_envs=NUM_ENVS, backend="c", seed=3, resets=resets, reset_ratio=reset_ratio,
                          **params)


@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("resets,reset_ratio", RESETS)
def test_final_obs_is_the_terminal_obs(env_id, resets, reset_ratio):
    env = make(env_id, resets, reset_ratio, max_timesteps=MAX_TIMESTEPS)
    reference = make(env_id, max_timesteps=MAX_TIMESTEPS)
    counts = check_final_obs(env, reference, steps=12, seed=11, kill_every=3)
    assert counts["terminated"] > 0 and counts["truncated"] > 0, counts


@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("resets,reset_ratio", RESETS)
def test_default_step_is_unchanged_by_final_obs(env_id, resets, reset_ratio):
    assert_same_without_final_obs(lambda: make(env_id, resets, reset_ratio, max_timesteps=MAX_TIMESTEPS),
                                  steps=8, seed=5)


def test_report_final_obs_is_off_by_default_and_checked():
    env = make(GAMES[0])
    assert env.report_final_obs is False
    env.reset(seed=0)
    assert "final_obs" not in env.step(np.zeros(NUM_ENVS, dtype=np.int32))[4]
    with pytest.raises(TypeError, match="report_final_obs must be True or False"):
        env.report_final_obs = 1
    assert env.report_final_obs is False


@pytest.mark.parametrize("env_id", GAMES)
def test_vector_env_final_obs_is_the_terminal_obs(env_id):
    envs = CraftaxVectorEnv(NUM_ENVS, env_id=env_id, backend="c", seed=2, max_timesteps=MAX_TIMESTEPS)
    reference = make(env_id, max_timesteps=MAX_TIMESTEPS)
    env = envs.craftax_env
    rng = np.random.default_rng(0)
    envs.reset(seed=4)
    ended_total = 0
    for t in range(2 * MAX_TIMESTEPS):
        before = env.get_state()
        _, sub = jax_random.split(env.key, 2)
        actions = rng.integers(0, env.num_actions, NUM_ENVS)
        _, _, terminated, truncated, infos = envs.step(actions)
        assert envs.final_obs_is_terminal
        ended = terminated | truncated
        if not ended.any():
            assert "final_obs" not in infos
            continue
        ended_total += int(ended.sum())
        reference.set_state(before)
        ref_obs, _, _, _ = reference.step_with_keys(actions.astype(np.int32), step_env_keys(env, sub))
        np.testing.assert_array_equal(infos["_final_obs"], ended)
        np.testing.assert_array_equal(infos["final_obs"][ended], ref_obs[ended], err_msg=f"step {t}")
    assert ended_total >= NUM_ENVS  # every env hit the time limit at least once
