"""Upstream step machinery for the step conformance tests (test_lockstep, test_step_world).

Everything runs the official craftax 1.6.1 code jitted and vmapped over a batch of at
least 2 envs (conformance/upstream.py sets the XLA flag). States travel as the flat
{dotted leaf name: numpy array [N, ...]} dicts of pycraftax's get_state/set_state.
"""

from __future__ import annotations

import functools

import numpy as np

import pycraftax

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


# -- injected states -----------------------------------------------------------------------

# (passive, melee, ranged) mob types per floor, upstream FLOOR_MOB_MAPPING
FLOOR_MOB_MAPPING = [(0, 0, 0), (2, 2, 2), (1, 1, 1), (2, 3, 3), (2, 4, 4), (1, 5, 5), (1, 6, 6), (1, 7, 7), (0, 0, 0)]
DIRS = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]], dtype=np.int32)

NUM_INJECT_ENVS = 32
_RESET_CACHE: dict[int, dict[str, np.ndarray]] = {}


def reset_states(seed: int, n: int = NUM_INJECT_ENVS) -> dict[str, np.ndarray]:
    """C reset states (equal to upstream's, checked by the reset tests) for n keys."""
    if seed not in _RESET_CACHE:
        env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=0)
        keys = pycraftax.jax_random.split(pycraftax.jax_random.prng_key(seed), n)
        env.reset_with_keys(keys)
        _RESET_CACHE[seed] = env.get_state()
    return {k: v.copy() for k, v in _RESET_CACHE[seed].items()}


def mutate(state: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Push every env of a reset batch into a random, busy situation (see module doc)."""
    s = state
    n = s["timestep"].shape[0]
    for e in range(n):
        level = int(rng.integers(0, 9))
        s["player_level"][e] = level
        pos = rng.integers(2, 46, size=2).astype(np.int32)
        s["player_position"][e] = pos
        s["player_direction"][e] = rng.integers(1, 5)
        s["mob_map"][e, level] = False
        occupied = {tuple(pos)}

        def near(radius):
            for _ in range(50):
                p = np.clip(pos + rng.integers(-radius, radius + 1, size=2), 0, 47).astype(np.int32)
                if tuple(p) not in occupied:
                    return p
            return None

        for cls, key, nslots in ((1, "melee_mobs", 3), (0, "passive_mobs", 3), (2, "ranged_mobs", 2)):
            for i in range(nslots):
                alive = rng.random() < 0.7
                radius = int(rng.choice([1, 2, 4, 7, 12]))
                p = near(radius)
                if p is None:
                    alive = False
                    p = np.zeros(2, np.int32)
                s[f"{key}.position"][e, level, i] = p
                s[f"{key}.mask"][e, level, i] = alive
                typ = FLOOR_MOB_MAPPING[level][cls] if rng.random() < 0.8 else int(rng.integers(0, 8))
                s[f"{key}.type_id"][e, level, i] = typ
                s[f"{key}.health"][e, level, i] = np.float32(rng.choice([0.5, 1.0, 2.5, 3.0, 7.25]))
                s[f"{key}.attack_cooldown"][e, level, i] = rng.integers(-2, 6)
                if alive:
                    occupied.add(tuple(p))
                    s["mob_map"][e, level, p[0], p[1]] = True
        for key, dkey in (("mob_projectiles", "mob_projectile_directions"),
                          ("player_projectiles", "player_projectile_directions")):
            for i in range(3):
                r = int(rng.choice([0, 1, 2, 3, 6]))
                p = pos + rng.integers(-r, r + 1, size=2)
                if rng.random() < 0.1:
                    p = np.array([rng.choice([-1, 0, 47, 48]), rng.integers(0, 48)])
                s[f"{key}.position"][e, level, i] = p.astype(np.int32)
                s[f"{key}.mask"][e, level, i] = rng.random() < 0.7
                s[f"{key}.type_id"][e, level, i] = rng.integers(0, 8)
                s[dkey][e, level, i] = DIRS[rng.integers(0, 4)]
        # sprinkle tables/furnaces/water near the player for projectile effects
        for _ in range(int(rng.integers(0, 6))):
            p = np.clip(pos + rng.integers(-3, 4, size=2), 0, 47)
            if tuple(p) not in occupied:
                s["map"][e, level, p[0], p[1]] = rng.choice([11, 12, 3, 4, 14, 2, 7, 33])
        s["is_sleeping"][e] = rng.random() < 0.3
        s["is_resting"][e] = rng.random() < 0.2
        s["player_health"][e] = np.float32(rng.choice([0.0, 0.3, 1.0, 4.6, 9.0, 13.0, 0.1]))
        for k in ("player_food", "player_drink", "player_energy", "player_mana"):
            s[k][e] = rng.integers(0, 12)
        # the mana-recovery counter is never negative (docs/STATE_DOMAIN.md): from 0 it stays >= 0
        for k, lo, hi in (("player_recover", -16, 26), ("player_hunger", -16, 26), ("player_thirst", -16, 21),
                          ("player_fatigue", -16, 31), ("player_recover_mana", 0, 31)):
            s[k][e] = np.float32(rng.uniform(lo, hi))
        for k in ("player_dexterity", "player_strength", "player_intelligence"):
            s[k][e] = rng.integers(1, 6)
        s["inventory.armour"][e] = rng.integers(0, 3, size=4)
        s["armour_enchantments"][e] = rng.integers(0, 3, size=4)
        s["bow_enchantment"][e] = rng.integers(0, 3)
        s["sword_enchantment"][e] = rng.integers(0, 3)
        for k in ("wood", "stone", "coal", "iron", "diamond", "sapling", "bow", "arrows", "torches", "ruby",
                  "sapphire", "books"):
            s[f"inventory.{k}"][e] = rng.integers(0, 3)
        s["inventory.potions"][e] = rng.integers(0, 3, size=6)
        s["learned_spells"][e] = rng.random(2) < 0.5
        s["player_xp"][e] = rng.integers(0, 3)
        s["inventory.pickaxe"][e] = rng.integers(0, 5)
        s["inventory.sword"][e] = rng.integers(0, 5)
        s["monsters_killed"][e, level] = rng.integers(0, 12)
        s["boss_progress"][e] = rng.integers(0, 9)
        s["boss_timesteps_to_spawn_this_round"][e] = rng.integers(-3, 8)
        s["light_level"][e] = np.float32(rng.random())
        s["achievements"][e] = rng.random(67) < 0.2
        s["timestep"][e] = rng.choice([0, 17, 99_998, 99_999, 100_000])
        for i in range(10):
            s["growing_plants_positions"][e, i] = rng.integers(0, 48, size=2)
            s["growing_plants_age"][e, i] = rng.choice([0, 5, 598, 599, 600, 1000])
            s["growing_plants_mask"][e, i] = rng.random() < 0.6
    return s



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
