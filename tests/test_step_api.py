"""The Python step API contract (no JAX needed): shapes, dtypes, auto-reset, truncation vs
termination, episode statistics in info, determinism of the env's own key stream."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax


def make(n=3, **params):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=1, **params)
    env.reset(seed=0)
    return env


def test_step_shapes_and_dtypes():
    env = make()
    obs, reward, terminated, truncated, info = env.step(np.zeros(3, dtype=np.int64))
    assert obs.shape == (3, 8268) and obs.dtype == np.float32
    assert reward.shape == (3,) and reward.dtype == np.float32
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    assert info["achievements"].shape == (3, 67) and info["achievements"].dtype == np.bool_
    assert info["episode_return"].dtype == np.float32 and info["episode_length"].dtype == np.int32
    assert len([k for k in info if k.startswith("Achievements/")]) == 67
    np.testing.assert_array_equal(obs, env.observe())


def test_truncation_resets_in_the_same_step():
    env = make(max_timesteps=4)
    returns = np.zeros(3, np.float32)
    for t in range(4):
        obs, reward, terminated, truncated, info = env.step(np.zeros(3, dtype=np.int32))
        returns += reward
    assert truncated.all() and not terminated.any()
    np.testing.assert_array_equal(info["episode_length"], [4, 4, 4])
    np.testing.assert_array_equal(info["episode_return"], returns)
    assert info["achievements"].any(axis=1).shape == (3,)
    state = env.get_state()
    np.testing.assert_array_equal(state["timestep"], [0, 0, 0])  # already the next episode
    obs, *_ , info = env.step(np.zeros(3, dtype=np.int32))
    np.testing.assert_array_equal(info["episode_length"], [0, 0, 0])
    assert not info["achievements"].any()


def test_death_is_terminated_not_truncated():
    env = make(n=2)
    state = env.get_state()
    state["player_health"][:] = np.float32(0.05)
    state["player_food"][:] = 0
    state["player_drink"][:] = 0
    state["player_recover"][:] = np.float32(-15.5)
    env.set_state(state)
    _, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.int32))
    assert terminated.all() and not truncated.any()
    assert info["done"].all()
    np.testing.assert_array_equal(info["discount"], [0.0, 0.0])


def test_same_seed_same_trajectory():
    a, b = make(), make()
    rng = np.random.default_rng(0)
    for _ in range(20):
        actions = rng.integers(0, 43, size=3)
        ra = a.step(actions)
        rb = b.step(actions)
        np.testing.assert_array_equal(ra[0], rb[0])
        np.testing.assert_array_equal(ra[1], rb[1])


def test_step_with_keys_has_no_auto_reset():
    env = make(n=2, max_timesteps=2)
    keys = np.zeros((2, 2), np.uint32)
    for t in range(3):
        _, _, done, info = env.step_with_keys(np.zeros(2, np.int32), keys + t)
    assert done.all()
    np.testing.assert_array_equal(env.get_state()["timestep"], [3, 3])
    np.testing.assert_array_equal(info["discount"], [0.0, 0.0])


@pytest.mark.parametrize("bad", [[0, 0, 0], np.zeros(3, np.float32), np.zeros(2, np.int32), np.full(3, 43)])
def test_bad_actions_rejected(bad):
    env = make()
    before = env.get_state()
    with pytest.raises((TypeError, ValueError), match="actions"):
        env.step(bad)
    after = env.get_state()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
