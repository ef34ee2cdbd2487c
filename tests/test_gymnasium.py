"""The gymnasium adapters (pycraftax.gymnasium_env): registration, the single env's episode ends
and seeding, the vector env's same-step auto-reset infos (masks, final_obs, final_info) and
action inputs, and bad input."""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import pycraftax
from pycraftax.gymnasium_env import CraftaxGymEnv, CraftaxVectorEnv, gym_id, register_envs

ENV_ID = gym_id("Craftax-Symbolic-v1")
register_envs()


def make_vec(num_envs=3, **kwargs):
    kwargs.setdefault("backend", "c")
    return gymnasium.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def test_register_envs_is_idempotent_and_covers_every_env_id():
    assert register_envs() == register_envs() == [gym_id(name) for name in pycraftax.list_envs()]
    spec = gymnasium.spec(ENV_ID)
    assert spec.namespace == "pycraftax" and spec.vector_entry_point is not None


def test_make_gives_the_raw_env_and_check_env_passes_without_warnings():
    env = gymnasium.make(ENV_ID)
    assert isinstance(env, CraftaxGymEnv) and env.unwrapped is env
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)


def test_single_env_reset_seed_builds_the_batch_envs_world():
    env = gymnasium.make(ENV_ID)
    obs, _ = env.reset(seed=11)
    batch = pycraftax.make("Craftax-Symbolic-v1", num_envs=1, backend="c")
    batch_obs, _ = batch.reset(seed=11)
    np.testing.assert_array_equal(obs, batch_obs[0])


def test_single_env_truncation_returns_the_final_states_obs():
    # The same seed and actions with a longer time limit step through the same states, so the
    # truncating step's obs must be the obs the longer episode shows at that step.
    short = gymnasium.make(ENV_ID, max_timesteps=5)
    long = gymnasium.make(ENV_ID, max_timesteps=1000)
    short.reset(seed=4)
    long.reset(seed=4)
    actions = np.random.default_rng(0).integers(0, 43, size=5)
    for t, action in enumerate(actions):
        obs_s, reward_s, term_s, trunc_s, _ = short.step(int(action))
        obs_l, reward_l, term_l, trunc_l, _ = long.step(int(action))
        np.testing.assert_array_equal(obs_s, obs_l)
        assert reward_s == reward_l and not term_s and not term_l and not trunc_l
        assert trunc_s == (t == 4)
    with pytest.raises(RuntimeError, match="reset"):
        short.step(0)
    obs, _ = short.reset()
    assert short.observation_space.contains(obs)


def test_single_env_death_terminates():
    env = gymnasium.make(ENV_ID)
    env.reset(seed=0)
    state = env.unwrapped.craftax_env.get_state()
    state["player_health"][:] = 0.5
    state["player_food"][:] = 0
    state["player_drink"][:] = 0
    env.unwrapped.craftax_env.set_state(state)
    for _ in range(200):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    assert terminated and not truncated


def test_single_env_bad_input():
    env = gymnasium.make(ENV_ID)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(43)
    with pytest.raises(TypeError, match="action"):
        env.step(1.0)
    for action in (1, np.int64(2), np.uint8(3), np.array(4)):
        env.step(action)
    with pytest.raises(TypeError, match="seed"):
        env.reset(seed=1.5)
    with pytest.raises(ValueError, match="render_mode"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's own warning that "ansi" is not in render_modes
        gymnasium.make(ENV_ID, render_mode="ansi")
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"x": 1})
    before = env.craftax_env.get_state()
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    np.testing.assert_array_equal(env.craftax_env.get_state()["map"], before["map"])  # nothing changed
    for name, value in (("seed", 3), ("resets", "optimistic")):
        with pytest.raises(TypeError, match=name):
            gymnasium.make(ENV_ID, **{name: value})


