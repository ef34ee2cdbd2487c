"""Craftax_Baselines' OptimisticResetVecEnvWrapper.step (craftax's GitHub
environment_base/wrappers.py; the craftax 1.6.1 wheel does not ship it), written from the
wrapper's code, line for line in meaning, for the conformance tests and the upstream benchmark
(bench/peers.py imports it).
Imports JAX only; the caller picks the platform and XLA flags."""

from __future__ import annotations


def optimistic_reset_step(env, num_envs: int, reset_ratio: int, params):
    """(rng, state, action) -> (obs, state, reward, done, info, reset_indexes) for `env`, an
    upstream no-auto-reset env (its step is step_env), over num_envs envs: step every env,
    generate num_envs // reset_ratio worlds, and give them to the envs that ended (chosen at
    random among them; more ends than worlds share worlds)."""
    import jax
    import jax.numpy as jnp

    num_resets = num_envs // reset_ratio
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    reset_fn = jax.vmap(env.reset, in_axes=(0, None))

    def step(rng, state, action):
        rng, sub = jax.random.split(rng)
        obs_st, state_st, reward, done, info = step_fn(jax.random.split(sub, num_envs), state, action, params)
        rng, sub = jax.random.split(rng)
        obs_re, state_re = reset_fn(jax.random.split(sub, num_resets), params)
        rng, sub = jax.random.split(rng)
        reset_indexes = jnp.arange(num_resets).repeat(reset_ratio)
        being_reset = jax.random.choice(sub, jnp.arange(num_envs), shape=(num_resets,), p=done, replace=False)
        reset_indexes = reset_indexes.at[being_reset].set(jnp.arange(num_resets))
        obs_re = obs_re[reset_indexes]
        state_re = jax.tree_util.tree_map(lambda x: x[reset_indexes], state_re)

        def select(d, re, st):
            return jax.tree_util.tree_map(lambda x, y: jax.lax.select(d, x, y), re, st)

        state = jax.vmap(select)(done, state_re, state_st)
        obs = jax.vmap(select)(done, obs_re, obs_st)
        return obs, state, reward, done, info, reset_indexes

    return step
