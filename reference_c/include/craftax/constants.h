/* craftax/constants.h: enums and tables of the game.
 * Upstream: craftax 1.6.1, craftax/craftax/constants.py and world_gen/world_gen_configs.py.
 * Values are copied from there; names keep upstream's spelling.
 */
#ifndef CRAFTAX_CONSTANTS_H
#define CRAFTAX_CONSTANTS_H

#include "common.h"

enum {
    CRAFTAX_MAP_SIZE = 48,
    CRAFTAX_NUM_LEVELS = 9,
    CRAFTAX_MAX_MELEE_MOBS = 3,
    CRAFTAX_MAX_PASSIVE_MOBS = 3,
    CRAFTAX_MAX_RANGED_MOBS = 2,
    CRAFTAX_MAX_MOB_PROJECTILES = 3,
    CRAFTAX_MAX_PLAYER_PROJECTILES = 3,
    CRAFTAX_MAX_GROWING_PLANTS = 10,
    CRAFTAX_NUM_ACHIEVEMENTS = 67,
    CRAFTAX_NUM_ACTIONS = 43,
    CRAFTAX_NUM_BLOCK_TYPES = 37,
    CRAFTAX_NUM_ITEM_TYPES = 5,
    CRAFTAX_NUM_MOB_CLASSES = 5, /* in the obs: melee, passive, ranged, mob and player projectiles */
    CRAFTAX_NUM_MOB_TYPES = 8,
    CRAFTAX_OBS_ROWS = 9,
    CRAFTAX_OBS_COLS = 11,
    CRAFTAX_OBS_CHANNELS = 37 + 5 + 40 + 1,
    CRAFTAX_OBS_MAP_SIZE = 9 * 11 * 83,
    CRAFTAX_OBS_SIZE = 9 * 11 * 83 + 51,
    CRAFTAX_MONSTERS_KILLED_TO_CLEAR_LEVEL = 8,
    CRAFTAX_BOSS_FIGHT_SPAWN_TURNS = 7,
};

typedef enum {
    BLOCK_INVALID = 0,
    BLOCK_OUT_OF_BOUNDS = 1,
    BLOCK_GRASS = 2,
    BLOCK_WATER = 3,
    BLOCK_STONE = 4,
    BLOCK_TREE = 5,
    BLOCK_WOOD = 6,
    BLOCK_PATH = 7,
    BLOCK_COAL = 8,
    BLOCK_IRON = 9,
    BLOCK_DIAMOND = 10,
    BLOCK_CRAFTING_TABLE = 11,
    BLOCK_FURNACE = 12,
    BLOCK_SAND = 13,
    BLOCK_LAVA = 14,
    BLOCK_PLANT = 15,
    BLOCK_RIPE_PLANT = 16,
    BLOCK_WALL = 17,
    BLOCK_DARKNESS = 18,
    BLOCK_WALL_MOSS = 19,
    BLOCK_STALAGMITE = 20,
    BLOCK_SAPPHIRE = 21,
    BLOCK_RUBY = 22,
    BLOCK_CHEST = 23,
    BLOCK_FOUNTAIN = 24,
    BLOCK_FIRE_GRASS = 25,
    BLOCK_ICE_GRASS = 26,
    BLOCK_GRAVEL = 27,
    BLOCK_FIRE_TREE = 28,
    BLOCK_ICE_SHRUB = 29,
    BLOCK_ENCHANTMENT_TABLE_FIRE = 30,
    BLOCK_ENCHANTMENT_TABLE_ICE = 31,
    BLOCK_NECROMANCER = 32,
    BLOCK_GRAVE = 33,
    BLOCK_GRAVE2 = 34,
    BLOCK_GRAVE3 = 35,
    BLOCK_NECROMANCER_VULNERABLE = 36,
} CraftaxBlockType;

typedef enum {
    ITEM_NONE = 0,
    ITEM_TORCH = 1,
    ITEM_LADDER_DOWN = 2,
    ITEM_LADDER_UP = 3,
    ITEM_LADDER_DOWN_BLOCKED = 4,
} CraftaxItemType;

