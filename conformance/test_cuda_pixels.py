"""C vs CUDA for the pixel envs: Craftax-Pixels-v1 and Craftax-Classic-Pixels-v1 on
backend="cuda" (pycraftax.cuda_pixels_env: cuda/env_pixels.cuh, cuda/classic_pixels.cuh) give
the C pixel envs' results bit for bit: every obs pixel, every state leaf, reward, flag and
final_obs.

  * reset obs and states from many keys (Hypothesis-drawn too) and batch sizes around warp and
    block boundaries;
  * random-action lockstep through env.step with auto-reset (short time limits and injected
    deaths, so both reset paths run; short days, so the night's noise is drawn) and with
    optimistic resets, final_obs reported;
  * step_with_keys and observe() lockstep;
  * injected busy states (pycraftax.porting.inject: every floor, mobs and projectiles on
    screen, sleep, inventories, dark floors with random light maps) set on both backends, then
    observed and stepped with the busy policy;
  * device outputs: CudaArray obs and final_obs with the picture shape, a rejected action
    changing nothing.

Runs where a GPU and cuda/build/libcraftax_cuda.so are usable; elsewhere the module is skipped
with the reason. No JAX needed (the C pixel envs' own parity with upstream is test_pixels.py).

    /work/venv/bin/python -m pytest conformance/test_cuda_pixels.py
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycraftax
from conftest import (FEW_EXAMPLES, NUM_LEVELS, PROFILE, compare_obs, compare_states, is_per_level, key_stream,
                      record_summary)

if not pycraftax.cuda_available():
    from pycraftax import cuda_env

    pytest.skip(f"needs a GPU and the CUDA build: {cuda_env.unavailable_reason()}", allow_module_level=True)

from conformance.final_obs_check import kill  # noqa: E402
from pycraftax.cuda_env import CudaArray  # noqa: E402
from pycraftax.porting.inject import busy_actions, mutate, perturb  # noqa: E402

pytestmark = pytest.mark.cuda
FULL, CLASSIC = "Craftax-Pixels-v1", "Craftax-Classic-Pixels-v1"
IDS = (FULL, CLASSIC)
SHAPES = {FULL: (130, 110, 3), CLASSIC: (63, 63, 3)}
BATCHES = {"dev": [1, 33], "ci": [1, 31, 33, 129], "thorough": [1, 2, 31, 33, 65, 127, 129, 300]}[PROFILE]
STEPS = {"dev": 20, "ci": 40, "thorough": 200}[PROFILE]
SHORT = {"max_timesteps": 9, "day_length": 12}  # episodes end every few steps, nights come often
_COMPARED = {env_id: 0 for env_id in IDS}  # obs compared, for the summary


def make(env_id, backend, n, **kwargs):
    return pycraftax.make(env_id, num_envs=n, backend=backend, seed=5, **kwargs)


def host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, CudaArray) else np.asarray(x)


def same_obs(env_id, c_obs, g_obs, where) -> None:
    g = host(g_obs)
    assert g.shape == c_obs.shape == (c_obs.shape[0], *SHAPES[env_id]), (g.shape, c_obs.shape)
    compare_obs(c_obs, g, context=where)
    _COMPARED[env_id] += c_obs.shape[0]


def same_states(c_env, g_env, where) -> None:
    compare_states(c_env.get_state(), g_env.get_state(), context=where)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("n", BATCHES)
def test_reset_obs_and_states(env_id, n):
    keys = key_stream(n, seed=n)
    with make(env_id, "c", n) as c, make(env_id, "cuda", n) as g:
        same_obs(env_id, c.reset_with_keys(keys)[0], g.reset_with_keys(keys)[0], f"reset_with_keys, {n} envs")
        same_states(c, g, f"reset_with_keys, {n} envs")
        same_obs(env_id, c.reset(seed=3)[0], g.reset(seed=3)[0], f"reset(seed=3), {n} envs")
        same_obs(env_id, c.observe(), g.observe(), f"observe after reset, {n} envs")


@pytest.mark.parametrize("env_id", IDS)
@settings(max_examples=max(FEW_EXAMPLES, 3), deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.one_of(st.sampled_from([1, 31, 33, 129]), st.integers(1, 96)), seed=st.integers(0, 2**32 - 1))
def test_reset_obs_on_drawn_keys(env_id, n, seed):
    keys = np.random.default_rng(seed).integers(0, 2**32, size=(n, 2), dtype=np.uint32)
    with make(env_id, "c", n) as c, make(env_id, "cuda", n) as g:
        same_obs(env_id, c.reset_with_keys(keys)[0], g.reset_with_keys(keys)[0], f"keys from seed {seed}, {n} envs")
        same_states(c, g, f"keys from seed {seed}, {n} envs")


def _lockstep(env_id, n, steps, seed, resets="auto", reset_ratio=None):
    ended = 0
    with make(env_id, "c", n, resets=resets, reset_ratio=reset_ratio, **SHORT) as c, \
            make(env_id, "cuda", n, resets=resets, reset_ratio=reset_ratio, **SHORT) as g:
        for env in (c, g):
            env.report_final_obs = True
        same_obs(env_id, c.reset(seed=seed)[0], g.reset(seed=seed)[0], "reset")
        rng = np.random.default_rng(seed)
        for t in range(steps):
            where = f"{resets} step {t}"
            if t % 5 == 3:  # deaths as well as time limits end episodes
                kill(c, np.random.default_rng(seed + t), 0.3)
                kill(g, np.random.default_rng(seed + t), 0.3)
            actions = rng.integers(0, c.num_actions, n).astype(np.int32)
            c_out, g_out = c.step(actions), g.step(actions)
            same_obs(env_id, c_out[0], g_out[0], where)
            for k, name in ((1, "reward"), (2, "terminated"), (3, "truncated")):
                np.testing.assert_array_equal(host(g_out[k]), c_out[k], err_msg=f"{where}: {name}")
            same_obs(env_id, c_out[4]["final_obs"], g_out[4]["final_obs"], f"{where}: final_obs")
            for key in ("episode_return", "episode_length", "discount", "achievements"):
                np.testing.assert_array_equal(host(g_out[4][key]), np.asarray(c_out[4][key]),
                                              err_msg=f"{where}: info {key}")
            if t % 7 == 6:
                same_states(c, g, where)
            ended += int((c_out[2] | c_out[3]).sum())
        same_states(c, g, f"{resets} after {steps} steps")
    assert ended > n, f"only {ended} episodes ended: the reset paths were not exercised"


@pytest.mark.parametrize("env_id", IDS)
def test_lockstep_auto_reset(env_id):
    _lockstep(env_id, 37, STEPS, seed=11)


@pytest.mark.parametrize("env_id", IDS)
def test_lockstep_optimistic_resets(env_id):
    _lockstep(env_id, 32, STEPS, seed=12, resets="optimistic", reset_ratio=4)


@pytest.mark.parametrize("env_id", IDS)
def test_step_with_keys_and_observe(env_id):
    n = 33
    rng = np.random.default_rng(13)
    with make(env_id, "c", n, day_length=12) as c, make(env_id, "cuda", n, day_length=12) as g:
        keys = key_stream(n, seed=13)
        same_obs(env_id, c.reset_with_keys(keys)[0], g.reset_with_keys(keys)[0], "reset_with_keys")
        for t in range(STEPS // 2):
            actions = rng.integers(0, c.num_actions, n).astype(np.int32)
            step_keys = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)
            c_obs, c_reward, c_done, _ = c.step_with_keys(actions, step_keys)
            g_obs, g_reward, g_done, _ = g.step_with_keys(actions, step_keys)
            same_obs(env_id, c_obs, g_obs, f"step_with_keys {t}")
            np.testing.assert_array_equal(host(g_reward), c_reward, err_msg=f"step_with_keys {t}: reward")
            np.testing.assert_array_equal(host(g_done), c_done, err_msg=f"step_with_keys {t}: done")
        same_obs(env_id, c.observe(), g.observe(), "observe")
        same_states(c, g, "after step_with_keys")


def _injected(env_id, seed: int) -> dict:
    """Busy states built on the C env's resets: pycraftax.porting.inject's mutate (full game: a
    random floor, mobs and projectiles around the player, sleep, inventories) with the player's
    view darkened or lit at random (light maps) and moved to the map's edge now and then, or
    perturb (Classic) with the light anywhere between day and night."""
    rng = np.random.default_rng(seed)
    n = 32
    with make(env_id, "c", n) as env:
        env.reset_with_keys(key_stream(n, seed=seed % 7))
        s = env.get_state()
    if env_id == CLASSIC:
        s = perturb(s, rng)
        for e in range(n):
            if rng.random() < 0.3:
                s["player_position"][e] = (rng.choice([0, 2, 61, 63]), rng.choice([1, 3, 60, 63]))
            s["light_level"][e] = np.float32(rng.choice([0.0, 0.1, 0.49, 0.5, 0.8, 1.0]))
        return s
    s = mutate(s, rng)
    for e in range(n):
        level = int(s["player_level"][e])
        if level != e % NUM_LEVELS:  # every floor, the boss's too
            target = e % NUM_LEVELS
            for name, value in s.items():
                if is_per_level(name, value.shape):
                    value[e, [level, target]] = value[e, [target, level]]
            s["player_level"][e] = level = target
        x, y = (int(v) for v in s["player_position"][e])
        window = (slice(max(x - 5, 0), x + 6), slice(max(y - 6, 0), y + 7))
        shape = s["light_map"][e, level][window].shape
        s["light_map"][e, level][window] = rng.choice(np.float32([0.0, 0.02, 0.05, 0.3, 0.77, 1.0]), size=shape)
        s["item_map"][e, level][window] = rng.choice([0, 0, 0, 1, 2, 3, 4], size=shape)
    return s


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("seed", [0, 1, 2] if PROFILE != "dev" else [0])
def test_injected_states(env_id, seed):
    state = _injected(env_id, seed)
    n = state["player_position"].shape[0]
    rng = np.random.default_rng(seed)
    with make(env_id, "c", n) as c, make(env_id, "cuda", n) as g:
        c.set_state(state)
        g.set_state(state)
        same_obs(env_id, c.observe(), g.observe(), f"injected seed {seed}: observe")
        actions = busy_actions(rng, 8, n, c.num_actions)
        for t in range(8):
            step_keys = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)
            c_obs, c_reward, _, _ = c.step_with_keys(actions[t], step_keys)
            g_obs, g_reward, _, _ = g.step_with_keys(actions[t], step_keys)
            same_obs(env_id, c_obs, g_obs, f"injected seed {seed}: step_with_keys {t}")
            np.testing.assert_array_equal(host(g_reward), c_reward, err_msg=f"injected step {t}: reward")
        same_states(c, g, f"injected seed {seed}: after the busy steps")
        c.set_state(state)
        g.set_state(state)
        for env in (c, g):
            env.report_final_obs = True
        for t in range(4):
            c_out, g_out = c.step(actions[t]), g.step(actions[t])
            same_obs(env_id, c_out[0], g_out[0], f"injected seed {seed}: step {t}")
            same_obs(env_id, c_out[4]["final_obs"], g_out[4]["final_obs"], f"injected seed {seed}: final_obs {t}")


@pytest.mark.parametrize("env_id", IDS)
def test_device_outputs_and_rejected_actions(env_id):
    n = 8
    with make(env_id, "cuda", n) as g:
        g.report_final_obs = True
        obs, _ = g.reset(seed=0)
        assert isinstance(obs, CudaArray) and obs.shape == (n, *SHAPES[env_id]) and obs.dtype == np.float32
        assert obs.__cuda_array_interface__["shape"] == (n, *SHAPES[env_id])
        assert obs.__dlpack_device__()[0] == 2  # kDLCUDA
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():  # zero-copy: the same device memory
            tensor = torch.from_dlpack(obs)
            assert tensor.data_ptr() == obs.ptr and tuple(tensor.shape) == (n, *SHAPES[env_id])
            np.testing.assert_array_equal(tensor.cpu().numpy(), host(obs))
        out = g.step(np.zeros(n, np.int32))
        assert out[4]["final_obs"].shape == (n, *SHAPES[env_id])
        before, obs_before = g.get_state(), host(out[0]).copy()
        with pytest.raises(ValueError, match="actions"):
            g.step(np.full(n, g.num_actions, np.int32))
        compare_states(before, g.get_state(), context="after a rejected step")
        compare_obs(obs_before, host(g.observe()), context="after a rejected step")
        pixels = host(obs)
        assert 0.0 <= pixels.min() and pixels.max() <= 1.0


def test_cuda_pixels_summary():
    assert all(_COMPARED.values()), f"a game was never compared: {_COMPARED}"
    record_summary(f"test_cuda_pixels: C vs CUDA pixel obs compared bitwise (all equal): {_COMPARED}")
