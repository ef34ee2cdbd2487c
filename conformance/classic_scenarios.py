"""Injected Craftax-Classic states for the parity tests: scripted scenarios (every craft,
every placement, fights with each mob class, eating, sleeping through the night, death by
starvation and lava, the time limit, the edge-of-map quirks) and randomly perturbed states
around the player, built as state dicts (classic_state's leaf names) from reset worlds.

Each scenario is (name, edit, actions): edit(state, i) changes env i of a batched state dict
in place; actions is the scripted action list (NOOP after it ends).
"""

from __future__ import annotations

import numpy as np

from pycraftax.porting.inject import perturb, put_mob  # noqa: F401  (shared with the divergence finder)

NOOP, LEFT, RIGHT, UP, DOWN, DO, SLEEP = 0, 1, 2, 3, 4, 5, 6
PLACE_STONE, PLACE_TABLE, PLACE_FURNACE, PLACE_PLANT = 7, 8, 9, 10
MAKE_WOOD_PICKAXE, MAKE_STONE_PICKAXE, MAKE_IRON_PICKAXE = 11, 12, 13
MAKE_WOOD_SWORD, MAKE_STONE_SWORD, MAKE_IRON_SWORD = 14, 15, 16
GRASS, WATER, STONE, TREE, PATH, COAL, IRON, DIAMOND = 2, 3, 4, 5, 7, 8, 9, 10
TABLE, FURNACE, SAND, LAVA, PLANT, RIPE_PLANT = 11, 12, 13, 14, 15, 16
INVENTORY = (
    "wood",
    "stone",
    "coal",
    "iron",
    "diamond",
    "sapling",
    "wood_pickaxe",
    "stone_pickaxe",
    "iron_pickaxe",
    "wood_sword",
    "stone_sword",
    "iron_sword",
)
CENTRE = 32


def clear_around(s: dict, i: int, radius: int = 4, block: int = GRASS) -> None:
    """The cells within `radius` of the player set to `block`, free of mobs."""
    x, y = s["player_position"][i]
    s["map"][i, max(x - radius, 0) : x + radius + 1, max(y - radius, 0) : y + radius + 1] = block
    s["mob_map"][i, max(x - radius, 0) : x + radius + 1, max(y - radius, 0) : y + radius + 1] = False
    for cls in ("zombies", "cows", "skeletons"):
        s[cls + ".mask"][i] = False


def give(s: dict, i: int, **counts: int) -> None:
    for name, n in counts.items():
        s["inventory." + name][i] = n


def _crafting(s, i):
    clear_around(s, i)
    s["map"][i, CENTRE + 1, CENTRE + 1] = TABLE
    s["map"][i, CENTRE - 1, CENTRE - 1] = FURNACE
    give(s, i, wood=9, stone=9, coal=3, iron=3)


CRAFT_ACTIONS = [
    MAKE_IRON_PICKAXE,  # before the wood and stone pickaxes: tiers are not required
    MAKE_WOOD_PICKAXE,
    MAKE_STONE_PICKAXE,
    MAKE_IRON_PICKAXE,
    MAKE_WOOD_SWORD,
    MAKE_STONE_SWORD,
    MAKE_IRON_SWORD,
    MAKE_IRON_SWORD,
    MAKE_IRON_SWORD,
    MAKE_WOOD_SWORD,
] * 2


def _crafting_without_table(s, i):
    clear_around(s, i)
    give(s, i, wood=9, stone=9, coal=3, iron=3)


def _placing(s, i):
    """Water to the left, a tree to the right, stone below: turning towards a solid cell does
    not move the player."""
    clear_around(s, i)
    s["map"][i, CENTRE, CENTRE - 1] = WATER
    s["map"][i, CENTRE, CENTRE + 1] = TREE
    s["map"][i, CENTRE + 1, CENTRE] = STONE
    give(s, i, wood=5, stone=1, sapling=2, wood_pickaxe=1)


