"""Pixel parity: Craftax-Pixels-v1 and Craftax-Classic-Pixels-v1 on the C backend against
craftax 1.6.1's CraftaxPixelsEnv and CraftaxClassicPixelsEnv (jitted, vmapped reset_env and
step_env, conformance/pixels_upstream.py), every obs pixel bitwise and every state leaf.

- textures: pycraftax/textures.py's arrays equal upstream's load_all_textures_given_size;
- worlds: reset from many keys (the full game's pixel env generates a world from the key
  itself, where its symbolic env splits it first);
- random lockstep from resets, through day and night (short days), DO a third of the time;
- injected deep states, Hypothesis-seeded: every floor of the full game (dark floors lit by
  torches and random light maps, ladders open and blocked, the necromancer, mobs of every
  class and type on screen, projectiles in all four directions, the view over the map's
  edge), full inventories (one and two digits, 99), potions, armour and enchantments, spells,
  attributes, sleeping; Classic's perturbed states with sleeping and night; then a busy policy
  (DO, placing torches and stones, crafting, spells, sleep) stepped in lockstep.

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance/test_pixels.py
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import NUM_LEVELS, PROFILE, compare_obs, compare_states, key_stream, record_summary, require_jax

require_jax()

from conformance import classic_scenarios  # noqa: E402
from conformance import pixels_upstream as pu  # noqa: E402
from conformance.conftest import is_per_level  # noqa: E402
from conformance.step_reference import mutate  # noqa: E402
import pycraftax  # noqa: E402
from pycraftax import textures  # noqa: E402

pytestmark = pytest.mark.jax

GAMES = (pu.FULL, pu.CLASSIC)
WORLD_BATCHES = {"dev": 1, "ci": 2, "thorough": 30}[PROFILE]
RANDOM_STEPS = {"dev": 20, "ci": 40, "thorough": 300}[PROFILE]
INJECT_EXAMPLES = {"dev": 1, "ci": 2, "thorough": 20}[PROFILE]
INJECT_STEPS = {"dev": 6, "ci": 12, "thorough": 40}[PROFILE]
SHORT_DAY = 20  # a whole day and night every 20 steps

_COMPARED = {game: 0 for game in GAMES}  # obs compared, for the summary


def ours(game: str, n: int, **params):
    return pycraftax.make(pu.ENV_IDS[game], num_envs=n, backend="c", **params)


def upstream_params(game: str, **params):
    return pu.default_params(game).replace(**params)


def check(game: str, where: str, obs, expected_obs, state, expected_state, keys=None) -> None:
    compare_states(expected_state, state, keys, where)
    compare_obs(expected_obs, obs, keys, where)
    _COMPARED[game] += obs.shape[0]


def lockstep(game: str, init: dict, actions: np.ndarray, step_keys: np.ndarray, where: str, **params) -> None:
    """Both sides from state dict `init` (n <= the game's batch), actions and keys [T, n]:
    obs (pixels), every state leaf, reward and done after every step_env."""
    n = actions.shape[1]
    env = ours(game, n, **params)
    env.set_state(init)
    state, u_params = init, upstream_params(game, **params)
    for t in range(actions.shape[0]):
        u_obs, state, u_reward, u_done = pu.step(game, state, actions[t], step_keys[t], u_params)
        obs, reward, done, _ = env.step_with_keys(actions[t], step_keys[t])
        check(game, f"{where}, step {t}", obs, u_obs, env.get_state(), state)
        np.testing.assert_array_equal(reward.view(np.uint32), u_reward.view(np.uint32), err_msg=where)
        np.testing.assert_array_equal(done, u_done, err_msg=where)
    env.close()


# -- textures ------------------------------------------------------------------------------------
def _upstream_arrays(game: str, block: int) -> dict[str, np.ndarray]:
    """upstream's textures under the names textures.py gives them (the per-cell textures that
    upstream tiles or pads into its full-map ones)."""
    up = pu.upstream_textures(game, block)
    out = dict(up)
    out["player_textures"] = np.stack(up["player_textures"])
    if game == pu.FULL:
        out["item_textures"] = up["full_map_item_textures"][:, :block, :block]
    else:
        out["player_textures"] = out["player_textures"][..., :3]
        rows, cols = 3 * block, 4 * block  # the padded alpha's centre cell
        out["player_textures_alpha"] = up["full_map_player_textures_alpha"][:, rows:rows + block, cols:cols + block]
    return out


@pytest.mark.parametrize("game", GAMES)
def test_textures_are_upstreams(game):
    block = pu.AGENT_BLOCK[game]
    mine = textures.textures(game, block)
    up = _upstream_arrays(game, block)
    for name, value in mine.items():
        expected = np.asarray(up[name], dtype=np.float32)
        assert value.shape == expected.shape, f"{name}: shape {value.shape} != upstream's {expected.shape}"
        np.testing.assert_array_equal(value.view(np.uint32), expected.view(np.uint32), err_msg=name)
    # what upstream derives from them: the tiled block and item maps, the padded player sprites
    rows, cols = textures.VIEW[game]
    tiled = np.stack([np.tile(t, (rows, cols, 1)) for t in mine["block_textures"]])
    np.testing.assert_array_equal(tiled, pu.upstream_textures(game, block)["full_map_block_textures"])
    if game == pu.FULL:
        items = np.stack([np.tile(t, (rows, cols, 1)) for t in mine["item_textures"]])
        np.testing.assert_array_equal(items, pu.upstream_textures(game, block)["full_map_item_textures"])
    record_summary(f"test_pixels: {game} textures at block {block}: {len(mine)} arrays equal to upstream's")


# -- worlds ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
def test_reset_matches_upstream(game):
    batch = pu.BATCH[game]
    keys = key_stream(batch * WORLD_BATCHES, seed=8811)
    env = ours(game, batch)
    for b in range(WORLD_BATCHES):
        k = keys[b * batch:(b + 1) * batch]
        u_obs, u_state = pu.reset(game, k)
        obs, _ = env.reset_with_keys(k)
        check(game, f"reset batch {b}", obs, u_obs, env.get_state(), u_state, k)
    env.close()
    record_summary(f"test_pixels: {game} reset obs of {len(keys)} worlds equal, every pixel and leaf")


@pytest.mark.parametrize("game", GAMES)
def test_random_lockstep_through_day_and_night(game):
    batch = pu.BATCH[game]
    rng = np.random.default_rng(5)
    keys = key_stream(batch, seed=9911)
    actions = rng.integers(0, pu.NUM_ACTIONS[game], size=(RANDOM_STEPS, batch)).astype(np.int32)
    actions[rng.random(actions.shape) < 0.3] = 5  # DO, in both games
    step_keys = rng.integers(0, 2**32, size=(RANDOM_STEPS, batch, 2), dtype=np.uint32)
    for params in ({"day_length": SHORT_DAY}, {}) if PROFILE == "thorough" else ({"day_length": SHORT_DAY},):
        _, init = pu.reset(game, keys, upstream_params(game, **params))
        lockstep(game, init, actions, step_keys, f"random lockstep {params}", **params)
    record_summary(f"test_pixels: {game} random lockstep, {batch} envs x {RANDOM_STEPS} steps, equal")


# -- injected deep states ----------------------------------------------------------------------------
def _swap_levels(s: dict, e: int, a: int, b: int) -> None:
    """Exchange levels a and b of env e in every per-level leaf."""
    for name, value in s.items():
        if is_per_level(name, value.shape):
            value[e, [a, b]] = value[e, [b, a]]


def deep_full_states(seed: int) -> dict:
    """One env per floor: step_reference.mutate's busy situation moved to floor e, plus what
    only the picture shows: counts of one and two digits up to 99, attributes, light maps
    between dark and lit (torches), items (torches, open and blocked ladders), the necromancer."""
    rng = np.random.default_rng(seed)
    batch = pu.BATCH[pu.FULL]
    env = ours(pu.FULL, batch)
    env.reset_with_keys(key_stream(batch, seed=seed % 7))
    s = mutate(env.get_state(), rng)
    env.close()
    for e in range(batch):
        _swap_levels(s, e, int(s["player_level"][e]), e % NUM_LEVELS)
        level = s["player_level"][e] = e % NUM_LEVELS
        x, y = (int(v) for v in s["player_position"][e])
        if rng.random() < 0.3:  # the view over the map's edge
            x, y = int(rng.choice([0, 1, 3, 44, 46, 47])), int(rng.choice([0, 2, 4, 43, 45, 47]))
            s["player_position"][e] = (x, y)
        window = (slice(max(x - 5, 0), x + 6), slice(max(y - 6, 0), y + 7))
        shape = s["light_map"][e, level][window].shape
        s["light_map"][e, level][window] = rng.choice(
            np.float32([0.0, 0.02, 0.05, 0.051, 0.3, 0.77, 1.0]), size=shape) if rng.random() < 0.7 else \
            rng.random(shape, dtype=np.float32)
        s["item_map"][e, level][window] = rng.choice([0, 0, 0, 1, 2, 3, 4], size=shape)
        s["map"][e, level][window][rng.random(shape) < 0.05] = 32  # NECROMANCER
        s["monsters_killed"][e, level] = rng.choice([0, 7, 8, 30])
        for name in ("wood", "stone", "coal", "iron", "diamond", "sapling", "arrows", "torches", "ruby", "sapphire",
                     "books"):
            s[f"inventory.{name}"][e] = rng.choice([0, 1, 7, 10, 42, 99])
        s["inventory.potions"][e] = rng.choice([0, 1, 10, 99], size=6)
        s["inventory.bow"][e] = rng.choice([0, 1, 2])
        for name in ("player_food", "player_drink", "player_energy", "player_mana", "player_xp"):
            s[name][e] = rng.choice([0, 1, 9, 10, 57, 99])
        # attributes stay within max_attribute (5), as every state of the symbolic suite: above
        # it no step reaches them, and damage and spell arithmetic is only verified up to it
        for name in ("player_dexterity", "player_strength", "player_intelligence"):
            s[name][e] = rng.choice([1, 2, 5])
        s["player_health"][e] = np.float32(rng.choice([0.3, 1.0, 5.5, 9.0, 9.999, 13.0, 42.7, 99.0]))
    return s


def deep_classic_states(seed: int) -> dict:
    """classic_scenarios.perturb's situations (mobs, arrows, plants, blocks around the player),
    some players at the map's edge, the light level anywhere between day and night."""
    rng = np.random.default_rng(seed)
    batch = pu.BATCH[pu.CLASSIC]
    _, reset = pu.reset(pu.CLASSIC, key_stream(batch, seed=seed % 7))
    s = classic_scenarios.perturb(reset, rng)
    for e in range(batch):
        if rng.random() < 0.3:
            s["player_position"][e] = (rng.choice([0, 2, 61, 63]), rng.choice([1, 3, 60, 63]))
        s["timestep"][e] = rng.integers(0, 300)
    return s