typedef enum {
    ACTION_NOOP = 0,
    ACTION_LEFT = 1,
    ACTION_RIGHT = 2,
    ACTION_UP = 3,
    ACTION_DOWN = 4,
    ACTION_DO = 5,
    ACTION_SLEEP = 6,
    ACTION_PLACE_STONE = 7,
    ACTION_PLACE_TABLE = 8,
    ACTION_PLACE_FURNACE = 9,
    ACTION_PLACE_PLANT = 10,
    ACTION_MAKE_WOOD_PICKAXE = 11,
    ACTION_MAKE_STONE_PICKAXE = 12,
    ACTION_MAKE_IRON_PICKAXE = 13,
    ACTION_MAKE_WOOD_SWORD = 14,
    ACTION_MAKE_STONE_SWORD = 15,
    ACTION_MAKE_IRON_SWORD = 16,
    ACTION_REST = 17,
    ACTION_DESCEND = 18,
    ACTION_ASCEND = 19,
    ACTION_MAKE_DIAMOND_PICKAXE = 20,
    ACTION_MAKE_DIAMOND_SWORD = 21,
    ACTION_MAKE_IRON_ARMOUR = 22,
    ACTION_MAKE_DIAMOND_ARMOUR = 23,
    ACTION_SHOOT_ARROW = 24,
    ACTION_MAKE_ARROW = 25,
    ACTION_CAST_FIREBALL = 26,
    ACTION_CAST_ICEBALL = 27,
    ACTION_PLACE_TORCH = 28,
    ACTION_DRINK_POTION_RED = 29,
    ACTION_DRINK_POTION_GREEN = 30,
    ACTION_DRINK_POTION_BLUE = 31,
    ACTION_DRINK_POTION_PINK = 32,
    ACTION_DRINK_POTION_CYAN = 33,
    ACTION_DRINK_POTION_YELLOW = 34,
    ACTION_READ_BOOK = 35,
    ACTION_ENCHANT_SWORD = 36,
    ACTION_ENCHANT_ARMOUR = 37,
    ACTION_MAKE_TORCH = 38,
    ACTION_LEVEL_UP_DEXTERITY = 39,
    ACTION_LEVEL_UP_STRENGTH = 40,
    ACTION_LEVEL_UP_INTELLIGENCE = 41,
    ACTION_ENCHANT_BOW = 42,
} CraftaxAction;

/* TORCH_LIGHT_MAP = clip(1 - dist/5, 0, 1) on a 9x9 grid centred at (4,4). Upstream computes
 * it eagerly with jnp at import time; its division rounds differently from any single C
 * expression we tried (e.g. (1 - sqrt(2)/5) gives 0x1.6f2f3ep-1, upstream 0x1.6f2f3cp-1),
 * so the 81 float32 values are copied bit for bit from the installed package
 * (checked by conformance/test_constants.py). */
