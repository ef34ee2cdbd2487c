"""The achievements of full Craftax (67) and Craftax-Classic (22): (lower-case name, index
into state.achievements), in upstream's `constants.Achievement` enum order (which for full
Craftax is not index order; craftax 1.6.1)."""

from __future__ import annotations

ACHIEVEMENTS: tuple[tuple[str, int], ...] = (
    ("collect_wood", 0), ("place_table", 1), ("eat_cow", 2), ("collect_sapling", 3), ("collect_drink", 4),
    ("make_wood_pickaxe", 5), ("make_wood_sword", 6), ("place_plant", 7), ("defeat_zombie", 8),
    ("collect_stone", 9), ("place_stone", 10), ("eat_plant", 11), ("defeat_skeleton", 12),
    ("make_stone_pickaxe", 13), ("make_stone_sword", 14), ("wake_up", 15), ("place_furnace", 16),
    ("collect_coal", 17), ("collect_iron", 18), ("collect_diamond", 19), ("make_iron_pickaxe", 20),
    ("make_iron_sword", 21), ("make_arrow", 22), ("make_torch", 23), ("place_torch", 24),
    ("collect_sapphire", 54), ("collect_ruby", 59), ("make_diamond_pickaxe", 60), ("make_diamond_sword", 25),
    ("make_iron_armour", 26), ("make_diamond_armour", 27), ("enter_gnomish_mines", 28), ("enter_dungeon", 29),
    ("enter_sewers", 30), ("enter_vault", 31), ("enter_troll_mines", 32), ("enter_fire_realm", 33),
    ("enter_ice_realm", 34), ("enter_graveyard", 35), ("defeat_gnome_warrior", 36), ("defeat_gnome_archer", 37),
    ("defeat_orc_solider", 38), ("defeat_orc_mage", 39), ("defeat_lizard", 40), ("defeat_kobold", 41),
    ("defeat_knight", 65), ("defeat_archer", 66), ("defeat_troll", 42), ("defeat_deep_thing", 43),
    ("defeat_pigman", 44), ("defeat_fire_elemental", 45), ("defeat_frost_troll", 46),
    ("defeat_ice_elemental", 47), ("damage_necromancer", 48), ("defeat_necromancer", 49), ("eat_bat", 50),
    ("eat_snail", 51), ("find_bow", 52), ("fire_bow", 53), ("learn_fireball", 55), ("cast_fireball", 56),
    ("learn_iceball", 57), ("cast_iceball", 58), ("open_chest", 61), ("drink_potion", 62),
    ("enchant_sword", 63), ("enchant_armour", 64),
)
NUM_ACHIEVEMENTS = 67
# name by index into state.achievements
NAMES_BY_INDEX: tuple[str, ...] = tuple(name for name, _ in sorted(ACHIEVEMENTS, key=lambda a: a[1]))

# craftax_classic/constants.py's Achievement enum, whose order is index order
CLASSIC_NAMES_BY_INDEX: tuple[str, ...] = (
    "collect_wood", "place_table", "eat_cow", "collect_sapling", "collect_drink", "make_wood_pickaxe",
    "make_wood_sword", "place_plant", "defeat_zombie", "collect_stone", "place_stone", "eat_plant",
    "defeat_skeleton", "make_stone_pickaxe", "make_stone_sword", "wake_up", "place_furnace", "collect_coal",
    "collect_iron", "collect_diamond", "make_iron_pickaxe", "make_iron_sword",
)
CLASSIC_ACHIEVEMENTS: tuple[tuple[str, int], ...] = tuple((name, i) for i, name in enumerate(CLASSIC_NAMES_BY_INDEX))
NUM_CLASSIC_ACHIEVEMENTS = 22


def names_by_index(env_id: str) -> tuple[str, ...]:
    """The achievement names of an env id, by index into its state.achievements."""
    from pycraftax.params import CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID

    return CLASSIC_NAMES_BY_INDEX if env_id in (CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID) else NAMES_BY_INDEX


def log_achievements_to_info(achievements, done, table=ACHIEVEMENTS) -> dict:
    """envs/common.py:log_achievements_to_info for a batch: achievements bool [N, len(table)],
    done bool [N] -> {"Achievements/<name>": float32 [N] = achievements[:, i] * done * 100}.
    table: ACHIEVEMENTS (full Craftax) or CLASSIC_ACHIEVEMENTS."""
    import numpy as np

    scaled = achievements.astype(np.float32) * done.astype(np.float32)[:, None] * np.float32(100.0)
    return {f"Achievements/{name}": scaled[:, index] for name, index in table}
