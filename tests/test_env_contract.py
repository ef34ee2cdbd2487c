"""The registry contract: every gymnasium id pycraftax registers, on every backend present here,
through gymnasium's own checks (check_env on the single env, spaces and dtypes of both adapters
over a trajectory, make_vec shapes) and seeding (same seed same trajectory, different seed
different)."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import pycraftax
from pycraftax.gymnasium_env import NAMESPACE, register_envs

register_envs()
IDS = sorted(name for name, spec in gymnasium.registry.items() if spec.namespace == NAMESPACE)
BACKENDS = ["c"] + (["cuda"] if pycraftax.cuda_available() else [])
# (gymnasium id, backend) for every backend present here that builds the id
CASES = [(f"{NAMESPACE}/{name}", backend) for backend in BACKENDS for name in pycraftax.list_envs(backend)]
NUM_ENVS = 3
STEPS = 12


def test_every_env_id_is_registered():
    assert IDS == sorted(f"{NAMESPACE}/{name}" for name in pycraftax.list_envs())
    assert set(IDS) == {env_id for env_id, backend in CASES if backend == "c"}


def make_single(env_id, backend, **params):
    return gymnasium.make(env_id, backend=backend, **params)


def make_vec(env_id, backend, **params):
    return gymnasium.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode="vector_entry_point", backend=backend,
                              **params)


def single_rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(int(action))
        out += [obs, reward, terminated, truncated]
        if terminated or truncated:
            out.append(env.reset()[0])
    return out


def vector_rollout(envs, seed, actions):
    obs, _ = envs.reset(seed=seed)
    out = [obs]
    for row in actions:
        obs, reward, terminated, truncated, _ = envs.step(row)
        out += [obs, reward, terminated, truncated]
    return out


def assert_same(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("env_id, backend", CASES)
def test_check_env_passes_without_warnings(env_id, backend):
    env = make_single(env_id, backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)


@pytest.mark.parametrize("env_id, backend", CASES)
def test_single_env_spaces_hold_a_trajectory(env_id, backend):
    env = make_single(env_id, backend, max_timesteps=5)  # short episodes: resets inside the trajectory
    assert isinstance(env.observation_space, gymnasium.spaces.Box)
    assert isinstance(env.action_space, gymnasium.spaces.Discrete)
    env.action_space.seed(0)
    obs, info = env.reset(seed=0)
    assert isinstance(info, dict)
    for _ in range(STEPS):
        assert obs.dtype == env.observation_space.dtype and env.observation_space.contains(obs)
        action = env.action_space.sample()
        assert env.action_space.contains(action)
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
        if terminated or truncated:
            assert env.observation_space.contains(obs)
            obs, _ = env.reset()


@pytest.mark.parametrize("env_id, backend", CASES)
def test_make_vec_shapes_dtypes_and_spaces(env_id, backend):
    envs = make_vec(env_id, backend, max_timesteps=5)
    assert isinstance(envs, gymnasium.vector.VectorEnv) and envs.num_envs == NUM_ENVS
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    single_obs = envs.single_observation_space
    assert envs.observation_space.shape == (NUM_ENVS, *single_obs.shape)
    assert envs.observation_space.dtype == single_obs.dtype
    assert envs.action_space.shape == (NUM_ENVS,)
    assert isinstance(envs.single_action_space, gymnasium.spaces.Discrete)
    envs.action_space.seed(0)
    obs, _ = envs.reset(seed=0)
    for _ in range(STEPS):
        assert isinstance(obs, np.ndarray) and envs.observation_space.contains(obs)
        obs, reward, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert reward.shape == terminated.shape == truncated.shape == (NUM_ENVS,)
        assert reward.dtype == np.float32 and terminated.dtype == truncated.dtype == np.bool_
        for name, value in infos.items():
            if name.startswith("_"):
                assert value.shape == (NUM_ENVS,) and value.dtype == np.bool_
            elif name != "final_info":
                assert f"_{name}" in infos and value.shape[0] == NUM_ENVS
        if (terminated | truncated).any():
            np.testing.assert_array_equal(infos["_final_obs"], terminated | truncated)
            assert infos["final_obs"].shape == obs.shape and infos["final_obs"].dtype == obs.dtype


@pytest.mark.parametrize("env_id, backend", CASES)
def test_single_env_same_seed_same_trajectory_different_seed_different(env_id, backend):
    env = make_single(env_id, backend, max_timesteps=5)
    actions = np.random.default_rng(3).integers(0, env.action_space.n, size=STEPS)
    first = single_rollout(env, 7, actions)
    assert_same(first, single_rollout(env, 7, actions))  # the same env, reset with the seed again
    assert_same(first, single_rollout(make_single(env_id, backend, max_timesteps=5), 7, actions))
    other = single_rollout(env, 8, actions)
    assert not np.array_equal(first[0], other[0])


@pytest.mark.parametrize("env_id, backend", CASES)
def test_make_vec_same_seed_same_trajectory_different_seed_different(env_id, backend):
    envs = make_vec(env_id, backend, max_timesteps=5)
    actions = np.random.default_rng(4).integers(0, envs.single_action_space.n, size=(STEPS, NUM_ENVS))
    first = vector_rollout(envs, 7, actions)
    assert_same(first, vector_rollout(make_vec(env_id, backend, max_timesteps=5), 7, actions))
    other = vector_rollout(make_vec(env_id, backend, max_timesteps=5), 8, actions)
    assert not np.array_equal(first[0], other[0])
