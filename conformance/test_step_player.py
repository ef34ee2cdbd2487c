"""JAX parity of the player-side subsystems of craftax_step (reference_c/include/craftax/
step_player.h and game_logic_utils.h) against craftax 1.6.1, jitted and vmapped.

Each test builds a batch of states by mutating real reset states (C reset, verified
bit-exact against upstream elsewhere) so that the mechanics under test are reached
(blocks and mobs in front of the player, inventories at 0 and at caps, tools, armour,
enchantments, spells, potions, mana, xp, attributes, boss progress, map edges ...),
applies upstream's function and the C hook to the same states, actions and keys, and
compares every state leaf exactly (floats bitwise).

Hypothesis draws the seed of each batch; the profile comes from HYPOTHESIS_PROFILE
(dev / ci / thorough). Batches have a fixed size so every jitted function compiles once.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

upstream = pytest.importorskip("conformance.upstream")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from craftax.craftax import constants as C  # noqa: E402
from craftax.craftax import game_logic as GL  # noqa: E402
from craftax.craftax.util import game_logic_utils as GU  # noqa: E402

import pycraftax  # noqa: E402
from pycraftax import _state  # noqa: E402
from pycraftax._test_hooks import check, lib, ptr  # noqa: E402  (needs PYCRAFTAX_TEST_HOOKS=1)
from pycraftax.params import EnvParams, to_c  # noqa: E402

# ---- Hypothesis settings ---------------------------------------------------------------------
# Examples per test by HYPOTHESIS_PROFILE (dev / ci / thorough); each example is a whole batch
# of BATCH states. Profiles themselves belong to conformance/conftest.py when it exists; this
# file only reads the name, so it cannot clash with that registration.
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
EXAMPLES = {"dev": 2, "ci": 4, "thorough": 40}.get(_PROFILE, 4)
SETTINGS = dict(deadline=None, derandomize=_PROFILE != "thorough", database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BATCH = 128

STATIC = upstream.ENV.default_static_params()
PARAMS = upstream.DEFAULT_PARAMS
N_BASE = 8  # distinct reset worlds per batch


# ---- state plumbing -----------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _treedef():
    _, st0 = upstream._batched_reset(PARAMS)(jnp.zeros((2, 2), jnp.uint32), PARAMS)
    flat = jax.tree_util.tree_flatten_with_path(st0)
    names = [".".join(p.name if hasattr(p, "name") else str(p.key) for p in path) for path, _ in flat[0]]
    return names, flat[1]


def to_upstream(state: dict):
    names, treedef = _treedef()
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(state[n]) for n in names])


@functools.lru_cache(maxsize=None)
def _base_states() -> dict:
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=N_BASE, backend="c")
    keys = np.stack([np.arange(N_BASE, dtype=np.uint32), np.full(N_BASE, 7, np.uint32)], axis=1)
    env.reset_with_keys(keys)
    return env.get_state()


def c_states_from(state: dict) -> np.ndarray:
    n = next(iter(state.values())).shape[0]
    buf = np.zeros((n, _state.STATE_SIZE), dtype=np.uint8)
    for leaf in _state.LEAVES:
        leaf.view(buf)[...] = state[leaf.name].astype(leaf.storage)
    return buf


def c_states_to_dict(buf: np.ndarray) -> dict:
    return _state.get_state(buf)


def compare(expected: dict, got: dict, what: str, keys=None, actions=None):
    bad = []
    for name, exp in expected.items():
        g = got[name]
        e = np.asarray(exp)
        if e.dtype == np.float32:
            diff = e.view(np.uint32) != g.astype(np.float32).view(np.uint32)
        else:
            diff = e != g.astype(e.dtype)
        if diff.any():
            idx = np.argwhere(diff)[0]
            env = int(idx[0])
            bad.append(
                f"{what}: leaf {name} env {env} index {tuple(int(i) for i in idx[1:])}: "
                f"jax {e[tuple(idx)]!r} c {g[tuple(idx)]!r} (#envs differing {int(diff.reshape(diff.shape[0], -1).any(1).sum())})"
                + (f" action {int(actions[env])}" if actions is not None else "")
                + (f" key {keys[env].tolist()}" if keys is not None else "")
            )
    assert not bad, "\n".join(bad[:20])


# ---- scenario generator ---------------------------------------------------------------------
DIRS = np.array(C.DIRECTIONS)
INTERESTING_BLOCKS = [
    C.BlockType.TREE, C.BlockType.FIRE_TREE, C.BlockType.ICE_SHRUB, C.BlockType.STONE, C.BlockType.STALAGMITE,
    C.BlockType.COAL, C.BlockType.IRON, C.BlockType.DIAMOND, C.BlockType.SAPPHIRE, C.BlockType.RUBY,
    C.BlockType.FURNACE, C.BlockType.CRAFTING_TABLE, C.BlockType.GRASS, C.BlockType.WATER, C.BlockType.FOUNTAIN,
    C.BlockType.RIPE_PLANT, C.BlockType.CHEST, C.BlockType.NECROMANCER, C.BlockType.WALL, C.BlockType.DARKNESS,
    C.BlockType.LAVA, C.BlockType.PATH, C.BlockType.SAND, C.BlockType.ENCHANTMENT_TABLE_FIRE,
    C.BlockType.ENCHANTMENT_TABLE_ICE, C.BlockType.FIRE_GRASS, C.BlockType.ICE_GRASS, C.BlockType.PLANT,
]
INTERESTING_BLOCKS = [b.value for b in INTERESTING_BLOCKS]
INV_SCALARS = ["wood", "stone", "coal", "iron", "diamond", "sapling", "arrows", "torches", "ruby", "sapphire", "books"]


def _count(rng, n):
    pool = np.array([0, 0, 1, 1, 2, 3, 4, 5, 9, 98, 99, 100, 150])
    out = pool[rng.integers(0, len(pool), n)]
    small = rng.random(n) < 0.3
    out[small] = rng.integers(0, 12, small.sum())
    return out.astype(np.int32)


def make_batch(seed: int, n: int = BATCH, actions_pool=None):
    """n mutated states (dict of numpy arrays [n, ...]), actions [n], keys [n, 2]."""
    rng = np.random.default_rng(seed)
    base = _base_states()
    pick = rng.integers(0, N_BASE, n)
    s = {k: v[pick].copy() for k, v in base.items()}
    ar = np.arange(n)

    level = rng.integers(0, 9, n).astype(np.int32)
    level[rng.random(n) < 0.15] = 8
    s["player_level"] = level
    pos = rng.integers(0, 48, (n, 2)).astype(np.int32)
    edge = rng.random((n, 2)) < 0.15
    pos[edge] = rng.choice([0, 47], edge.sum())
    s["player_position"] = pos
    direction = rng.integers(1, 5, n).astype(np.int32)
    s["player_direction"] = direction
    facing = pos + DIRS[direction]
    fin = np.all((facing >= 0) & (facing < 48), axis=1)
    fc = np.clip(facing, 0, 47)  # JAX read index for facing off the map at 48; -1 wraps
    fr = np.where(facing < 0, facing + 48, fc)

    # facing block, item under facing and under the player, neighbours
    blk = np.array(INTERESTING_BLOCKS)[rng.integers(0, len(INTERESTING_BLOCKS), n)]
    rand_blk = rng.random(n) < 0.15
    blk[rand_blk] = rng.integers(0, 37, rand_blk.sum())
    set_blk = rng.random(n) < 0.9
    s["map"][ar[set_blk], level[set_blk], fr[set_blk, 0], fr[set_blk, 1]] = blk[set_blk]
    it = rng.integers(0, 5, n)
    set_it = rng.random(n) < 0.3
    s["item_map"][ar[set_it], level[set_it], fr[set_it, 0], fr[set_it, 1]] = it[set_it]
    clear_it = (~set_it) & (rng.random(n) < 0.8)
    s["item_map"][ar[clear_it], level[clear_it], fr[clear_it, 0], fr[clear_it, 1]] = 0
    pit = rng.choice([0, 2, 3, 4], n)
    s["item_map"][ar, level, pos[:, 0], pos[:, 1]] = pit
    for dx, dy in C.CLOSE_BLOCKS.tolist():
        q = np.clip(pos + np.array([dx, dy]), 0, 47)
        r = rng.random(n)
        s["map"][ar[r < 0.15], level[r < 0.15], q[r < 0.15, 0], q[r < 0.15, 1]] = C.BlockType.CRAFTING_TABLE.value
        m = (r >= 0.15) & (r < 0.3)
        s["map"][ar[m], level[m], q[m, 0], q[m, 1]] = C.BlockType.FURNACE.value
    # the player's own cell is walkable in the real game
    s["mob_map"][ar, level, pos[:, 0], pos[:, 1]] = False

    # inventory
    for f in INV_SCALARS:
        s["inventory." + f] = _count(rng, n)
    s["inventory.pickaxe"] = rng.integers(0, 5, n).astype(np.int32)
    s["inventory.sword"] = rng.integers(0, 5, n).astype(np.int32)
    s["inventory.bow"] = rng.integers(0, 2, n).astype(np.int32)
    s["inventory.armour"] = rng.integers(0, 3, (n, 4)).astype(np.int32)
    s["inventory.potions"] = rng.choice([0, 0, 1, 2, 99], (n, 6)).astype(np.int32)
    s["potion_mapping"] = np.stack([rng.permutation(6) for _ in range(n)]).astype(np.int32)
    s["sword_enchantment"] = rng.integers(0, 3, n).astype(np.int32)
    s["bow_enchantment"] = rng.integers(0, 3, n).astype(np.int32)
    s["armour_enchantments"] = rng.integers(0, 3, (n, 4)).astype(np.int32)
    allench = rng.random(n) < 0.2
    s["armour_enchantments"][allench] = rng.integers(1, 3, (allench.sum(), 1))
    s["learned_spells"] = rng.random((n, 2)) < 0.5
    s["player_mana"] = rng.choice([0, 1, 2, 3, 8, 9, 10, 21], n).astype(np.int32)
    s["player_xp"] = rng.choice([0, 1, 2, 7], n).astype(np.int32)
    for f in ["player_dexterity", "player_strength", "player_intelligence"]:
        s[f] = rng.choice([1, 1, 2, 3, 4, 5, 5], n).astype(np.int32)
    s["player_food"] = rng.integers(0, 18, n).astype(np.int32)
    s["player_drink"] = rng.integers(0, 18, n).astype(np.int32)
    s["player_energy"] = rng.integers(0, 18, n).astype(np.int32)
    health = rng.choice([9.0, 1.0, 0.5, 13.0, 2.0], n).astype(np.float32)
    frac = rng.random(n) < 0.5
    health[frac] = (rng.random(frac.sum()) * 14).astype(np.float32)
    s["player_health"] = health
    s["player_hunger"] = (rng.random(n) * 20).astype(np.float32)
    s["player_thirst"] = (rng.random(n) * 20).astype(np.float32)
    s["monsters_killed"] = rng.choice([0, 7, 8, 10], (n, 9)).astype(np.int32)
    s["chests_opened"] = rng.random((n, 9)) < 0.3
    s["achievements"] = rng.random((n, 67)) < 0.3
    s["boss_progress"] = rng.choice([0, 1, 7, 8], n).astype(np.int32)
    s["boss_timesteps_to_spawn_this_round"] = rng.choice([-2, 0, 0, 1, 7], n).astype(np.int32)

    # mobs: random slots, some at the facing cell (on the player's level)
    for cls, nslots in [("melee_mobs", 3), ("passive_mobs", 3), ("ranged_mobs", 2)]:
        s[cls + ".mask"] = rng.random((n, 9, nslots)) < 0.3
        s[cls + ".type_id"] = rng.integers(0, 8, (n, 9, nslots)).astype(np.int32)
        hp = rng.choice([0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 20.0], (n, 9, nslots)).astype(np.float32)
        fr_hp = rng.random((n, 9, nslots)) < 0.4
        hp[fr_hp] = (rng.random(fr_hp.sum()) * 10).astype(np.float32)
        neg = rng.random((n, 9, nslots)) < 0.03
        hp[neg] = -1.0
        s[cls + ".health"] = hp
        s[cls + ".position"] = rng.integers(0, 48, (n, 9, nslots, 2)).astype(np.int32)
        at = rng.random(n) < 0.25
        slot = rng.integers(0, nslots, n)
        s[cls + ".position"][ar[at], level[at], slot[at]] = fc[at]
        s[cls + ".mask"][ar[at], level[at], slot[at]] = rng.random(at.sum()) < 0.85
        # as in every reachable state (set_state admits no other): a masked mob has health > 0;
        # the -1 entries stay as unmasked slots
        s[cls + ".mask"] &= s[cls + ".health"] > 0
        s["mob_map"][ar[at], level[at], fr[at, 0], fr[at, 1]] = True
    pm = rng.random((n, 9, 3)) < 0.5
    s["player_projectiles.mask"] = pm
    s["player_projectiles.type_id"] = rng.integers(0, 8, (n, 9, 3)).astype(np.int32)
    s["player_projectiles.position"] = rng.integers(-1, 49, (n, 9, 3, 2)).astype(np.int32)
    s["player_projectile_directions"] = rng.integers(-1, 2, (n, 9, 3, 2)).astype(np.int32)

    # growing plants, some at the facing cell
    s["growing_plants_mask"] = rng.random((n, 10)) < 0.6
    full = rng.random(n) < 0.2
    s["growing_plants_mask"][full] = True
    s["growing_plants_age"] = rng.integers(0, 700, (n, 10)).astype(np.int32)
    s["growing_plants_positions"] = rng.integers(0, 48, (n, 10, 2)).astype(np.int32)
    gp = rng.random(n) < 0.5
    gslot = rng.integers(0, 10, n)
    s["growing_plants_positions"][ar[gp], gslot[gp]] = fc[gp]

    if actions_pool is None:
        actions = rng.integers(0, 43, n).astype(np.int32)
    else:
        actions = np.asarray(actions_pool, np.int32)[rng.integers(0, len(actions_pool), n)]
        mix = rng.random(n) < 0.15
        actions[mix] = rng.integers(0, 43, mix.sum())
    keys = rng.integers(0, 2**32, (n, 2), dtype=np.uint64).astype(np.uint32)
    return s, actions, keys, fin


# ---- upstream functions (jitted, vmapped over state, action, key) ----------------------------
def _wrap(name):
    fns = {
        "change_floor": lambda st, a, k, p: GL.change_floor(st, a, p, STATIC),
        "do_crafting": lambda st, a, k, p: GL.do_crafting(st, a),
        "do_action": lambda st, a, k, p: GL.do_action(k, st, a, STATIC),
        "place_block": lambda st, a, k, p: GL.place_block(st, a, STATIC),
        "shoot_projectile": lambda st, a, k, p: GL.shoot_projectile(st, a, STATIC),
        "cast_spell": lambda st, a, k, p: GL.cast_spell(st, a, STATIC),
        "drink_potion": lambda st, a, k, p: GL.drink_potion(st, a),
        "read_book": lambda st, a, k, p: GL.read_book(k, st, a),
        "enchant": lambda st, a, k, p: GL.enchant(k, st, a),
        "boss_logic": lambda st, a, k, p: GL.boss_logic(st, STATIC),
        "level_up_attributes": lambda st, a, k, p: GL.level_up_attributes(st, a, p),
        "move_player": lambda st, a, k, p: GL.move_player(st, a, p),
        "clip_inventory_and_intrinsics": lambda st, a, k, p: GU.clip_inventory_and_intrinsics(st, p),
    }
    return fns[name]


@functools.lru_cache(maxsize=None)
def _jitted(name):
    return jax.jit(jax.vmap(_wrap(name), in_axes=(0, 0, 0, None)))


SUBSYSTEMS = {
    "change_floor": (lib.CRAFTAX_SUB_CHANGE_FLOOR, [C.Action.DESCEND.value, C.Action.ASCEND.value]),
    "do_crafting": (lib.CRAFTAX_SUB_DO_CRAFTING, list(range(11, 17)) + [20, 21, 22, 23, 25, 38]),
    "do_action": (lib.CRAFTAX_SUB_DO_ACTION, [C.Action.DO.value]),
    "place_block": (lib.CRAFTAX_SUB_PLACE_BLOCK, [7, 8, 9, 10, 28]),
    "shoot_projectile": (lib.CRAFTAX_SUB_SHOOT_PROJECTILE, [24]),
    "cast_spell": (lib.CRAFTAX_SUB_CAST_SPELL, [26, 27]),
    "drink_potion": (lib.CRAFTAX_SUB_DRINK_POTION, list(range(29, 35))),
    "read_book": (lib.CRAFTAX_SUB_READ_BOOK, [35]),
    "enchant": (lib.CRAFTAX_SUB_ENCHANT, [36, 37, 42]),
    "boss_logic": (lib.CRAFTAX_SUB_BOSS_LOGIC, [0]),
    "level_up_attributes": (lib.CRAFTAX_SUB_LEVEL_UP_ATTRIBUTES, [39, 40, 41]),
    "move_player": (lib.CRAFTAX_SUB_MOVE_PLAYER, [1, 2, 3, 4]),
    "clip_inventory_and_intrinsics": (lib.CRAFTAX_SUB_CLIP_INVENTORY_AND_INTRINSICS, [0]),
}


def run_both(name, s, actions, keys, params=PARAMS, env_params=None):
    sub_id, _ = SUBSYSTEMS[name]
    out = _jitted(name)(to_upstream(s), jnp.asarray(actions), jnp.asarray(keys), params)
    expected = upstream.flatten_state(out)
    buf = c_states_from(s)
    cp = to_c(env_params or EnvParams())
    check(
        lib.craftax_test_player_subsystem(
            sub_id, ptr(buf, "void *"), ptr(actions, "int32_t *"), ptr(keys, "uint32_t *"), len(actions), cp
        ),
        name,
    )
    return expected, c_states_to_dict(buf)


COUNTS: dict[str, int] = {}


def focus_batch(name, s, seed):
    """Steer part of a batch toward the preconditions of one subsystem."""
    rng = np.random.default_rng(seed + 1)
    n = len(s["player_level"])
    ar = np.arange(n)
    level, pos, d = s["player_level"], s["player_position"], s["player_direction"]
    f = pos + DIRS[d]
    fin = np.all((f >= 0) & (f < 48), axis=1)
    fx, fy = np.clip(f[:, 0], 0, 47), np.clip(f[:, 1], 0, 47)
    sel = (rng.random(n) < 0.7) & fin
    if name in ("place_block", "enchant"):
        for cls in ("melee_mobs", "passive_mobs", "ranged_mobs"):
            s[cls + ".position"][sel] = np.where(
                np.all(s[cls + ".position"][sel] == f[sel][:, None, None, :], axis=-1, keepdims=True), 0,
                s[cls + ".position"][sel])
        s["mob_map"][ar[sel], level[sel], fx[sel], fy[sel]] = False
    if name == "place_block":
        pool = np.array([C.BlockType.GRASS.value] * 4 + [C.BlockType.SAND.value, C.BlockType.PATH.value,
                        C.BlockType.WATER.value, C.BlockType.LAVA.value, C.BlockType.FIRE_GRASS.value,
                        C.BlockType.ICE_GRASS.value, C.BlockType.DARKNESS.value, C.BlockType.STONE.value])
        s["map"][ar[sel], level[sel], fx[sel], fy[sel]] = pool[rng.integers(0, len(pool), sel.sum())]
        clear = sel & (rng.random(n) < 0.8)
        s["item_map"][ar[clear], level[clear], fx[clear], fy[clear]] = 0
        s["light_map"][sel] = (rng.random(s["light_map"][sel].shape) * rng.choice([0.0, 0.3, 1.0])).astype(np.float32)
    if name == "enchant":
        tables = np.array([C.BlockType.ENCHANTMENT_TABLE_FIRE.value, C.BlockType.ENCHANTMENT_TABLE_ICE.value])
        s["map"][ar[sel], level[sel], fx[sel], fy[sel]] = tables[rng.integers(0, 2, sel.sum())]
        rich = rng.random(n) < 0.7
        s["player_mana"][rich] = rng.choice([9, 10, 20], rich.sum())
        s["inventory.ruby"][rich] = rng.choice([1, 2, 99], rich.sum())
        s["inventory.sapphire"][rich] = rng.choice([1, 2, 99], rich.sum())
    if name == "do_action":
        boss = rng.random(n) < 0.2
        s["player_level"][boss] = 8
        s["melee_mobs.mask"][boss, 8] = False
        s["ranged_mobs.mask"][boss, 8] = False
        s["boss_timesteps_to_spawn_this_round"][boss] = rng.choice([-1, 0, 0, 3], boss.sum())
        nec = boss & fin & (rng.random(n) < 0.7)
        s["map"][ar[nec], 8, fx[nec], fy[nec]] = C.BlockType.NECROMANCER.value
        chest = (~boss) & fin & (rng.random(n) < 0.2)
        s["map"][ar[chest], level[chest], fx[chest], fy[chest]] = C.BlockType.CHEST.value
        lv = np.where(rng.random(n) < 0.5, rng.choice([1, 3, 4], n), level)
        s["player_level"][chest] = lv[chest]
        s["map"][ar[chest], lv[chest], fx[chest], fy[chest]] = C.BlockType.CHEST.value
    return s


def _check_subsystem(name, seed, god_mode=False):
    _, pool = SUBSYSTEMS[name]
    s, actions, keys, _ = make_batch(seed, actions_pool=pool)
    s = focus_batch(name, s, seed)
    params = PARAMS.replace(god_mode=god_mode) if god_mode else PARAMS
    expected, got = run_both(name, s, actions, keys, params, EnvParams(god_mode=god_mode))
    compare(expected, got, f"{name} seed {seed}", keys, actions)
    COUNTS[name] = COUNTS.get(name, 0) + len(actions)


@pytest.mark.parametrize("name", list(SUBSYSTEMS))
@settings(max_examples=EXAMPLES, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1))
def test_subsystem_matches_jax(name, seed):
    _check_subsystem(name, seed)


@pytest.mark.parametrize("name", ["change_floor", "move_player", "clip_inventory_and_intrinsics"])
@settings(max_examples=max(1, EXAMPLES // 2), **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1))
def test_subsystem_god_mode(name, seed):
    _check_subsystem(name, seed, god_mode=True)


# ---- constants ------------------------------------------------------------------------------
def test_game_constants_header_matches_package():
    """Every table in game_constants.h equals the package's array (floats bitwise)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "reference_c/include/craftax/game_constants.h").read_text()
    for m in re.finditer(r"static CRAFTAX_CONST \w+ CRAFTAX_(\w+)((?:\[\d+\])+) = (\{.*?\});", text, re.S):
        name, body = m.group(1), m.group(3)
        if not hasattr(C, name):
            continue
        vals = re.findall(r"-?0x[0-9a-fA-F.]+p[-+]?\d+f|-?\d+\.\d+f|-?\d+", body)
        arr = np.asarray(getattr(C, name))
        if arr.dtype.kind == "f":
            got = np.array([float.fromhex(v[:-1]) if "0x" in v else float(v.rstrip("f")) for v in vals], np.float32)
            assert np.array_equal(got.view(np.uint32), arr.astype(np.float32).ravel().view(np.uint32)), name
        else:
            assert np.array_equal(np.array([int(v) for v in vals]), arr.astype(np.int64).ravel()), name
    for a in C.Achievement:
        assert re.search(rf"ACH_{a.name} = {a.value},", text), a