#define CRAFTAX_TL0 0.0f
#define CRAFTAX_TL_A 0x1.b06d10p-4f /* dist sqrt(20) */
#define CRAFTAX_TL_B 0x1.672d08p-3f /* sqrt(17) */
#define CRAFTAX_TL_C 0x1.999998p-3f /* 4 */
#define CRAFTAX_TL_D 0x1.3636e8p-3f /* sqrt(18) */
#define CRAFTAX_TL_E 0x1.1d9544p-2f /* sqrt(13) */
#define CRAFTAX_TL_F 0x1.785d94p-2f /* sqrt(10) */
#define CRAFTAX_TL_G 0x1.999998p-2f /* 3 */
#define CRAFTAX_TL_H 0x1.bcbcf4p-2f /* sqrt(8) */
#define CRAFTAX_TL_I 0x1.1b06d0p-1f /* sqrt(5) */
#define CRAFTAX_TL_J 0x1.333334p-1f /* 2 */
#define CRAFTAX_TL_K 0x1.6f2f3cp-1f /* sqrt(2) */
#define CRAFTAX_TL_L 0x1.99999ap-1f /* 1 */
static CRAFTAX_CONST float CRAFTAX_TORCH_LIGHT_MAP[9][9] = {
    {CRAFTAX_TL0, CRAFTAX_TL0, CRAFTAX_TL_A, CRAFTAX_TL_B, CRAFTAX_TL_C, CRAFTAX_TL_B, CRAFTAX_TL_A, CRAFTAX_TL0, CRAFTAX_TL0},
    {CRAFTAX_TL0, CRAFTAX_TL_D, CRAFTAX_TL_E, CRAFTAX_TL_F, CRAFTAX_TL_G, CRAFTAX_TL_F, CRAFTAX_TL_E, CRAFTAX_TL_D, CRAFTAX_TL0},
    {CRAFTAX_TL_A, CRAFTAX_TL_E, CRAFTAX_TL_H, CRAFTAX_TL_I, CRAFTAX_TL_J, CRAFTAX_TL_I, CRAFTAX_TL_H, CRAFTAX_TL_E, CRAFTAX_TL_A},
    {CRAFTAX_TL_B, CRAFTAX_TL_F, CRAFTAX_TL_I, CRAFTAX_TL_K, CRAFTAX_TL_L, CRAFTAX_TL_K, CRAFTAX_TL_I, CRAFTAX_TL_F, CRAFTAX_TL_B},
    {CRAFTAX_TL_C, CRAFTAX_TL_G, CRAFTAX_TL_J, CRAFTAX_TL_L, 1.0f, CRAFTAX_TL_L, CRAFTAX_TL_J, CRAFTAX_TL_G, CRAFTAX_TL_C},
    {CRAFTAX_TL_B, CRAFTAX_TL_F, CRAFTAX_TL_I, CRAFTAX_TL_K, CRAFTAX_TL_L, CRAFTAX_TL_K, CRAFTAX_TL_I, CRAFTAX_TL_F, CRAFTAX_TL_B},
    {CRAFTAX_TL_A, CRAFTAX_TL_E, CRAFTAX_TL_H, CRAFTAX_TL_I, CRAFTAX_TL_J, CRAFTAX_TL_I, CRAFTAX_TL_H, CRAFTAX_TL_E, CRAFTAX_TL_A},
    {CRAFTAX_TL0, CRAFTAX_TL_D, CRAFTAX_TL_E, CRAFTAX_TL_F, CRAFTAX_TL_G, CRAFTAX_TL_F, CRAFTAX_TL_E, CRAFTAX_TL_D, CRAFTAX_TL0},
    {CRAFTAX_TL0, CRAFTAX_TL0, CRAFTAX_TL_A, CRAFTAX_TL_B, CRAFTAX_TL_C, CRAFTAX_TL_B, CRAFTAX_TL_A, CRAFTAX_TL0, CRAFTAX_TL0},
};

/* world_gen_configs.py: SmoothGenConfig. Integer-valued fields of upstream are stacked
 * by tree_map into int32 arrays, float fields into float32 arrays: the thresholds below
 * are therefore float32 constants. */
typedef struct {
    uint8_t default_block, sea_block, coast_block, mountain_block, path_block, inner_mountain_block;
    uint8_t ore_requirement_blocks[5];
    uint8_t ores[5];
    float ore_chances[5];
    uint8_t tree_requirement_block, tree, lava, player_spawn, valid_ladder;
    uint8_t ladder_up, ladder_down;
    int32_t water_strength;  /* player_proximity_map_water_strength */
    float water_max;         /* player_proximity_map_water_max */
    int32_t mountain_strength;
    float mountain_max;
    float default_light, water_threshold, sand_threshold, tree_threshold_uniform, tree_threshold_perlin;
} CraftaxSmoothGenConfig;