PLACE_ACTIONS = [
    LEFT,  # faces the water
    PLACE_TABLE,  # water is solid: no
    PLACE_STONE,  # onto water
    PLACE_TABLE,  # stone is solid: no
    DO,  # mines it back
    PLACE_TABLE,
    RIGHT,  # faces the tree
    PLACE_FURNACE,  # solid: no
    DO,  # wood
    PLACE_FURNACE,
    DOWN,  # faces the stone
    DO,
    PLACE_PLANT,  # path, not grass: no
    UP,  # moves up
    PLACE_PLANT,
    DO,  # a sapling is no target
    PLACE_STONE,  # a sapling is solid: no
    PLACE_PLANT,  # no
]


def _saplings(s, i):
    clear_around(s, i)
    s["player_direction"][i] = LEFT


SAPLING_ACTIONS = [DO] * 40 + [PLACE_PLANT, DO, DO]


def _fight_zombie(s, i):
    clear_around(s, i)
    s["player_direction"][i] = LEFT
    put_mob(s, i, "zombies", 1, (CENTRE, CENTRE - 1), 5, cooldown=2)
    give(s, i, wood_sword=1)


def _pen(s, i, pos) -> None:
    """Stone on the three sides of `pos` away from the player (left of it)."""
    x, y = pos
    s["map"][i, x - 1, y] = s["map"][i, x + 1, y] = s["map"][i, x, y - 1] = STONE


def _fight_cow(s, i):
    clear_around(s, i)
    s["player_direction"][i] = LEFT
    s["player_food"][i] = 2
    s["player_hunger"][i] = 12.5
    _pen(s, i, (CENTRE, CENTRE - 1))
    put_mob(s, i, "cows", 2, (CENTRE, CENTRE - 1), 3)


def _fight_skeleton(s, i):
    clear_around(s, i, block=PATH)
    s["player_direction"][i] = LEFT
    _pen(s, i, (CENTRE, CENTRE - 1))
    put_mob(s, i, "skeletons", 1, (CENTRE, CENTRE - 1), 3)
    give(s, i, wood_sword=1)


def _skeleton_tunnel(s, i):
    clear_around(s, i, radius=8, block=STONE)
    s["map"][i, CENTRE, CENTRE - 8 : CENTRE + 1] = PATH
    s["map"][i, CENTRE, CENTRE - 2] = TABLE
    put_mob(s, i, "skeletons", 0, (CENTRE, CENTRE - 5), 3)
    put_mob(s, i, "skeletons", 1, (CENTRE, CENTRE - 7), 3, cooldown=3)
    s["player_direction"][i] = LEFT
    give(s, i, stone_sword=1, wood=4)


SKELETON_ACTIONS = [NOOP] * 8 + [PLACE_TABLE, NOOP, NOOP, NOOP, LEFT, LEFT, DO, DO, DO, LEFT, DO, DO]


def _sleep_through_night(s, i):
    s["player_energy"][i] = 1
    s["player_fatigue"][i] = 0.0
    s["timestep"][i] = 170


def _woken_by_zombie(s, i):
    clear_around(s, i)
    s["is_sleeping"][i] = True
    s["player_energy"][i] = 3
    put_mob(s, i, "zombies", 0, (CENTRE + 1, CENTRE), 5)


def _starving(s, i):
    s["player_health"][i] = 1
    s["player_food"][i] = 0
    s["player_drink"][i] = 0
    s["player_recover"][i] = -14.0
    s["player_hunger"][i] = 25.0
    s["player_thirst"][i] = 20.0


def _lava(s, i):
    clear_around(s, i)
    s["map"][i, CENTRE, CENTRE - 1] = LAVA


def _time_limit(s, i):
    s["timestep"][i] = 9995


def _ripe_plant(s, i):
    clear_around(s, i)
    s["map"][i, CENTRE, CENTRE - 1] = PLANT
    s["player_direction"][i] = LEFT
    s["growing_plants_positions"][i, 3] = (CENTRE, CENTRE - 1)
    s["growing_plants_age"][i, 3] = 597
    s["growing_plants_mask"][i, 3] = True
    s["player_food"][i] = 4


