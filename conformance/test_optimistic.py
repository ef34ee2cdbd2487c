"""Optimistic resets (make(..., resets="optimistic")) against Craftax_Baselines'
OptimisticResetVecEnvWrapper.step over upstream's env (conformance.upstream.optimistic_step_fn):
every state leaf, obs, reward, done and the world each ended env took, every step, from the
env's own key stream.

Cases: all envs truncated in the same step (more ended envs than fresh worlds, so some share
the default world i / reset_ratio); staggered ends from random timesteps near the limit
(fewer ended envs than worlds: the gumbel top-k order decides who gets which world); dying
players from injected states; timesteps spread over whole days (the light level).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

import pycraftax  # noqa: E402
from pycraftax import jax_random  # noqa: E402
from conformance import step_reference as ref  # noqa: E402

pytestmark = pytest.mark.jax


def run(num_envs: int, reset_ratio: int, steps: int, max_t: int, start_state=None, seed: int = 0):
    """Steps pycraftax (C) and the upstream wrapper in lockstep; returns (ended, shared)
    counts: env-steps that ended, and ended envs that took a world another env also took."""
    import jax.numpy as jnp

    from conformance import upstream

    params = upstream.DEFAULT_PARAMS.replace(max_timesteps=max_t)
    wrapper_step = upstream.optimistic_step_fn(num_envs, reset_ratio, params)
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", seed=seed, max_timesteps=max_t,
                         resets="optimistic", reset_ratio=reset_ratio)
    env.reset(seed=seed)
    if start_state is not None:
        env.set_state(start_state)
    j_state = ref.to_env_state(env.get_state())
    key = jax_random.prng_key(seed)
    rng = np.random.default_rng(seed)
    ended = shared = 0
    for t in range(steps):
        actions = rng.integers(0, 43, size=num_envs)
        key, sub = jax_random.split(key, 2)
        out = env.step(actions)
        j_obs, j_state, j_rew, j_done, j_info, j_world = wrapper_step(
            jnp.asarray(sub), j_state, jnp.asarray(actions, jnp.int32))
        where = f"step {t} (num_envs {num_envs}, reset_ratio {reset_ratio}, seed {seed})"
        j_done = ref.assert_env_step_matches(where, env, out, j_state, j_obs, j_rew, j_done, j_info)
        worlds = np.asarray(j_world)[j_done]
        ended += int(j_done.sum())
        shared += int(len(worlds) - len(np.unique(worlds)))
    return ended, shared


def test_all_envs_end_together():
    """max_timesteps 6: every env truncates at steps 6, 12, ...: 32 ended envs, 2 worlds."""
    ended, shared = run(num_envs=32, reset_ratio=16, steps=13, max_t=6)
    assert ended == 64 and shared == 60


def test_staggered_ends_and_light_levels():
    """Timesteps drawn over whole days, a quarter of them a few steps before the limit: a
    few envs end per step, fewer than the 8 worlds, and every light level is exercised."""
    n, max_t = 32, 100_000
    state = ref.reset_states(5, n)
    rng = np.random.default_rng(5)
    timestep = rng.integers(0, max_t - 20, size=n).astype(np.int32)
    near = rng.random(n) < 0.25
    timestep[near] = max_t - rng.integers(1, 12, size=near.sum())
    state["timestep"] = timestep
    ended, _ = run(num_envs=n, reset_ratio=4, steps=14, max_t=max_t, start_state=state, seed=5)
    assert ended >= 4


def test_dying_players_from_injected_states():
    n = ref.NUM_INJECT_ENVS
    state = ref.mutate(ref.reset_states(2, n), np.random.default_rng(11))
    ended, _ = run(num_envs=n, reset_ratio=8, steps=6, max_t=100_000, start_state=state, seed=11)
    assert ended > 0


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(resets="sometimes"), ValueError, "resets"),
    (dict(resets="optimistic", reset_ratio=5), ValueError, "reset_ratio"),
    (dict(resets="optimistic", reset_ratio=0), ValueError, "reset_ratio"),
    (dict(resets="optimistic", reset_ratio=2.0), TypeError, "reset_ratio"),
    (dict(reset_ratio=4), ValueError, "reset_ratio"),
])
def test_bad_reset_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pycraftax.make("Craftax-Symbolic-v1", num_envs=8, backend="c", **kwargs)


def test_default_reset_ratio_follows_ppo_rnn():
    assert pycraftax.make("Craftax-Symbolic-v1", num_envs=64, backend="c", resets="optimistic").reset_ratio == 16
    assert pycraftax.make("Craftax-Symbolic-v1", num_envs=4, backend="c", resets="optimistic").reset_ratio == 4