def busy_actions(game: str, rng: np.random.Generator, steps: int, n: int) -> np.ndarray:
    """Random actions, DO a third of the time, and in the full game placing torches and stone,
    spells and sleep often: the picture's items, light and sprites change every few steps."""
    actions = rng.integers(0, pu.NUM_ACTIONS[game], size=(steps, n)).astype(np.int32)
    actions[rng.random((steps, n)) < 0.3] = 5
    if game == pu.FULL:
        often = np.array([28, 28, 7, 26, 27, 24, 6, 18, 19], np.int32)  # torch, stone, spells, arrow, sleep, ladders
        pick = rng.random((steps, n)) < 0.25
        actions[pick] = rng.choice(often, size=int(pick.sum()))
    return actions


@pytest.mark.parametrize("game", GAMES)
@settings(max_examples=INJECT_EXAMPLES)
@given(seed=st.integers(0, 2**31 - 1))
def test_injected_deep_states_lockstep(game, seed):
    init = deep_full_states(seed) if game == pu.FULL else deep_classic_states(seed)
    rng = np.random.default_rng(seed)
    n = init["player_position"].shape[0]
    actions = busy_actions(game, rng, INJECT_STEPS, n)
    step_keys = rng.integers(0, 2**32, size=(INJECT_STEPS, n, 2), dtype=np.uint32)
    lockstep(game, init, actions, step_keys, f"injected seed {seed}")


def test_pixels_summary():
    assert all(_COMPARED.values()), f"a game was never compared: {_COMPARED}"
    record_summary(f"test_pixels: pixel obs compared bitwise (all equal): {_COMPARED}")
