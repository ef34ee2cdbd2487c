"""Upstream step machinery for the step conformance tests (test_lockstep, test_step_world).

Everything runs the official craftax 1.6.1 code jitted and vmapped over a batch of at
least 2 envs (conformance/upstream.py sets the XLA flag). States travel as the flat
{dotted leaf name: numpy array [N, ...]} dicts of pycraftax's get_state/set_state.
"""

from __future__ import annotations

import functools

import numpy as np

from conformance import upstream  # noqa: F401  (sets XLA_FLAGS before jax is imported)
from conformance.upstream import DEFAULT_PARAMS, ENV, flatten_state

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from craftax.craftax import game_logic as gl  # noqa: E402

STATIC = ENV.static_env_params


@functools.lru_cache(maxsize=None)
def _treedef_and_names():
    """Tree structure of EnvState and the dotted names of its leaves, in flatten order."""
    key = jnp.zeros((2,), dtype=jnp.uint32)
    _, state = jax.jit(ENV.reset_env)(key, DEFAULT_PARAMS)
    paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(state)
    names = [".".join(p.name if hasattr(p, "name") else str(p.key) for p in path) for path, _ in paths_leaves]
    return treedef, names


def to_env_state(flat: dict[str, np.ndarray]):
    """{name: [N, ...]} -> batched EnvState pytree of jnp arrays."""
    treedef, names = _treedef_and_names()
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(flat[n]) for n in names])


def pad_batch(arrays: dict[str, np.ndarray], n: int, min_batch: int = 2) -> dict[str, np.ndarray]:
    if n >= min_batch:
        return arrays
    return {k: np.concatenate([v, np.repeat(v[-1:], min_batch - n, axis=0)]) for k, v in arrays.items()}


# -- whole step (step_env of the no-auto-reset symbolic env) --------------------------------

@functools.lru_cache(maxsize=None)
def _batched_step_env():
    return jax.jit(jax.vmap(ENV.step_env, in_axes=(0, 0, 0, None)))


def step_env(flat_state, actions, keys, params=None):
    """upstream step_env for a batch -> (obs, state dict, reward, done, info)."""
    params = DEFAULT_PARAMS if params is None else params
    n = actions.shape[0]
    if n < 2:
        flat_state = pad_batch(flat_state, n)
        actions = np.concatenate([actions, np.repeat(actions[-1:], 2 - n)])
        keys = np.concatenate([keys, np.repeat(keys[-1:], 2 - n, axis=0)])
    obs, state, reward, done, info = _batched_step_env()(
        jnp.asarray(keys), to_env_state(flat_state), jnp.asarray(actions, dtype=jnp.int32), params
    )
    flat = {k: v[:n] for k, v in flatten_state(state).items()}
    info = {k: np.asarray(v)[:n] for k, v in info.items()}
    return np.asarray(obs)[:n], flat, np.asarray(reward)[:n], np.asarray(done)[:n], info


# -- digests: one uint32 per (env, leaf) so long rollouts need not keep whole states ------

def _digest_jnp(x):
    """sum_i bits(x_i) * (2 i + 1) mod 2**32 over the trailing axes of a [N, ...] leaf."""
    n = x.shape[0]
    if x.dtype == jnp.bool_:
        bits = x.astype(jnp.uint32)
    elif x.dtype == jnp.float32:
        bits = jax.lax.bitcast_convert_type(x, jnp.uint32)
    else:
        bits = x.astype(jnp.uint32) if x.dtype != jnp.int32 else jax.lax.bitcast_convert_type(x, jnp.uint32)
    bits = bits.reshape(n, -1)
    weights = (2 * jnp.arange(bits.shape[1], dtype=jnp.uint32) + 1)[None, :]
    return jnp.sum(bits * weights, axis=1, dtype=jnp.uint32)


def digest_np(x: np.ndarray) -> np.ndarray:
    """numpy twin of _digest_jnp."""
    n = x.shape[0]
    if x.dtype == np.bool_:
        bits = x.astype(np.uint32)
    else:
        bits = np.ascontiguousarray(x).view(np.uint32) if x.dtype.itemsize == 4 else x.astype(np.uint32)
    bits = bits.reshape(n, -1)
    weights = (2 * np.arange(bits.shape[1], dtype=np.uint64) + 1)[None, :]
    return ((bits.astype(np.uint64) * weights) % (1 << 32)).sum(axis=1, dtype=np.uint64).astype(np.uint64) % (1 << 32)


def leaf_names() -> list[str]:
    return _treedef_and_names()[1]


@functools.lru_cache(maxsize=None)
def _rollout_fn(params):
    names = leaf_names()
    vstep = jax.vmap(ENV.step_env, in_axes=(0, 0, 0, None))

    def body(state, xs):
        keys, actions = xs
        obs, state, reward, done, _ = vstep(keys, state, actions, params)
        leaves = jax.tree_util.tree_leaves(state)
        dig = jnp.stack([_digest_jnp(leaf) for leaf in leaves], axis=1)  # [N, num_leaves]
        return state, (dig, _digest_jnp(obs), reward, done)

    def run(state, keys, actions):
        return jax.lax.scan(body, state, (keys, actions))

    del names
    return jax.jit(run)


