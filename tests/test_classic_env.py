"""Craftax-Classic-Symbolic-v1 through pycraftax.make on backend="c": the env contract (spaces,
bad input named, seeding), and auto-reset and optimistic steps equal to the C-API-level results
of conformance/classic_c.py (which the conformance suite checks against craftax 1.6.1)."""

from __future__ import annotations

import dataclasses
import warnings

import gymnasium
import numpy as np
import pytest

import pycraftax
from conformance import classic_c as cc
from pycraftax import classic_state, jax_random
from pycraftax.achievements import CLASSIC_NAMES_BY_INDEX

ENV_ID = "Craftax-Classic-Symbolic-v1"


def make(num_envs=4, **kwargs):
    kwargs.setdefault("backend", "c")
    return pycraftax.make(ENV_ID, num_envs=num_envs, **kwargs)


def test_listed_and_sized():
    assert ENV_ID in pycraftax.list_envs()
    env = make()
    assert env.single_observation_space.shape == (1345,) and env.single_observation_space.dtype == np.float32
    assert env.single_action_space == gymnasium.spaces.Discrete(17)
    assert env.observation_space.shape == (4, 1345)
    high = env.single_observation_space.high
    assert np.all(high[:1323] == 1.0)
    # counts <= 9 as float16 / 10 (obs.h): 9 shows as 0.89990234375
    assert np.all(high[1323:1339] == np.float32(0.89990234375)) and np.all(high[1339:] == 1.0)


def test_obs_stay_inside_the_space():
    env = make(8, max_timesteps=40)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(60):
        assert env.single_observation_space.contains(obs[0])
        assert np.all(obs >= 0) and np.all(obs <= env.single_observation_space.high)
        obs = env.step(rng.integers(0, 17, 8))[0]


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"backend": "gpu"}, ValueError, "unknown backend"),
        ({"num_envs": 0}, ValueError, "num_envs"),
        ({"obs": "compact"}, ValueError, "compact"),
        ({"max_attribute": 5}, TypeError, "unknown parameter 'max_attribute'.*zombie_health"),
        ({"zombie_health": 0}, ValueError, r"zombie_health must be in \[1, "),
        ({"spawn_cow_chance": 1.5}, ValueError, r"spawn_cow_chance must be in \[0.0, 1.0\]"),
        ({"spawn_cow_chance": "x"}, TypeError, "spawn_cow_chance must be a float"),
        ({"always_diamond": 1}, TypeError, "always_diamond must be a bool"),
        ({"fractal_noise_angles": (np.zeros((4, 4)), None, None, None)}, ValueError, r"shape \(5, 5\)"),
        ({"map_size": (48, 48)}, ValueError, r"StaticEnvParams.map_size=\(48, 48\) is not supported"),
        ({"resets": "optimistic", "reset_ratio": 3}, ValueError, "reset_ratio"),
    ],
)
def test_bad_make_arguments_are_named(kwargs, exc, match):
    kwargs = dict(kwargs)
    num_envs = kwargs.pop("num_envs", 4)
    with pytest.raises(exc, match=match):
        make(num_envs, **kwargs)


def test_auto_backend_picks_cuda_where_available_else_warns_and_uses_c():
    if pycraftax.cuda_available():
        env = pycraftax.make(ENV_ID, num_envs=2, backend="auto")
        assert env.backend == "cuda" and type(env).__name__ == "CudaClassicEnv"
        return
    with pytest.warns(UserWarning, match="no CUDA backend available"):
        env = pycraftax.make(ENV_ID, num_envs=2, backend="auto")
    assert env.backend == "c" and type(env).__name__ == "CraftaxClassicEnv"
    with pytest.raises(RuntimeError, match="backend='cuda' is not available"):
        pycraftax.make(ENV_ID, num_envs=2, backend="cuda")


def test_static_params_at_upstream_defaults_are_accepted():
    env = make(2, map_size=(64, 64), max_zombies=3, max_arrows=3)
    assert env.static_params.map_size == (64, 64)


