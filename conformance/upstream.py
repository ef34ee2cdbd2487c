"""The official craftax 1.6.1 env under the reference semantics of DESIGN.md.

Imported only by tests and benchmarks that have the [jax] extra. Sets the XLA flag that
jaxlib 0.10.2 needs for correct batched noise before JAX is imported, and runs every
upstream call jitted and vmapped over a batch of at least 2 envs (how trainers run it).
"""

from __future__ import annotations

import os

_FLAG = "--xla_cpu_experimental_ynn_fusion_type="
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnvNoAutoReset  # noqa: E402

ENV = CraftaxSymbolicEnvNoAutoReset()
DEFAULT_PARAMS = ENV.default_params
MIN_BATCH = 2


def flatten_state(state) -> dict[str, np.ndarray]:
    """EnvState -> {dotted leaf path: numpy array}, the naming pycraftax uses."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        name = ".".join(p.name if hasattr(p, "name") else str(p.key) for p in path)
        out[name] = np.asarray(leaf)
    return out


@functools.lru_cache(maxsize=None)
def _batched_reset(params):
    return jax.jit(jax.vmap(ENV.reset_env, in_axes=(0, None)))


def reset(keys: np.ndarray, params=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """upstream reset_env(keys[i], params) for a batch; pads to MIN_BATCH envs."""
    params = DEFAULT_PARAMS if params is None else params
    keys = np.asarray(keys, dtype=np.uint32)
    n = keys.shape[0]
    if n < MIN_BATCH:
        keys = np.concatenate([keys, np.repeat(keys[-1:], MIN_BATCH - n, axis=0)])
    obs, state = _batched_reset(params)(jnp.asarray(keys), params)
    state = {k: v[:n] for k, v in flatten_state(state).items()}
    return np.asarray(obs)[:n], state


@functools.lru_cache(maxsize=None)
def optimistic_step_fn(num_envs: int, reset_ratio: int, params=None):
    """OptimisticResetVecEnvWrapper.step of Craftax_Baselines (craftax's GitHub
    environment_base/wrappers.py; the 1.6.1 wheel does not ship it), over the package's own
    no-auto-reset env, jitted: (rng, state, action) -> (obs, state, reward, done, info,
    reset_indexes). Written from the wrapper's code, line for line in meaning."""
    params = DEFAULT_PARAMS if params is None else params
    num_resets = num_envs // reset_ratio
    step_fn = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))
    reset_fn = jax.vmap(ENV.reset, in_axes=(0, None))

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

    return jax.jit(step)