def _mining(s, i):
    clear_around(s, i)
    for k, block in enumerate((STONE, COAL, IRON, DIAMOND)):
        s["map"][i, CENTRE, CENTRE - 1 - k] = block
    s["map"][i, CENTRE - 1, CENTRE - 4] = WATER  # above the last ore's cell
    s["player_direction"][i] = LEFT
    s["player_drink"][i] = 3
    give(s, i, wood_pickaxe=1, stone_pickaxe=1, iron_pickaxe=1)


# mine, step into the mined cell, mine the next; then face the water and drink
MINING_ACTIONS = [DO, DO, LEFT, DO, LEFT, DO, LEFT, DO, LEFT, UP, DO, DO, DO]


def _edge_wrap(s, i):
    """The player on the top edge facing off the map, lava at the opposite edge: DO and
    placing there are gated off, but moving up reads the wrapped cell and steps off-map."""
    s["player_position"][i] = (0, 20)
    s["map"][i, 0:3, 17:24] = GRASS
    s["map"][i, 63, 20] = LAVA
    s["player_direction"][i] = UP
    give(s, i, wood=9, stone=3)


EDGE_ACTIONS = [DO, PLACE_TABLE, PLACE_STONE, LEFT, RIGHT, UP]


def _arrow_wraps_table(s, i):
    """A living arrow flying off the left edge (y = -1) reads and writes column 63: a table
    there turns into path."""
    s["arrows.position"][i, 0] = (10, 0)
    s["arrows.mask"][i, 0] = True
    s["arrow_directions"][i, 0] = (0, -1)
    s["map"][i, 10, 63] = TABLE


SCENARIOS = (
    ("crafting", _crafting, CRAFT_ACTIONS),
    ("crafting-without-table", _crafting_without_table, CRAFT_ACTIONS),
    ("placing", _placing, PLACE_ACTIONS),
    ("fight-zombie", _fight_zombie, [DO] * 6),
    ("fight-cow", _fight_cow, [DO] * 4),
    ("fight-skeleton", _fight_skeleton, [DO] * 4),
    ("saplings", _saplings, SAPLING_ACTIONS),
    ("skeleton-tunnel", _skeleton_tunnel, SKELETON_ACTIONS),
    ("sleep-through-night", _sleep_through_night, [SLEEP] * 3),
    ("woken-by-zombie", _woken_by_zombie, [SLEEP]),
    ("starving", _starving, []),
    ("lava", _lava, [LEFT]),
    ("time-limit", _time_limit, []),
    ("ripe-plant", _ripe_plant, [NOOP, NOOP, NOOP, DO, DO, NOOP, DO]),
    ("mining", _mining, MINING_ACTIONS),
    ("edge-wrap", _edge_wrap, EDGE_ACTIONS),
    ("arrow-wraps-table", _arrow_wraps_table, []),
)


def scenario_batch(reset_state: dict, num_steps: int, seed: int):
    """Env i of the batch runs scenario i (reset_state must hold len(SCENARIOS) envs): the
    edited state dict and the actions [num_steps, N] (script, then NOOP)."""
    s = {k: v.copy() for k, v in reset_state.items()}
    n = len(SCENARIOS)
    actions = np.zeros((num_steps, n), dtype=np.int32)
    for i, (_, edit, script) in enumerate(SCENARIOS):
        edit(s, i)
        actions[: len(script), i] = script[:num_steps]
    return s, actions


def biased_actions(rng: np.random.Generator, num_steps: int, n: int) -> np.ndarray:
    """Random actions, DO a third of the time (attacks, mining and eating need it)."""
    actions = rng.integers(0, 17, size=(num_steps, n)).astype(np.int32)
    actions[rng.random((num_steps, n)) < 0.3] = DO
    return actions