def test_bad_actions_are_named_and_change_nothing():
    env = make(2)
    env.reset(seed=0)
    before = env.get_state()
    with pytest.raises(ValueError, match=r"actions\[1\] = 17 is outside \[0, 17\)"):
        env.step(np.array([0, 17]))
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
        env.step(np.zeros(3, dtype=np.int32))
    after = env.get_state()
    assert all(np.array_equal(before[name], after[name]) for name in before)


def rollout(seed, steps=40, **kwargs):
    env = make(4, seed=seed, max_timesteps=15, **kwargs)
    out = [env.reset(seed=seed)[0]]
    rng = np.random.default_rng(1)
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(rng.integers(0, 17, 4))
        out += [obs, reward, terminated, truncated]
    return out


def test_same_seed_same_trajectory_other_seed_other():
    first, second, other = rollout(5), rollout(5), rollout(6)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


@pytest.mark.parametrize("resets", ["auto", "optimistic"])
def test_make_steps_equal_the_c_api(resets):
    """reset(seed) and step() through make give the C API's results for the keys CraftaxVecEnv
    documents: reset keys split(PRNGKey(seed), n), then key, sub = split(key) each step and
    split(sub, n) (auto) or sub itself (optimistic)."""
    n, seed, ratio = 8, 11, 4
    extra = {"reset_ratio": ratio} if resets == "optimistic" else {}
    env = make(n, seed=seed, resets=resets, max_timesteps=12, zombie_health=2, spawn_zombie_base_chance=0.5, **extra)
    params = cc.c_params(max_timesteps=12, zombie_health=2, spawn_zombie_base_chance=0.5)
    obs, _ = env.reset(seed=seed)
    key = jax_random.prng_key(seed)
    states, c_obs = cc.c_reset(jax_random.split(key, n), params)
    np.testing.assert_array_equal(obs, c_obs)
    rng = np.random.default_rng(2)
    ended = 0
    for _ in range(30):
        actions = rng.integers(0, 17, n).astype(np.int32)
        obs, reward, terminated, truncated, info = env.step(actions)
        key, sub = jax_random.split(key, 2)
        if resets == "auto":
            c_obs, c_reward, c_done = cc.c_step(states, jax_random.split(sub, n), actions, params, auto_reset=True)
        else:
            c_obs, c_reward, c_done, _ = cc.c_step_optimistic(states, sub, actions, ratio, params)
        np.testing.assert_array_equal(obs, c_obs)
        np.testing.assert_array_equal(reward, c_reward)
        np.testing.assert_array_equal(terminated | truncated, c_done)
        np.testing.assert_array_equal(info["done"], c_done)
        ended += int(c_done.sum())
    assert ended >= n  # max_timesteps=12 over 30 steps: every env ended at least once
    got, want = env.get_state(), classic_state.get_state(states)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_step_with_keys_and_observe_equal_the_c_api():
    n = 3
    env = make(n)
    keys = jax_random.split(jax_random.prng_key(4), n)
    obs, _ = env.reset_with_keys(keys)
    states, c_obs = cc.c_reset(keys)
    np.testing.assert_array_equal(obs, c_obs)
    actions = np.array([1, 5, 16], dtype=np.int32)
    obs, reward, done, info = env.step_with_keys(actions, keys)
    c_obs, c_reward, c_done = cc.c_step(states, keys, actions)
    np.testing.assert_array_equal(obs, c_obs)
    np.testing.assert_array_equal(reward, c_reward)
    np.testing.assert_array_equal(done, c_done)
    np.testing.assert_array_equal(env.observe(), cc.c_observe(states))
    assert sorted(k for k in info if k.startswith("Achievements/")) == sorted(
        f"Achievements/{name}" for name in CLASSIC_NAMES_BY_INDEX)


def test_info_reports_finished_episodes():
    n = 4
    env = make(n, max_timesteps=6)
    env.reset(seed=0)
    rng = np.random.default_rng(3)
    for step in range(1, 7):
        obs, reward, terminated, truncated, info = env.step(rng.integers(0, 17, n))
    done = terminated | truncated
    assert done.all()  # truncated at max_timesteps unless died before
    assert info["achievements"].shape == (n, 22) and info["achievements"].dtype == bool
    np.testing.assert_array_equal(info["episode_length"], np.full(n, 6, dtype=np.int32))
    assert len([k for k in info if k.startswith("Achievements/")]) == 22
    collect = info["Achievements/collect_wood"]
    np.testing.assert_array_equal(collect, info["achievements"][:, 0] * np.float32(100))