# ---- damage formulas, brute force ----------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _template_state():
    names, treedef = _treedef()
    base = _base_states()
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(base[n][0]) for n in names])


def _i32(x):
    return np.ascontiguousarray(x, dtype=np.int32)


def test_player_damage_vector_exhaustive():
    """sword 0..4 x sword enchantment 0..2 x strength 0..9 x intelligence 0..9."""
    combos = _i32(np.array(np.meshgrid(range(5), range(3), range(10), range(10), indexing="ij")).reshape(4, -1).T)
    t = _template_state()

    def f(sw, se, stg, itl):
        return GU.get_player_damage_vector(
            t.replace(inventory=t.inventory.replace(sword=sw), sword_enchantment=se, player_strength=stg,
                      player_intelligence=itl))

    exp = np.asarray(jax.jit(jax.vmap(f))(*[jnp.asarray(combos[:, k]) for k in range(4)]))
    cols = [_i32(combos[:, k]) for k in range(4)]
    out = np.zeros((len(combos), 3), np.float32)
    check(lib.craftax_test_player_damage_vector_fields(*[ptr(c, "int32_t *") for c in cols], len(combos),
                                                       ptr(out, "float *")), "damage vector")
    bad = np.argwhere(exp.view(np.uint32) != out.view(np.uint32))
    assert len(bad) == 0, f"{len(bad)} mismatches, first combo {combos[bad[0][0]]} jax {exp[bad[0][0]]!r} c {out[bad[0][0]]!r}"


