"""The official craftax 1.6.1 env under the reference semantics of CONFORMANCE.md.

Imported only by tests and benchmarks that have the [jax] extra. Sets the XLA flag that
jaxlib 0.10.2 needs for correct batched noise before JAX is imported, and runs every
upstream call jitted and vmapped over a batch of at least 2 envs (how trainers run it).
"""

from __future__ import annotations

from pycraftax.porting import set_reference_jax_flags

set_reference_jax_flags()

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
    """OptimisticResetVecEnvWrapper.step over the package's own no-auto-reset env, jitted:
    (rng, state, action) -> (obs, state, reward, done, info, reset_indexes)."""
    from conformance.wrappers import optimistic_reset_step

    params = DEFAULT_PARAMS if params is None else params
    return jax.jit(optimistic_reset_step(ENV, num_envs, reset_ratio, params))