def test_vector_env_spaces_and_metadata():
    envs = make_vec(4)
    assert isinstance(envs, CraftaxVectorEnv) and isinstance(envs, gymnasium.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.observation_space.shape == (4, 8268) and envs.observation_space.dtype == np.float32
    assert isinstance(envs.action_space, gymnasium.spaces.MultiDiscrete)
    np.testing.assert_array_equal(envs.action_space.nvec, [43] * 4)
    assert gymnasium.spaces.flatdim(envs.single_observation_space) == 8268


def test_vector_env_infos_masks_final_obs_and_final_info():
    envs = make_vec(3, max_timesteps=4)
    longer = make_vec(3, max_timesteps=5)  # the same episodes one step longer: its 4th obs is the final state's
    obs, info = envs.reset(seed=2)
    longer.reset(seed=2)
    previous = obs
    returns = np.zeros(3, np.float32)
    for t in range(4):
        obs, reward, terminated, truncated, infos = envs.step(np.full(3, 5))
        longer_obs = longer.step(np.full(3, 5))[0]
        returns += reward
        for name, value in infos.items():
            if not name.startswith("_") and name not in ("final_obs", "final_info"):
                assert infos[f"_{name}"].shape == (3,) and infos[f"_{name}"].dtype == np.bool_
                assert value.shape[0] == 3
        if t < 3:
            assert "final_obs" not in infos and "final_info" not in infos
            assert not infos["_episode_return"].any() and infos["_discount"].all()
            previous = obs
    assert truncated.all() and not terminated.any()
    np.testing.assert_array_equal(infos["_final_obs"], [True] * 3)
    np.testing.assert_array_equal(infos["_final_info"], [True] * 3)
    assert envs.final_obs_is_terminal
    np.testing.assert_array_equal(infos["final_obs"], longer_obs)  # the obs of the state the episodes ended in
    final = infos["final_info"]
    np.testing.assert_array_equal(final["episode_length"], [4, 4, 4])
    np.testing.assert_array_equal(final["episode_return"], returns)
    assert final["_episode_length"].all() and "done" not in final and "discount" not in final
    assert final["achievements"].shape == (3, 67)
    assert not np.array_equal(obs, previous)  # the reset obs of the next episodes


def test_vector_env_masks_only_the_envs_that_ended():
    envs = make_vec(2, max_timesteps=3)
    envs.reset(seed=0)
    envs.step(np.zeros(2, np.int32))
    state = envs.craftax_env.get_state()
    state["timestep"][1] = 0  # env 1 restarts its clock: env 0 ends a step before it
    envs.craftax_env.set_state(state)
    envs.step(np.zeros(2, np.int32))
    _, _, _, truncated, infos = envs.step(np.zeros(2, np.int32))
    np.testing.assert_array_equal(truncated, [True, False])
    np.testing.assert_array_equal(infos["_final_obs"], [True, False])
    np.testing.assert_array_equal(infos["_episode_length"], [True, False])
    np.testing.assert_array_equal(infos["final_info"]["_episode_return"], [True, False])


def test_vector_env_uses_a_final_obs_the_env_reports(monkeypatch):
    envs = make_vec(2, max_timesteps=2)
    envs.reset(seed=0)
    step = envs.craftax_env.step
    marker = np.full((2, 8268), 0.25, np.float32)

    def step_reporting_final_obs(actions):
        obs, reward, terminated, truncated, info = step(actions)
        return obs, reward, terminated, truncated, {**info, "final_obs": marker}

    monkeypatch.setattr(envs.craftax_env, "step", step_reporting_final_obs)
    envs.step(np.zeros(2, np.int32))
    _, _, _, truncated, infos = envs.step(np.zeros(2, np.int32))
    assert truncated.all() and envs.final_obs_is_terminal
    np.testing.assert_array_equal(infos["final_obs"], marker)
    assert "_final_obs" in infos and "final_obs" not in infos["final_info"]


def test_vector_env_same_seed_same_trajectory():
    def rollout(seed):
        envs = make_vec(3, max_timesteps=6)
        obs, _ = envs.reset(seed=seed)
        out = [obs]
        rng = np.random.default_rng(1)
        for _ in range(8):
            obs, reward, terminated, truncated, _ = envs.step(rng.integers(0, 43, size=3))
            out += [obs, reward, terminated, truncated]
        return out

    first, again, other = rollout(5), rollout(5), rollout(6)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_vector_env_action_inputs():
    envs = make_vec(3)
    envs.reset(seed=0)
    for actions in ([1, 2, 3], np.array([1, 2, 3], np.int64), np.array([1, 2, 3], np.uint8)):
        obs, *_ = envs.step(actions)
        assert obs.shape == (3, 8268)
    torch = pytest.importorskip("torch")
    obs, *_ = envs.step(torch.tensor([4, 5, 6]))
    assert obs.shape == (3, 8268)


def test_vector_env_bad_input():
    envs = make_vec(3)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.zeros(3, np.int32))
    envs.reset(seed=0)
    before = envs.craftax_env.get_state()
    with pytest.raises(TypeError, match="integers"):
        envs.step(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"outside \[0, 43\)"):
        envs.step(np.array([0, 2**32, 0], np.int64))  # would wrap to 0 in int32
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="seed"):
        envs.reset(seed="7")
    with pytest.raises(TypeError, match="seed"):
        envs.reset(seed=[1, 2, 3])  # gymnasium's per-env seed list: one seed seeds the batch here
    after = envs.craftax_env.get_state()
    for name in ("map", "player_position", "timestep", "state_rng"):
        np.testing.assert_array_equal(after[name], before[name])
    with pytest.raises(ValueError, match="backend"):
        make_vec(2, backend="tpu")
    with pytest.raises(ValueError, match="render_mode"):
        make_vec(2, render_mode="human")