def test_damage_done_to_player_exhaustive():
    """armour 3^4 x armour enchantments 3^4 x level (0, 8) x every melee damage row (awake,
    and x(1 + 2.5) asleep) and every projectile damage row."""
    a = np.array(np.meshgrid(*[range(3)] * 8, indexing="ij")).reshape(8, -1).T  # 6561
    dm = np.asarray(C.MOB_TYPE_DAMAGE_MAPPING)
    rows = [dm[t, 1] * np.float32(f) for t in range(8) for f in (1.0, 3.5)] + [dm[t, 3] for t in range(8)]
    rows = np.array(rows, np.float32)
    t = _template_state()

    def f(arm, ench, lvl, d):
        return GU.get_damage_done_to_player(
            t.replace(inventory=t.inventory.replace(armour=arm), armour_enchantments=ench, player_level=lvl), STATIC, d)

    fn = jax.jit(jax.vmap(f))
    n_rows = len(rows)
    arm = _i32(np.repeat(a[:, :4], n_rows, 0))
    ench = _i32(np.repeat(a[:, 4:], n_rows, 0))
    d = np.ascontiguousarray(np.tile(rows, (len(a), 1)), np.float32)
    total = 0
    for level in (0, 8):
        lv = np.full(len(arm), level, np.int32)
        exp = np.asarray(fn(jnp.asarray(arm), jnp.asarray(ench), jnp.asarray(lv), jnp.asarray(d)))
        out = np.zeros(len(arm), np.float32)
        check(lib.craftax_test_damage_done_to_player_fields(ptr(arm, "int32_t *"), ptr(ench, "int32_t *"),
                                                            ptr(lv, "int32_t *"), ptr(d, "float *"), len(arm),
                                                            ptr(out, "float *")), "dmg")
        bad = np.flatnonzero(exp.view(np.uint32) != out.view(np.uint32))
        assert len(bad) == 0, (
            f"{len(bad)}/{len(arm)} mismatches; first: armour {arm[bad[0]]} ench {ench[bad[0]]} level {level} "
            f"dmg {d[bad[0]]} jax {exp[bad[0]]!r} c {out[bad[0]]!r}")
        total += len(arm)
    assert total == 2 * 6561 * n_rows


