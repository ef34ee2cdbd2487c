"""Busy injected states of both games and the busy policy, for the divergence finder and the
parity tests (conformance/): reset worlds pushed into situations where rare mechanics happen at
once, so that a wrong port shows within a few steps rather than after thousands.

Full game: `mutate` (conformance/test_lockstep.py, test_step_world.py, test_optimistic.py use it
too); Craftax-Classic: `perturb` (conformance/test_classic_lockstep.py). Both take and return
the batched state dicts of get_state/set_state, and draw everything from the given numpy
Generator, so a seed fixes the states.
"""

from __future__ import annotations

import numpy as np

import pycraftax
from pycraftax import jax_random

DO = 5  # the DO action of both games
MOVES = (1, 2, 3, 4)  # LEFT, RIGHT, UP, DOWN in both games


def busy_actions(rng: np.random.Generator, num_steps: int, num_envs: int, num_actions: int) -> np.ndarray:
    """The busy policy's actions [num_steps, num_envs]: uniform over the actions, but DO 30% of
    the time (mining, attacks, eating, drinking, chests need it) and a move 20% (to face new
    blocks and mobs)."""
    actions = rng.integers(0, num_actions, size=(num_steps, num_envs)).astype(np.int32)
    u = rng.random((num_steps, num_envs))
    actions[u < 0.3] = DO
    moving = (u >= 0.3) & (u < 0.5)
    actions[moving] = rng.choice(np.array(MOVES, np.int32), size=int(moving.sum()))
    return actions


# -- the full game ------------------------------------------------------------------------------

# (passive, melee, ranged) mob types per floor, upstream FLOOR_MOB_MAPPING
FLOOR_MOB_MAPPING = [(0, 0, 0), (2, 2, 2), (1, 1, 1), (2, 3, 3), (2, 4, 4), (1, 5, 5), (1, 6, 6), (1, 7, 7), (0, 0, 0)]
DIRS = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]], dtype=np.int32)

NUM_INJECT_ENVS = 32
_RESET_CACHE: dict[tuple[int, int], dict[str, np.ndarray]] = {}


def reset_states(seed: int, n: int = NUM_INJECT_ENVS) -> dict[str, np.ndarray]:
    """C reset states (equal to upstream's, checked by the reset tests) of the n keys
    split(PRNGKey(seed), n)."""
    if (seed, n) not in _RESET_CACHE:
        env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=0)
        env.reset_with_keys(jax_random.split(jax_random.prng_key(seed), n))
        _RESET_CACHE[seed, n] = env.get_state()
    return {k: v.copy() for k, v in _RESET_CACHE[seed, n].items()}


def mutate(state: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Push every env of a reset batch into a random, busy situation: a random floor (the boss
    floor included), mobs of every class around the player at distances 1-12, mob and player
    projectiles (some just off the map), tables, furnaces, water and ores nearby, sleeping and
    resting players, health from dead to full, low and high intrinsics, random inventories,
    tools, armour, enchantments, potions, spells, attributes, XP, boss progress, achievements,
    plants about to ripen and timesteps at the episode limit. In place; returns the dict."""
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


# -- Craftax-Classic ----------------------------------------------------------------------------

CLASSIC_GRASS, CLASSIC_WATER, CLASSIC_STONE, CLASSIC_TREE, CLASSIC_PATH = 2, 3, 4, 5, 7
CLASSIC_COAL, CLASSIC_IRON, CLASSIC_DIAMOND, CLASSIC_TABLE, CLASSIC_FURNACE = 8, 9, 10, 11, 12
CLASSIC_PLANT = 15
NEARBY_BLOCKS = [CLASSIC_TABLE, CLASSIC_FURNACE, CLASSIC_WATER, CLASSIC_STONE, CLASSIC_TREE, CLASSIC_COAL, CLASSIC_IRON,
                 CLASSIC_DIAMOND]
CLASSIC_INVENTORY = ("wood", "stone", "coal", "iron", "diamond", "sapling", "wood_pickaxe", "stone_pickaxe",
                     "iron_pickaxe", "wood_sword", "stone_sword", "iron_sword")


def put_mob(s: dict, i: int, cls: str, slot: int, pos, health: int, cooldown: int = 0) -> None:
    s[cls + ".position"][i, slot] = pos
    s[cls + ".health"][i, slot] = health
    s[cls + ".mask"][i, slot] = True
    s[cls + ".attack_cooldown"][i, slot] = cooldown
    s["mob_map"][i, pos[0], pos[1]] = True


def perturb(reset_state: dict, rng: np.random.Generator) -> dict:
    """Reset states with random inventories, intrinsics, sleep, direction, mobs around the
    player (cells under them made walkable), arrows in flight and plants about to ripen."""
    s = {k: v.copy() for k, v in reset_state.items()}
    n = s["map"].shape[0]
    for i in range(n):
        for name in CLASSIC_INVENTORY:
            s["inventory." + name][i] = rng.integers(0, 10) if rng.random() < 0.5 else rng.integers(0, 2)
        for name in ("player_health", "player_food", "player_drink", "player_energy"):
            s[name][i] = rng.integers(1, 10)
        s["is_sleeping"][i] = rng.random() < 0.2
        s["player_direction"][i] = rng.integers(1, 5)
        s["timestep"][i] = rng.integers(0, 400)
        centre = s["player_position"][i]
        for cls, slots, health in (("zombies", 3, 5), ("cows", 3, 3), ("skeletons", 2, 3)):
            for slot in range(slots):
                if rng.random() < 0.6:
                    pos = np.clip(centre + rng.integers(-5, 6, 2), 0, 63)
                    if (pos == centre).all() or s["mob_map"][i, pos[0], pos[1]]:
                        continue
                    s["map"][i, pos[0], pos[1]] = CLASSIC_PATH if cls == "skeletons" else CLASSIC_GRASS
                    put_mob(s, i, cls, slot, pos, int(rng.integers(1, health + 1)), int(rng.integers(0, 6)))
        for slot in range(3):
            if rng.random() < 0.3:
                s["arrows.position"][i, slot] = np.clip(centre + rng.integers(-4, 5, 2), 0, 63)
                s["arrows.mask"][i, slot] = True
                s["arrow_directions"][i, slot] = [(0, 1), (0, -1), (1, 0), (-1, 0)][rng.integers(0, 4)]
        for slot in range(10):
            if rng.random() < 0.2:
                pos = np.clip(centre + rng.integers(-3, 4, 2), 0, 63)
                s["map"][i, pos[0], pos[1]] = CLASSIC_PLANT
                s["growing_plants_positions"][i, slot] = pos
                s["growing_plants_age"][i, slot] = rng.integers(590, 600)
                s["growing_plants_mask"][i, slot] = True
        for _ in range(4):
            pos = np.clip(centre + rng.integers(-2, 3, 2), 0, 63)
            if not (pos == centre).all() and not s["mob_map"][i, pos[0], pos[1]]:
                s["map"][i, pos[0], pos[1]] = rng.choice(NEARBY_BLOCKS)
    return s