/* Order of ALL_SMOOTHGEN_CONFIGS: overworld, gnomish mines, troll mines, fire, ice, boss. */
static CRAFTAX_CONST CraftaxSmoothGenConfig CRAFTAX_SMOOTHGEN_CONFIGS[6] = {
    {BLOCK_GRASS, BLOCK_WATER, BLOCK_SAND, BLOCK_STONE, BLOCK_PATH, BLOCK_PATH,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_OUT_OF_BOUNDS, BLOCK_OUT_OF_BOUNDS},
     {0.03f, 0.02f, 0.001f, 0.0f, 0.0f},
     BLOCK_GRASS, BLOCK_TREE, BLOCK_LAVA, BLOCK_GRASS, BLOCK_PATH, 0, 1,
     5, 1.0f, 5, 1.0f, 1.0f, 0.7f, 0.6f, 0.8f, 0.5f},
    {BLOCK_PATH, BLOCK_WATER, BLOCK_PATH, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.04f, 0.02f, 0.005f, 0.0025f, 0.0025f},
     BLOCK_PATH, BLOCK_STALAGMITE, BLOCK_LAVA, BLOCK_PATH, BLOCK_PATH, 1, 1,
     5, 1.0f, 17, 1.5f, 0.0f, 0.7f, 0.6f, 0.8f, 0.5f},
    {BLOCK_PATH, BLOCK_WATER, BLOCK_PATH, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.04f, 0.03f, 0.01f, 0.01f, 0.01f},
     BLOCK_PATH, BLOCK_STALAGMITE, BLOCK_LAVA, BLOCK_PATH, BLOCK_PATH, 1, 1,
     5, 1.0f, 17, 1.5f, 0.0f, 0.7f, 0.6f, 0.8f, 0.5f},
    {BLOCK_FIRE_GRASS, BLOCK_LAVA, BLOCK_SAND, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.05f, 0.0f, 0.0f, 0.0f, 0.025f},
     BLOCK_FIRE_GRASS, BLOCK_FIRE_TREE, BLOCK_LAVA, BLOCK_FIRE_GRASS, BLOCK_FIRE_GRASS, 1, 1,
     5, 1.0f, 5, 1.0f, 1.0f, 0.5f, 0.6f, 0.8f, 0.5f},
    {BLOCK_ICE_GRASS, BLOCK_WATER, BLOCK_ICE_GRASS, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.0f, 0.0f, 0.005f, 0.02f, 0.0f},
     BLOCK_ICE_GRASS, BLOCK_ICE_SHRUB, BLOCK_WATER, BLOCK_ICE_GRASS, BLOCK_ICE_GRASS, 1, 1,
     5, 1.0f, 17, 1.5f, 0.0f, 0.5f, 0.6f, 0.4f, 0.5f},
    {BLOCK_PATH, BLOCK_PATH, BLOCK_PATH, BLOCK_WALL, BLOCK_WALL, BLOCK_WALL,
     {BLOCK_WALL, BLOCK_GRAVE, BLOCK_GRAVE, BLOCK_WALL, BLOCK_WALL},
     {BLOCK_WALL_MOSS, BLOCK_GRAVE2, BLOCK_GRAVE3, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.1f, 0.333f, 0.5f, 0.0f, 0.0f},
     BLOCK_PATH, BLOCK_GRAVE, BLOCK_WALL, BLOCK_NECROMANCER, BLOCK_PATH, 0, 0,
     5, 1.0f, 10, 10.0f, 0.0f, 0.7f, 0.6f, 0.95f, -1.0f},
};

/* world_gen_configs.py: DungeonConfig, order dungeon, sewer, vaults. */
typedef struct {
    uint8_t special_block, fountain_block, rare_path_replacement_block;
} CraftaxDungeonConfig;

static CRAFTAX_CONST CraftaxDungeonConfig CRAFTAX_DUNGEON_CONFIGS[3] = {
    {BLOCK_PATH, BLOCK_FOUNTAIN, BLOCK_PATH},
    {BLOCK_ENCHANTMENT_TABLE_ICE, BLOCK_WATER, BLOCK_WATER},
    {BLOCK_ENCHANTMENT_TABLE_FIRE, BLOCK_FOUNTAIN, BLOCK_PATH},
};

/* Level index of each generated floor: generate_world stacks
 * (smooth0, dungeon0, smooth1, dungeon1, dungeon2, smooth2, smooth3, smooth4, smooth5). */
static CRAFTAX_CONST int8_t CRAFTAX_SMOOTH_LEVEL[6] = {0, 2, 5, 6, 7, 8};
static CRAFTAX_CONST int8_t CRAFTAX_DUNGEON_LEVEL[3] = {1, 3, 4};

#endif