# ---- attack_mob with arbitrary positions, damage vectors and can_eat (projectile use) -------
@functools.lru_cache(maxsize=None)
def _jitted_attack_mob():
    return jax.jit(jax.vmap(lambda st, p, d, e: GU.attack_mob(st, p, d, e)))


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1))
def test_attack_mob_matches_jax(seed):
    rng = np.random.default_rng(seed)
    s, _, _, _ = make_batch(seed)
    n = len(s["player_level"])
    level = s["player_level"]
    # target: a mob slot of the player's level, the facing cell, or an off-map cell
    cls = rng.choice(["melee_mobs", "passive_mobs", "ranged_mobs"], n)
    pos = rng.integers(-1, 49, (n, 2)).astype(np.int32)
    for i in range(n):
        r = rng.random()
        if r < 0.6:
            slots = s[cls[i] + ".position"].shape[2]
            pos[i] = s[cls[i] + ".position"][i, level[i], rng.integers(0, slots)]
        elif r < 0.8:
            pos[i] = s["player_position"][i] + DIRS[s["player_direction"][i]]
    # damage vectors: player melee, arrows / spells scaled by attributes, random floats
    dmg = np.zeros((n, 3), np.float32)
    kind = rng.integers(0, 3, n)
    dmg[kind == 0] = np.asarray(C.MOB_TYPE_DAMAGE_MAPPING)[rng.integers(0, 8, (kind == 0).sum()), 3]
    dmg[kind == 1] = (rng.random(((kind == 1).sum(), 3)) * 10).astype(np.float32)
    dmg[kind == 2] = np.float32(2.0) * np.float32(1.0) + np.array([0, 2.5, 0], np.float32)
    can_eat = rng.random(n) < 0.5
    out, did_attack, did_kill = _jitted_attack_mob()(to_upstream(s), jnp.asarray(pos), jnp.asarray(dmg),
                                                     jnp.asarray(can_eat))
    expected = upstream.flatten_state(out)
    buf = c_states_from(s)
    ce = _i32(can_eat)
    da = np.zeros(n, np.int32)
    dk = np.zeros(n, np.int32)
    check(lib.craftax_test_attack_mob(ptr(buf, "void *"), ptr(_i32(pos), "int32_t *"), ptr(dmg, "float *"),
                                      ptr(ce, "int32_t *"), n, ptr(da, "int32_t *"), ptr(dk, "int32_t *")), "attack")
    compare(expected, c_states_to_dict(buf), f"attack_mob seed {seed}")
    assert np.array_equal(np.asarray(did_attack), da.astype(bool)), "did_attack_mob"
    assert np.array_equal(np.asarray(did_kill), dk.astype(bool)), "did_kill_mob"
    assert did_attack.any() and did_kill.any()