def test_vector_env_takes_numpy_integer_num_envs_and_closes():
    envs = make_vec(np.int64(2))
    assert envs.num_envs == 2
    envs.reset(seed=0)
    envs.close()
    assert envs.closed
    with pytest.raises(RuntimeError, match="closed"):
        envs.craftax_env.step(np.zeros(2, np.int32))


def test_cleanrl_torch_example_runs():
    pytest.importorskip("torch")
    example = Path(__file__).resolve().parents[1] / "examples" / "cleanrl_torch_loop.py"
    result = subprocess.run([sys.executable, str(example), "--num-envs", "2", "--num-steps", "8", "--iterations", "2",
                             "--max-timesteps", "6"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "iteration 2/2" in result.stdout and "truncated 4" in result.stdout


def test_sync_vectorization_over_the_single_env_gives_the_final_states_obs():
    # The exact-final_obs path docs/GYMNASIUM.md names: gymnasium's SyncVectorEnv seeds env i with
    # seed + i, so single envs with a longer time limit show, at the truncating step, the final obs.
    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", max_timesteps=4,
                              vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    longer = [gymnasium.make(ENV_ID, max_timesteps=1000) for _ in range(2)]
    envs.reset(seed=9)
    for i, env in enumerate(longer):
        env.reset(seed=9 + i)
    actions = np.random.default_rng(2).integers(0, 43, size=(4, 2))
    for row in actions:
        _, _, terminated, truncated, infos = envs.step(row)
        longer_obs = [env.step(int(action))[0] for env, action in zip(longer, row)]
    assert truncated.all() and not terminated.any()
    for i in range(2):
        np.testing.assert_array_equal(infos["final_obs"][i], longer_obs[i])


def test_separate_vector_envs_step_concurrently_in_threads():
    actions = np.random.default_rng(5).integers(0, 43, size=(6, 2))

    def rollout(results, index):
        envs = make_vec(2, max_timesteps=4)
        obs, _ = envs.reset(seed=index)
        out = [obs]
        for row in actions:
            out.append(envs.step(row)[0])
        results[index] = out

    threaded, sequential = {}, {}
    threads = [threading.Thread(target=rollout, args=(threaded, i)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(2):
        rollout(sequential, i)
        for a, b in zip(threaded[i], sequential[i]):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("env_id", pycraftax.list_envs("c"))
def test_rgb_array_render_on_every_id(env_id):
    """render_mode="rgb_array" on every id (what gymnasium.wrappers.RecordVideo needs): the
    textured picture of the env, following its state; check_env passes with it."""
    env = gymnasium.make(gym_id(env_id), render_mode="rgb_array", render_block_size=8)
    assert env.render_mode == "rgb_array" and "rgb_array" in env.metadata["render_modes"]
    env.reset(seed=3)
    first = env.render()
    classic = "Classic" in env_id
    assert first.dtype == np.uint8 and first.shape == ((9 if classic else 13) * 8, (9 if classic else 11) * 8, 3)
    for _ in range(3):
        env.step(1)  # moving left: the view shifts
    assert not np.array_equal(env.render(), first)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=False)
    assert gymnasium.make(gym_id(env_id)).render() is None  # no render_mode: nothing drawn
    envs = gymnasium.make_vec(gym_id(env_id), num_envs=2, vectorization_mode="vector_entry_point", backend="c",
                              render_mode="rgb_array", render_block_size=8)
    envs.reset(seed=1)
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == first.shape and not np.array_equal(frames[0], frames[1])
    with pytest.raises(ValueError, match="block_size"):
        gymnasium.make(gym_id(env_id), render_mode="rgb_array", render_block_size=1)
