/* craftax_classic/constants.h: enums and sizes of Craftax-Classic.
 * Upstream: craftax 1.6.1, craftax/craftax_classic/constants.py and envs/craftax_state.py
 * (StaticEnvParams defaults). Block ids 0..16 are the full game's (craftax/constants.h:
 * BLOCK_*, the same values), so the classic rules use those names; actions and
 * achievements are Classic's own.
 */
#ifndef CRAFTAX_CLASSIC_CONSTANTS_H
#define CRAFTAX_CLASSIC_CONSTANTS_H

#include "craftax/constants.h"

enum {
    CRAFTAX_CLASSIC_MAP_SIZE = 64,
    CRAFTAX_CLASSIC_CELLS = 64 * 64,
    CRAFTAX_CLASSIC_MAX_ZOMBIES = 3,
    CRAFTAX_CLASSIC_MAX_COWS = 3,
    CRAFTAX_CLASSIC_MAX_GROWING_PLANTS = 10,
    CRAFTAX_CLASSIC_MAX_SKELETONS = 2,
    CRAFTAX_CLASSIC_MAX_ARROWS = 3,
    CRAFTAX_CLASSIC_NUM_BLOCK_TYPES = 17,
    CRAFTAX_CLASSIC_NUM_ACTIONS = 17,
    CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS = 22,
    CRAFTAX_CLASSIC_OBS_ROWS = 7,
    CRAFTAX_CLASSIC_OBS_COLS = 9,
    CRAFTAX_CLASSIC_OBS_CHANNELS = 17 + 4, /* block one-hot, then zombie, cow, skeleton, arrow */
    CRAFTAX_CLASSIC_OBS_MAP_SIZE = 7 * 9 * 21,
    CRAFTAX_CLASSIC_OBS_SIZE = 7 * 9 * 21 + 12 + 4 + 4 + 2,
};

typedef enum {
    CLASSIC_ACTION_NOOP = 0,
    CLASSIC_ACTION_LEFT = 1,
    CLASSIC_ACTION_RIGHT = 2,
    CLASSIC_ACTION_UP = 3,
    CLASSIC_ACTION_DOWN = 4,
    CLASSIC_ACTION_DO = 5,
    CLASSIC_ACTION_SLEEP = 6,
    CLASSIC_ACTION_PLACE_STONE = 7,
    CLASSIC_ACTION_PLACE_TABLE = 8,
    CLASSIC_ACTION_PLACE_FURNACE = 9,
    CLASSIC_ACTION_PLACE_PLANT = 10,
    CLASSIC_ACTION_MAKE_WOOD_PICKAXE = 11,
    CLASSIC_ACTION_MAKE_STONE_PICKAXE = 12,
    CLASSIC_ACTION_MAKE_IRON_PICKAXE = 13,
    CLASSIC_ACTION_MAKE_WOOD_SWORD = 14,
    CLASSIC_ACTION_MAKE_STONE_SWORD = 15,
    CLASSIC_ACTION_MAKE_IRON_SWORD = 16,
} CraftaxClassicAction;

typedef enum {
    CLASSIC_ACH_COLLECT_WOOD = 0,
    CLASSIC_ACH_PLACE_TABLE = 1,
    CLASSIC_ACH_EAT_COW = 2,
    CLASSIC_ACH_COLLECT_SAPLING = 3,
    CLASSIC_ACH_COLLECT_DRINK = 4,
    CLASSIC_ACH_MAKE_WOOD_PICKAXE = 5,
    CLASSIC_ACH_MAKE_WOOD_SWORD = 6,
    CLASSIC_ACH_PLACE_PLANT = 7,
    CLASSIC_ACH_DEFEAT_ZOMBIE = 8,
    CLASSIC_ACH_COLLECT_STONE = 9,
    CLASSIC_ACH_PLACE_STONE = 10,
    CLASSIC_ACH_EAT_PLANT = 11,
    CLASSIC_ACH_DEFEAT_SKELETON = 12,
    CLASSIC_ACH_MAKE_STONE_PICKAXE = 13,
    CLASSIC_ACH_MAKE_STONE_SWORD = 14,
    CLASSIC_ACH_WAKE_UP = 15,
    CLASSIC_ACH_PLACE_FURNACE = 16,
    CLASSIC_ACH_COLLECT_COAL = 17,
    CLASSIC_ACH_COLLECT_IRON = 18,
    CLASSIC_ACH_COLLECT_DIAMOND = 19,
    CLASSIC_ACH_MAKE_IRON_PICKAXE = 20,
    CLASSIC_ACH_MAKE_IRON_SWORD = 21,
} CraftaxClassicAchievement;

/* DIRECTIONS: 16 rows, rows 5..15 zero (a gather of row 16, MAKE_IRON_SWORD, clamps to 15). */
static CRAFTAX_CONST int32_t CRAFTAX_CLASSIC_DIRECTIONS[16][2] = {
    {0, 0}, {0, -1}, {0, 1}, {-1, 0}, {1, 0}, {0, 0}, {0, 0}, {0, 0},
    {0, 0}, {0, 0},  {0, 0}, {0, 0},  {0, 0}, {0, 0}, {0, 0}, {0, 0},
};

static CRAFTAX_CONST int32_t CRAFTAX_CLASSIC_CLOSE_BLOCKS[8][2] = {
    {0, -1}, {0, 1}, {-1, 0}, {1, 0}, {-1, -1}, {-1, 1}, {1, -1}, {1, 1},
};

/* SOLID_BLOCKS: water, stone, tree, coal, iron, diamond, table, furnace, plant, ripe plant. */
static inline CRAFTAX_HD int craftax_classic_is_solid_block(int32_t block) {
    return block == BLOCK_WATER || block == BLOCK_STONE || block == BLOCK_TREE || block == BLOCK_COAL ||
           block == BLOCK_IRON || block == BLOCK_DIAMOND || block == BLOCK_CRAFTING_TABLE || block == BLOCK_FURNACE ||
           block == BLOCK_PLANT || block == BLOCK_RIPE_PLANT;
}

#endif