# ---- position predicates (used by movement of the player and of mobs) ------------------------
@settings(max_examples=EXAMPLES, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1))
def test_position_predicates_match_jax(seed):
    rng = np.random.default_rng(seed)
    s, _, _, _ = make_batch(seed)
    n = len(s["player_level"])
    pos = s["player_position"] + rng.integers(-2, 3, (n, 2))
    edge = rng.random(n) < 0.3
    pos[edge] = rng.choice([-1, 0, 47, 48], (int(edge.sum()), 2))
    pos = _i32(pos)
    rows = np.asarray(C.MOB_TYPE_COLLISION_MAPPING).reshape(-1, 3)
    coll = _i32(rows[rng.integers(0, len(rows), n)])
    block = _i32(rng.integers(0, 37, n))

    def f(st_, p, c, b):
        return jnp.stack([GU.in_bounds(st_, p), GU.is_in_solid_block(st_, p), GU.is_in_mob(st_, p),
                          GU.is_position_in_bounds_not_in_mob_not_colliding(st_, p, c),
                          GU.is_near_block(st_, b)]).astype(jnp.int32)

    exp = np.asarray(jax.jit(jax.vmap(f))(to_upstream(s), jnp.asarray(pos), jnp.asarray(coll), jnp.asarray(block)))
    buf = c_states_from(s)
    out = np.zeros((n, 5), np.int32)
    check(lib.craftax_test_position_predicates(ptr(buf, "void *"), ptr(pos, "int32_t *"), ptr(coll, "int32_t *"),
                                               ptr(block, "int32_t *"), n, ptr(out, "int32_t *")), "predicates")
    bad = np.argwhere(exp != out)
    assert len(bad) == 0, f"{len(bad)} mismatches; first env {bad[0][0]} predicate {bad[0][1]} pos {pos[bad[0][0]]}"


