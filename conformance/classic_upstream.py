"""Upstream Craftax-Classic (craftax 1.6.1) for the Classic parity tests: jitted, vmapped
upstream functions cached at module scope (each compiles once per pytree structure), and
conversions between upstream's EnvState and classic_state's leaf dicts. The C side is
conformance/classic_c.py.

Import through conftest.require_jax() first, which sets the XLA flag before jax loads.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from conformance.upstream import flatten_state
from craftax.craftax_classic.envs.craftax_symbolic_env import (
    CraftaxClassicSymbolicEnv,
    CraftaxClassicSymbolicEnvNoAutoReset,
)

ENV = CraftaxClassicSymbolicEnvNoAutoReset()
AUTO_ENV = CraftaxClassicSymbolicEnv()
DEFAULT_PARAMS = ENV.default_params
MIN_BATCH = 2


def unflatten_state(template, flat: dict[str, np.ndarray]):
    """A batched EnvState with the structure of `template` and the leaves of `flat`."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(template)
    leaves = []
    for path, leaf in paths:
        name = ".".join(p.name if hasattr(p, "name") else str(p.key) for p in path)
        leaves.append(jnp.asarray(flat[name], dtype=leaf.dtype))
    return jax.tree_util.tree_unflatten(treedef, leaves)


_RESET = jax.jit(jax.vmap(ENV.reset_env, in_axes=(0, None)))
_STEP = jax.jit(jax.vmap(ENV.step_env, in_axes=(0, 0, 0, None)))
_AUTO_STEP = jax.jit(jax.vmap(AUTO_ENV.step, in_axes=(0, 0, 0, None)))


def _pad(keys: np.ndarray) -> np.ndarray:
    n = keys.shape[0]
    return np.concatenate([keys, np.repeat(keys[-1:], MIN_BATCH - n, axis=0)]) if n < MIN_BATCH else keys


def upstream_reset(keys: np.ndarray, params=None):
    """upstream reset_env(keys[i], params): (obs [N, 1345], state dict, batched EnvState)."""
    params = DEFAULT_PARAMS if params is None else params
    n = keys.shape[0]
    obs, state = _RESET(jnp.asarray(_pad(np.asarray(keys, dtype=np.uint32))), params)
    return np.asarray(obs)[:n], {k: v[:n] for k, v in flatten_state(state).items()}, state


def upstream_step(keys: np.ndarray, state, actions: np.ndarray, params=None, auto_reset: bool = False):
    """upstream step_env (or the auto-reset step) of a batched EnvState:
    (obs, state dict, batched EnvState, reward, done)."""
    params = DEFAULT_PARAMS if params is None else params
    fn = _AUTO_STEP if auto_reset else _STEP
    obs, state, reward, done, _ = fn(
        jnp.asarray(np.asarray(keys, dtype=np.uint32)), state, jnp.asarray(actions, dtype=jnp.int32), params
    )
    return np.asarray(obs), flatten_state(state), state, np.asarray(reward), np.asarray(done)


def _rollout(step_fn):
    def run(state, keys, actions, params):
        def body(state, xs):
            k, a = xs
            obs, state, reward, done, _ = step_fn(k, state, a, params)
            return state, (obs, state, reward, done)

        return jax.lax.scan(body, state, (keys, actions))[1]

    return jax.jit(run)


_ROLLOUT = _rollout(jax.vmap(ENV.step_env, in_axes=(0, 0, 0, None)))


def upstream_rollout(state, keys: np.ndarray, actions: np.ndarray, params=None):
    """num_steps upstream step_env calls in one jitted lax.scan from a batched EnvState: keys
    uint32 [T, N, 2], actions [T, N]. Returns (obs [T, N, 1345], per-step state dicts
    [T, N, ...], rewards [T, N], dones [T, N])."""
    params = DEFAULT_PARAMS if params is None else params
    obs, states, reward, done = _ROLLOUT(
        state, jnp.asarray(np.asarray(keys, dtype=np.uint32)), jnp.asarray(actions, dtype=jnp.int32), params
    )
    return np.asarray(obs), flatten_state(states), np.asarray(reward), np.asarray(done)


@functools.lru_cache(maxsize=None)
def optimistic_step_fn(num_envs: int, reset_ratio: int, params=None):
    """OptimisticResetVecEnvWrapper.step over Classic's no-auto-reset env, jitted."""
    from conformance.wrappers import optimistic_reset_step

    params = DEFAULT_PARAMS if params is None else params
    return jax.jit(optimistic_reset_step(ENV, num_envs, reset_ratio, params))