def rollout_digests(flat_state, keys, actions, params=None):
    """Step a batch T times (keys [T, N, 2], actions [T, N]) in one jitted scan.

    Returns per-step (leaf digests [T, N, L], obs digests [T, N], rewards [T, N], dones [T, N])
    and the final state dict.
    """
    params = DEFAULT_PARAMS if params is None else params
    final, (dig, odig, rew, done) = _rollout_fn(params)(
        to_env_state(flat_state), jnp.asarray(keys), jnp.asarray(actions, dtype=jnp.int32)
    )
    return np.asarray(dig), np.asarray(odig), np.asarray(rew), np.asarray(done), flatten_state(final)


# -- single world subsystems ----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _subsystem_fn(name, params):
    if name == "update_mobs":
        f = lambda s, key, action: gl.update_mobs(key, s, params, STATIC)  # noqa: E731
    elif name == "spawn_mobs":
        f = lambda s, key, action: gl.spawn_mobs(s, key, params, STATIC)  # noqa: E731
    elif name == "update_plants":
        f = lambda s, key, action: gl.update_plants(s, STATIC)  # noqa: E731
    elif name == "update_player_intrinsics":
        f = lambda s, key, action: gl.update_player_intrinsics(s, action, STATIC)  # noqa: E731
    elif name == "calculate_inventory_achievements":
        f = lambda s, key, action: gl.calculate_inventory_achievements(s)  # noqa: E731
    elif name == "is_game_over":
        f = lambda s, key, action: gl.is_game_over(s, params, STATIC)  # noqa: E731
    else:
        raise ValueError(name)
    return jax.jit(jax.vmap(f))


def subsystem(name, flat_state, keys, actions, params=None):
    """Apply upstream subsystem `name` to a batch; returns a state dict (or bools for is_game_over)."""
    params = DEFAULT_PARAMS if params is None else params
    n = actions.shape[0]
    flat_state = pad_batch(flat_state, n)
    if n < 2:
        actions = np.concatenate([actions, np.repeat(actions[-1:], 2 - n)])
        keys = np.concatenate([keys, np.repeat(keys[-1:], 2 - n, axis=0)])
    out = _subsystem_fn(name, params)(to_env_state(flat_state), jnp.asarray(keys), jnp.asarray(actions, jnp.int32))
    if name == "is_game_over":
        return np.asarray(out)[:n]
    return {k: v[:n] for k, v in flatten_state(out).items()}


# -- injected states (shared with the divergence finder) ----------------------------------

from pycraftax.porting.inject import DIRS, FLOOR_MOB_MAPPING, NUM_INJECT_ENVS, mutate, reset_states  # noqa: E402,F401


# -- comparison -----------------------------------------------------------------------------

def first_difference(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]):
    """(leaf, env, index, ours, theirs) of the first differing leaf element, or None.
    Floats are compared bitwise."""
    for name in leaf_names():
        a, b = np.asarray(ours[name]), np.asarray(theirs[name])
        if a.dtype == np.float32:
            diff = a.view(np.uint32) != b.astype(np.float32).view(np.uint32)
        else:
            diff = a.astype(np.int64) != b.astype(np.int64)
        if np.any(diff):
            idx = tuple(int(i) for i in np.argwhere(diff)[0])
            return name, idx[0], idx[1:], a[idx], b[idx]
    return None


def assert_env_step_matches(where: str, env, out, j_state, j_obs, j_reward, j_done, j_info) -> np.ndarray:
    """A pycraftax env.step's (obs, reward, terminated, truncated, info) and the env's new
    state against upstream's outputs of the same step: every state leaf, obs and reward
    bitwise, terminated | truncated == done, upstream's info entries; names the leaf, env and
    index of a mismatch. Returns upstream's done as numpy."""
    obs, reward, terminated, truncated, info = out
    diff = first_difference(env.get_state(), flatten_state(j_state))
    assert diff is None, f"{where}: leaf {diff[0]!r} env {diff[1]} index {diff[2]}: C {diff[3]!r} vs JAX {diff[4]!r}"
    np.testing.assert_array_equal(obs.view(np.uint32), np.asarray(j_obs).view(np.uint32), err_msg=where)
    np.testing.assert_array_equal(reward.view(np.uint32), np.asarray(j_reward, np.float32).view(np.uint32),
                                  err_msg=where)
    j_done = np.asarray(j_done)
    np.testing.assert_array_equal(terminated | truncated, j_done, err_msg=where)
    assert not np.any(terminated & truncated), where
    for name, value in j_info.items():
        np.testing.assert_array_equal(info[name], np.asarray(value), err_msg=f"{where}: {name}")
    return j_done