# ---- the melee damage formula inside the whole jitted craftax_step ---------------------------
@functools.lru_cache(maxsize=None)
def _jitted_craftax_step():
    return jax.jit(jax.vmap(lambda k, st_, a: GL.craftax_step(k, st_, a, PARAMS, STATIC)[0]))


def test_melee_damage_in_full_step_context():
    """XLA fuses get_damage's multiply-adds per compiled program; check that the form of
    game_logic_utils.h also holds inside craftax_step: a mob hit by DO and not killed keeps
    its health through the rest of the step when no player projectile is alive."""
    checked = 0
    for seed in range(3 if _PROFILE != "thorough" else 20):
        s, actions, keys, _ = make_batch(seed + 777, actions_pool=[C.Action.DO.value])
        actions[:] = C.Action.DO.value
        s["is_sleeping"][:] = False
        s["is_resting"][:] = False
        s["player_projectiles.mask"][:] = False
        s["player_health"][:] = np.float32(9.0)
        out = upstream.flatten_state(_jitted_craftax_step()(jnp.asarray(keys), to_upstream(s), jnp.asarray(actions)))
        sub = np.stack([np.asarray(jax.random.split(jnp.asarray(k)))[1] for k in keys]).astype(np.uint32)
        buf = c_states_from(s)
        check(lib.craftax_test_player_subsystem(lib.CRAFTAX_SUB_DO_ACTION, ptr(buf, "void *"), ptr(actions, "int32_t *"),
                                                ptr(np.ascontiguousarray(sub), "uint32_t *"), len(actions),
                                                to_c(EnvParams())), "do_action")
        got = c_states_to_dict(buf)
        lv = s["player_level"]
        for cls in ("melee_mobs", "passive_mobs", "ranged_mobs"):
            ar = np.arange(len(lv))
            before = s[cls + ".health"][ar, lv]
            after_c = got[cls + ".health"][ar, lv]
            alive_c = got[cls + ".mask"][ar, lv]
            full = out[cls + ".health"][ar, lv]
            hit = (before.view(np.uint32) != after_c.view(np.uint32)) & alive_c
            bad = hit & (full.view(np.uint32) != after_c.view(np.uint32))
            assert not bad.any(), f"{cls}: env {np.argwhere(bad)[0]} step {full[bad][0]!r} c {after_c[bad][0]!r}"
            checked += int(hit.sum())
    assert checked > 0


