"""World subsystems of craftax_step (reference_c/include/craftax/step_world.h) against
upstream on injected states: reset states of both sides, mutated so that rare mechanics
happen (mobs and projectiles around the player, sleeping, low intrinsics, every floor,
the boss floor, ripe plants, the episode limit), then one subsystem applied on both sides
and every leaf compared (floats bitwise).

Hypothesis draws the seeds; HYPOTHESIS_PROFILE=ci runs more examples.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pycraftax  # noqa: E402
from pycraftax._native import lib, ptr  # noqa: E402
from conformance import step_reference as ref  # noqa: E402
from conformance import upstream  # noqa: E402

pytestmark = pytest.mark.jax

settings.register_profile("ci", max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
settings.register_profile("dev", max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

NUM_ENVS = 32
SUBSYSTEMS = {
    "update_mobs": lib.CRAFTAX_SUB_UPDATE_MOBS,
    "spawn_mobs": lib.CRAFTAX_SUB_SPAWN_MOBS,
    "update_plants": lib.CRAFTAX_SUB_UPDATE_PLANTS,
    "update_player_intrinsics": lib.CRAFTAX_SUB_UPDATE_PLAYER_INTRINSICS,
    "calculate_inventory_achievements": lib.CRAFTAX_SUB_CALCULATE_INVENTORY_ACHIEVEMENTS,
    "is_game_over": lib.CRAFTAX_SUB_IS_GAME_OVER,
}
# (passive, melee, ranged) mob types per floor, upstream FLOOR_MOB_MAPPING
FLOOR_MOB_MAPPING = [(0, 0, 0), (2, 2, 2), (1, 1, 1), (2, 3, 3), (2, 4, 4), (1, 5, 5), (1, 6, 6), (1, 7, 7), (0, 0, 0)]
DIRS = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]], dtype=np.int32)

_RESET_CACHE: dict[int, dict[str, np.ndarray]] = {}


def reset_states(seed: int, n: int = NUM_ENVS) -> dict[str, np.ndarray]:
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
        s["player_health"][e] = np.float32(rng.choice([0.0, 0.3, 1.0, 4.6, 9.0, 13.0, -0.5]))
        for k in ("player_food", "player_drink", "player_energy", "player_mana"):
            s[k][e] = rng.integers(0, 12)
        for k, hi in (("player_recover", 26), ("player_hunger", 26), ("player_thirst", 21),
                      ("player_fatigue", 31), ("player_recover_mana", 31)):
            s[k][e] = np.float32(rng.uniform(-16, hi))
        for k in ("player_dexterity", "player_strength", "player_intelligence"):
            s[k][e] = rng.integers(1, 6)
        s["inventory.armour"][e] = rng.integers(0, 3, size=4)
        s["armour_enchantments"][e] = rng.integers(0, 3, size=4)
        s["bow_enchantment"][e] = rng.integers(0, 3)
        s["sword_enchantment"][e] = rng.integers(0, 3)
        for k in ("wood", "stone", "coal", "iron", "diamond", "sapling", "bow", "arrows", "torches", "ruby",
                  "sapphire", "books"):
            s[f"inventory.{k}"][e] = rng.integers(0, 3)
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


def c_subsystem(name: str, state: dict, keys: np.ndarray, actions: np.ndarray):
    n = actions.shape[0]
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=0)
    env.set_state(state)
    out = np.zeros(n, dtype=np.int32)
    params = env._c_params
    code = lib.craftax_test_world_subsystem(
        ptr(env._states, "void *"), SUBSYSTEMS[name], ptr(np.ascontiguousarray(actions, np.int32), "int32_t *"),
        ptr(np.ascontiguousarray(keys, np.uint32), "uint32_t *"), n, params, ptr(out, "int32_t *"))
    assert code == 0
    if name == "is_game_over":
        return out.astype(bool)
    return env.get_state()


def check_subsystem(name: str, seed: int):
    rng = np.random.default_rng(seed)
    state = mutate(reset_states(seed % 4), rng)
    keys = rng.integers(0, 2**32, size=(NUM_ENVS, 2), dtype=np.uint32)
    actions = rng.integers(0, 43, size=NUM_ENVS).astype(np.int32)
    actions[rng.random(NUM_ENVS) < 0.3] = 6  # SLEEP
    actions[rng.random(NUM_ENVS) < 0.2] = 17  # REST
    ours = c_subsystem(name, {k: v.copy() for k, v in state.items()}, keys, actions)
    theirs = ref.subsystem(name, state, keys, actions)
    if name == "is_game_over":
        bad = np.flatnonzero(ours != theirs)
        assert bad.size == 0, f"is_game_over differs for seed {seed} env {bad[0]}: C {ours[bad[0]]}, JAX {theirs[bad[0]]}"
        return
    diff = ref.first_difference(ours, theirs)
    assert diff is None, (
        f"{name}: seed {seed}: leaf {diff[0]!r} env {diff[1]} index {diff[2]}: C {diff[3]!r} vs JAX {diff[4]!r}"
    )


@pytest.mark.parametrize("name", list(SUBSYSTEMS))
@given(seed=st.integers(0, 2**31 - 1))
def test_world_subsystem_matches_upstream(name, seed):
    check_subsystem(name, seed)


def test_mutated_states_are_accepted():
    """The injected states are valid for set_state (sanity of the fixture itself)."""
    state = mutate(reset_states(0), np.random.default_rng(0))
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=NUM_ENVS, backend="c", seed=0)
    env.set_state(state)

