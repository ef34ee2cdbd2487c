"""Craftax-Classic optimistic resets: craftax_classic_step_optimistic against Craftax_Baselines'
OptimisticResetVecEnvWrapper.step (conformance/wrappers.py) over upstream's Classic
no-auto-reset env, jitted: every state leaf, obs, reward, done and the world each ended env
took, every step.

Cases: all envs truncated together (more ended envs than fresh worlds, so several share the
default world i / reset_ratio), and staggered ends from timesteps near the limit (fewer
ended envs than worlds: the gumbel top-k order assigns them).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import compare_obs, compare_states, key_stream, require_jax

require_jax()

import jax.numpy as jnp  # noqa: E402

from conformance import classic_c as cc  # noqa: E402
from conformance import classic_upstream as cu  # noqa: E402
from pycraftax import classic_state, jax_random  # noqa: E402

pytestmark = pytest.mark.jax


def run(num_envs: int, reset_ratio: int, steps: int, max_t: int, timesteps=None, seed: int = 0):
    params = cu.DEFAULT_PARAMS.replace(max_timesteps=max_t)
    wrapper_step = cu.optimistic_step_fn(num_envs, reset_ratio, params)
    init = cu.upstream_reset(key_stream(num_envs, seed=seed), params)[1]
    if timesteps is not None:
        init["timestep"] = timesteps.astype(np.int32)
    template = cu.upstream_reset(key_stream(num_envs, seed=seed), params)[2]
    u_state = cu.unflatten_state(template, init)
    states = np.zeros((num_envs, classic_state.STATE_SIZE), dtype=np.uint8)
    classic_state.set_state(states, init)
    c_params = cc.c_params(max_timesteps=max_t)
    key = jax_random.prng_key(seed)
    rng = np.random.default_rng(seed)
    ended = shared = 0
    for t in range(steps):
        actions = rng.integers(0, 17, size=num_envs).astype(np.int32)
        key, sub = jax_random.split(key, 2)
        e_obs, u_state, e_reward, e_done, _, e_world = wrapper_step(jnp.asarray(sub), u_state, jnp.asarray(actions))
        obs, reward, done, worlds = cc.c_step_optimistic(states, sub, actions, reset_ratio, c_params)
        where = f"step {t} (num_envs {num_envs}, reset_ratio {reset_ratio}, seed {seed})"
        compare_states(cu.flatten_state(u_state), classic_state.get_state(states), None, where)
        compare_obs(np.asarray(e_obs), obs, None, where)
        assert (np.asarray(e_reward).view(np.uint32) == reward.view(np.uint32)).all(), where
        e_done = np.asarray(e_done)
        assert (e_done == done).all(), where
        e_world = np.asarray(e_world)
        assert (worlds[done] == e_world[done]).all(), f"{where}: reset worlds differ"
        ended += int(done.sum())
        shared += int(done.sum() - len(np.unique(worlds[done])))
    return ended, shared


def test_all_envs_end_together():
    """max_timesteps 6: all 32 envs truncate at steps 6 and 12 and share 2 fresh worlds."""
    ended, shared = run(num_envs=32, reset_ratio=16, steps=13, max_t=6)
    assert ended == 64 and shared == 60


def test_staggered_ends():
    n, max_t = 32, 10_000
    rng = np.random.default_rng(5)
    timesteps = rng.integers(0, max_t - 20, size=n)
    near = rng.random(n) < 0.25
    timesteps[near] = max_t - rng.integers(1, 12, size=near.sum())
    ended, _ = run(num_envs=n, reset_ratio=4, steps=14, max_t=max_t, timesteps=timesteps, seed=5)
    assert ended >= 4