def test_damage_to_player_in_full_step_context():
    """get_damage_done_to_player's fused form is measured standalone above; here the same
    form must reproduce the health a melee hit leaves inside the whole jitted craftax_step
    (one adjacent melee mob with cooldown 0, nothing else alive, intrinsics neutral)."""
    rng = np.random.default_rng(4242)
    s, actions, keys, _ = make_batch(4242)
    n = len(actions)
    ar = np.arange(n)
    actions[:] = C.Action.NOOP.value
    lv = s["player_level"]
    pos = rng.integers(2, 46, (n, 2)).astype(np.int32)
    s["player_position"] = pos
    for cls in ("melee_mobs", "passive_mobs", "ranged_mobs", "mob_projectiles", "player_projectiles"):
        s[cls + ".mask"][:] = False
    s["mob_map"][:] = False
    mob = pos + np.array([1, 0], np.int32)
    s["melee_mobs.mask"][ar, lv, 0] = True
    s["melee_mobs.position"][ar, lv, 0] = mob
    s["melee_mobs.health"][ar, lv, 0] = np.float32(5.0)
    s["melee_mobs.attack_cooldown"][ar, lv, 0] = 0
    mtype = rng.integers(0, 8, n).astype(np.int32)
    s["melee_mobs.type_id"][ar, lv, 0] = mtype
    s["mob_map"][ar, lv, mob[:, 0], mob[:, 1]] = True
    sleeping = rng.random(n) < 0.3  # a melee hit does 1 + 2.5 times more and wakes the player
    s["is_sleeping"][:] = sleeping
    s["is_resting"][:] = False
    s["player_health"][:] = np.float32(9.0)
    s["player_strength"][:] = 5
    for f in ("player_food", "player_drink", "player_energy"):
        s[f][:] = 5
    for f in ("player_recover", "player_hunger", "player_thirst", "player_fatigue", "player_recover_mana"):
        s[f][:] = np.float32(0.0)
    s["boss_timesteps_to_spawn_this_round"][:] = 0
    out = upstream.flatten_state(_jitted_craftax_step()(jnp.asarray(keys), to_upstream(s), jnp.asarray(actions)))
    dmg = np.asarray(C.MOB_TYPE_DAMAGE_MAPPING)[mtype, 1].astype(np.float32)
    dmg = np.ascontiguousarray(dmg * np.where(sleeping, np.float32(3.5), np.float32(1.0))[:, None], np.float32)
    buf = c_states_from(s)
    c_dmg = np.zeros(n, np.float32)
    check(lib.craftax_test_damage_done_to_player(ptr(buf, "void *"), ptr(dmg, "float *"), n, ptr(c_dmg, "float *")), "d")
    expected_health = np.maximum(np.float32(9.0) - c_dmg, np.float32(0.0))  # clip_inventory_and_intrinsics
    got = out["player_health"]
    attacked = out["melee_mobs.attack_cooldown"][ar, lv, 0] == 5
    assert attacked.sum() > n // 2 and (attacked & sleeping).any()
    bad = attacked & (got.view(np.uint32) != expected_health.view(np.uint32))
    assert not bad.any(), (f"{int(bad.sum())}/{int(attacked.sum())}: env {np.argwhere(bad)[0]} step {got[bad][0]!r} "
                           f"c {expected_health[bad][0]!r}")
    # the cases must discriminate between a plain sum and the fused form
    f32 = np.float32
    arm = s["inventory.armour"].astype(f32) * f32(0.1)
    d0 = ((arm[:, 0] + arm[:, 1]) + arm[:, 2]) + arm[:, 3]
    e = s["armour_enchantments"]
    d1 = np.zeros(n, f32)
    d2 = np.zeros(n, f32)
    for k in range(4):
        d1 = d1 + np.where(e[:, k] == 1, f32(0.2), f32(0))
        d2 = d2 + np.where(e[:, k] == 2, f32(0.2), f32(0))
    coef = np.where(lv == 8, f32(1.5), f32(1.0))
    dd = dmg * coef[:, None]
    plain = ((f32(1) - d0) * dd[:, 0] + (f32(1) - d1) * dd[:, 1]) + (f32(1) - d2) * dd[:, 2]
    plain_health = np.maximum(np.float32(9.0) - plain, np.float32(0.0))
    assert (attacked & (plain_health.view(np.uint32) != expected_health.view(np.uint32))).sum() > 0
