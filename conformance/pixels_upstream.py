"""Upstream's pixel envs (craftax 1.6.1's CraftaxPixelsEnv and CraftaxClassicPixelsEnv) for the
pixel parity tests: jitted, vmapped over a fixed batch per game (so each program compiles once
per test session), under the reference semantics of conformance/upstream.py.

Textures: upstream's `load_all_textures()` prepares all three of its block sizes at once (the
64-pixel one takes minutes, eagerly) and caches them inside the installed package. The pixel
envs read only the agent's size, so `load_all_textures` is pointed at upstream's own
`load_all_textures_given_size(agent size)`: upstream's code, upstream's values, a fraction of
the time, and nothing written into site-packages.

Import through conftest.require_jax() first, which sets the XLA flag before jax loads.
"""

from __future__ import annotations

import functools

import numpy as np

from conformance import upstream  # noqa: F401  (sets XLA_FLAGS before jax is imported)
from conformance.upstream import flatten_state

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

FULL, CLASSIC = "craftax", "craftax_classic"
AGENT_BLOCK = {FULL: 10, CLASSIC: 7}
# Every upstream call of a game runs at this batch (padded), so that jit compiles it once.
BATCH = {FULL: 9, CLASSIC: 8}  # 9: one env per floor of the full game
ENV_IDS = {FULL: "Craftax-Pixels-v1", CLASSIC: "Craftax-Classic-Pixels-v1"}
NUM_ACTIONS = {FULL: 43, CLASSIC: 17}


def _modules(game: str):
    if game == FULL:
        from craftax.craftax import constants, renderer
        from craftax.craftax.envs import craftax_pixels_env as envs

        return constants, renderer, envs.CraftaxPixelsEnvNoAutoReset, envs.CraftaxPixelsEnv
    from craftax.craftax_classic import constants, renderer
    from craftax.craftax_classic.envs import craftax_pixels_env as envs

    return constants, renderer, envs.CraftaxClassicPixelsEnvNoAutoReset, envs.CraftaxClassicPixelsEnv


@functools.lru_cache(maxsize=None)
def upstream_textures(game: str, block: int) -> dict:
    """upstream's load_all_textures_given_size(block) of `game`, as numpy arrays."""
    constants = _modules(game)[0]
    return {name: (np.asarray(v) if not isinstance(v, list) else [np.asarray(t) for t in v])
            for name, v in constants.load_all_textures_given_size(block).items()}


@functools.lru_cache(maxsize=None)
def envs(game: str):
    """(no-auto-reset env, official auto-reset env) of `game`, their renderers built from
    upstream's textures at the agent's block size."""
    constants, renderer, no_auto_reset, auto_reset = _modules(game)
    block = AGENT_BLOCK[game]
    prepared = constants.load_all_textures_given_size(block)
    original = renderer.load_all_textures
    renderer.load_all_textures = lambda: {block: prepared}
    try:
        return no_auto_reset(), auto_reset()
    finally:
        renderer.load_all_textures = original


def default_params(game: str):
    return envs(game)[0].default_params


def _pad(game: str, *arrays: np.ndarray) -> list[np.ndarray]:
    n, batch = arrays[0].shape[0], BATCH[game]
    assert n <= batch, f"at most {batch} envs per upstream call of {game}, got {n}"
    return [np.concatenate([a, np.repeat(a[-1:], batch - n, axis=0)]) if n < batch else a for a in arrays]


@functools.lru_cache(maxsize=None)
def _reset_fn(game: str):
    return jax.jit(jax.vmap(envs(game)[0].reset_env, in_axes=(0, None)))


@functools.lru_cache(maxsize=None)
def _step_fn(game: str, auto_reset: bool):
    env = envs(game)[1 if auto_reset else 0]
    return jax.jit(jax.vmap(env.step if auto_reset else env.step_env, in_axes=(0, 0, 0, None)))


@functools.lru_cache(maxsize=None)
def _treedef(game: str):
    _, state = _reset_fn(game)(jnp.zeros((BATCH[game], 2), jnp.uint32), default_params(game))
    paths, treedef = jax.tree_util.tree_flatten_with_path(state)
    names = [".".join(p.name if hasattr(p, "name") else str(p.key) for p in path) for path, _ in paths]
    return treedef, names


def to_env_state(game: str, flat: dict[str, np.ndarray]):
    """A batched upstream EnvState of `game` from a {leaf name: [BATCH, ...]} dict."""
    treedef, names = _treedef(game)
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(flat[n]) for n in names])


def reset(game: str, keys: np.ndarray, params=None):
    """upstream reset_env(keys[i], params): (obs [N, H, W, 3], state dict)."""
    params = default_params(game) if params is None else params
    n = keys.shape[0]
    (keys,) = _pad(game, np.asarray(keys, np.uint32))
    obs, state = _reset_fn(game)(jnp.asarray(keys), params)
    return np.asarray(obs)[:n], {k: v[:n] for k, v in flatten_state(state).items()}


def step(game: str, state: dict[str, np.ndarray], actions: np.ndarray, keys: np.ndarray, params=None,
         auto_reset: bool = False):
    """upstream step_env (or the official auto-reset step) from the state dict:
    (obs, state dict, reward, done)."""
    params = default_params(game) if params is None else params
    n = actions.shape[0]
    names = _treedef(game)[1]
    padded = dict(zip(names, _pad(game, *[np.asarray(state[name]) for name in names])))
    actions, keys = _pad(game, np.asarray(actions, np.int32), np.asarray(keys, np.uint32))
    obs, new, reward, done, _ = _step_fn(game, auto_reset)(jnp.asarray(keys), to_env_state(game, padded),
                                                           jnp.asarray(actions), params)
    return (np.asarray(obs)[:n], {k: v[:n] for k, v in flatten_state(new).items()}, np.asarray(reward)[:n],
            np.asarray(done)[:n])