def test_get_set_state_round_trip_continues_the_same():
    env, copy = make(3, seed=1), make(3, seed=1)
    env.reset(seed=1)
    rng = np.random.default_rng(4)
    for _ in range(10):
        env.step(rng.integers(0, 17, 3))
    copy.set_state(env.get_state())
    copy.key = env.key
    actions = rng.integers(0, 17, 3)
    for a, b in zip(env.step(actions)[:4], copy.step(actions)[:4]):
        np.testing.assert_array_equal(a, b)
    assert set(env.get_state()) == {leaf.name for leaf in classic_state.LEAVES}


def test_set_state_names_the_bad_leaf():
    env = make(2)
    env.reset(seed=0)
    state = env.get_state()
    state["map"][0, 0, 0] = 17
    with pytest.raises(ValueError, match=r"state\['map'\] value 17 .* outside \[0, 16\]"):
        env.set_state(state)
    with pytest.raises(KeyError, match="Craftax-Classic's EnvState.*missing leaves"):
        env.set_state({"map": state["map"]})
    state = env.get_state()
    state["zombies.mask"][:] = True
    state["zombies.health"][:] = 0
    with pytest.raises(ValueError, match="zombies.health"):
        env.set_state(state)


def test_gymnasium_single_env_passes_check_env():
    from gymnasium.utils.env_checker import check_env

    from pycraftax.gymnasium_env import register_envs

    register_envs()
    env = gymnasium.make(f"pycraftax/{ENV_ID}", backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    assert env.observation_space.shape == (1345,) and env.action_space.n == 17


def test_names_and_params_are_upstreams():
    """The achievement table and the EnvParams/StaticEnvParams defaults against craftax 1.6.1's
    craftax_classic (skipped only where craftax is not installed)."""
    constants = pytest.importorskip("craftax.craftax_classic.constants")
    upstream_state = pytest.importorskip("craftax.craftax_classic.envs.craftax_state")
    from pycraftax.params import ClassicEnvParams, ClassicStaticEnvParams

    assert CLASSIC_NAMES_BY_INDEX == tuple(a.name.lower() for a in sorted(constants.Achievement, key=lambda a: a.value))
    for ours, theirs in ((ClassicEnvParams(), upstream_state.EnvParams()),
                         (ClassicStaticEnvParams(), upstream_state.StaticEnvParams())):
        assert dataclasses.asdict(ours) == {f.name: getattr(theirs, f.name) for f in dataclasses.fields(theirs)}


def test_default_params_reach_c_as_cs_defaults():
    from pycraftax._native import ffi
    from pycraftax.params import ClassicEnvParams, to_c_classic

    assert bytes(ffi.buffer(to_c_classic(ClassicEnvParams()))) == bytes(ffi.buffer(cc.c_params()))
    overridden = to_c_classic(ClassicEnvParams(spawn_cow_chance=0.5, always_diamond=False, max_timesteps=7))
    assert bytes(ffi.buffer(overridden)) == bytes(ffi.buffer(
        cc.c_params(spawn_cow_chance=0.5, always_diamond=0, max_timesteps=7)))


def test_noise_angle_overrides_reach_the_world():
    rng = np.random.default_rng(5)
    angles = (rng.random((5, 5)), None, rng.random((9, 33)), None)
    env = make(2, fractal_noise_angles=angles)
    keys = jax_random.split(jax_random.prng_key(9), 2)
    obs, _ = env.reset_with_keys(keys)
    states, c_obs = cc.c_reset(keys, cc.c_params(fractal_noise_angles=angles))
    np.testing.assert_array_equal(obs, c_obs)
    np.testing.assert_array_equal(env.get_state()["map"], classic_state.get_state(states)["map"])
    assert not np.array_equal(obs, cc.c_reset(keys)[1])  # the overrides changed the worlds


def test_list_envs_by_backend():
    assert ENV_ID in pycraftax.list_envs("c") and ENV_ID in pycraftax.list_envs("cuda")
    assert set(pycraftax.list_envs("c")) == set(pycraftax.list_envs())
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        pycraftax.list_envs("gpu")
