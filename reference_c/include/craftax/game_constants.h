/* craftax/game_constants.h: the tables of craftax 1.6.1 craftax/craftax/constants.py that
 * craftax_step needs (mob tables, directions, block masks, achievements). Generated from the
 * installed package's jnp arrays (float32 values as hex literals, bit for bit) and checked by
 * conformance/test_step_player.py::test_game_constants. TORCH_LIGHT_MAP lives in constants.h.
 */
#ifndef CRAFTAX_GAME_CONSTANTS_H
#define CRAFTAX_GAME_CONSTANTS_H

#include "constants.h"

enum {
    CRAFTAX_BOSS_LEVEL = 8,      /* static_params.num_levels - 1 */
    CRAFTAX_INVENTORY_CAP = 99,  /* clip_inventory_and_intrinsics */
};
/* MONSTERS_KILLED_TO_CLEAR_LEVEL (8) and BOSS_FIGHT_SPAWN_TURNS (7) are in constants.h. */
#define CRAFTAX_BOSS_FIGHT_EXTRA_DAMAGE 0.5f /* BOSS_FIGHT_EXTRA_DAMAGE */

/* constants.py: MobType (the class index of the mob tables). */
typedef enum {
    MOB_CLASS_PASSIVE = 0,
    MOB_CLASS_MELEE = 1,
    MOB_CLASS_RANGED = 2,
    MOB_CLASS_PROJECTILE = 3,
} CraftaxMobClass;

/* constants.py: ProjectileType. */
typedef enum {
    PROJECTILE_ARROW = 0,
    PROJECTILE_DAGGER = 1,
    PROJECTILE_FIREBALL = 2,
    PROJECTILE_ICEBALL = 3,
    PROJECTILE_ARROW2 = 4,
    PROJECTILE_SLIMEBALL = 5,
    PROJECTILE_FIREBALL2 = 6,
    PROJECTILE_ICEBALL2 = 7,
} CraftaxProjectileType;

/* constants.py: Achievement (upstream order kept; values are not sorted). */
typedef enum {
    ACH_COLLECT_WOOD = 0,
    ACH_PLACE_TABLE = 1,
    ACH_EAT_COW = 2,
    ACH_COLLECT_SAPLING = 3,
    ACH_COLLECT_DRINK = 4,
    ACH_MAKE_WOOD_PICKAXE = 5,
    ACH_MAKE_WOOD_SWORD = 6,
    ACH_PLACE_PLANT = 7,
    ACH_DEFEAT_ZOMBIE = 8,
    ACH_COLLECT_STONE = 9,
    ACH_PLACE_STONE = 10,
    ACH_EAT_PLANT = 11,
    ACH_DEFEAT_SKELETON = 12,
    ACH_MAKE_STONE_PICKAXE = 13,
    ACH_MAKE_STONE_SWORD = 14,
    ACH_WAKE_UP = 15,
    ACH_PLACE_FURNACE = 16,
    ACH_COLLECT_COAL = 17,
    ACH_COLLECT_IRON = 18,
    ACH_COLLECT_DIAMOND = 19,
    ACH_MAKE_IRON_PICKAXE = 20,
    ACH_MAKE_IRON_SWORD = 21,
    ACH_MAKE_ARROW = 22,
    ACH_MAKE_TORCH = 23,
    ACH_PLACE_TORCH = 24,
    ACH_COLLECT_SAPPHIRE = 54,
    ACH_COLLECT_RUBY = 59,
    ACH_MAKE_DIAMOND_PICKAXE = 60,
    ACH_MAKE_DIAMOND_SWORD = 25,
    ACH_MAKE_IRON_ARMOUR = 26,
    ACH_MAKE_DIAMOND_ARMOUR = 27,
    ACH_ENTER_GNOMISH_MINES = 28,
    ACH_ENTER_DUNGEON = 29,
    ACH_ENTER_SEWERS = 30,
    ACH_ENTER_VAULT = 31,
    ACH_ENTER_TROLL_MINES = 32,
    ACH_ENTER_FIRE_REALM = 33,
    ACH_ENTER_ICE_REALM = 34,
    ACH_ENTER_GRAVEYARD = 35,
    ACH_DEFEAT_GNOME_WARRIOR = 36,
    ACH_DEFEAT_GNOME_ARCHER = 37,
    ACH_DEFEAT_ORC_SOLIDER = 38,
    ACH_DEFEAT_ORC_MAGE = 39,
    ACH_DEFEAT_LIZARD = 40,
    ACH_DEFEAT_KOBOLD = 41,
    ACH_DEFEAT_KNIGHT = 65,
    ACH_DEFEAT_ARCHER = 66,
    ACH_DEFEAT_TROLL = 42,
    ACH_DEFEAT_DEEP_THING = 43,
    ACH_DEFEAT_PIGMAN = 44,
    ACH_DEFEAT_FIRE_ELEMENTAL = 45,
    ACH_DEFEAT_FROST_TROLL = 46,
    ACH_DEFEAT_ICE_ELEMENTAL = 47,
    ACH_DAMAGE_NECROMANCER = 48,
    ACH_DEFEAT_NECROMANCER = 49,
    ACH_EAT_BAT = 50,
    ACH_EAT_SNAIL = 51,
    ACH_FIND_BOW = 52,
    ACH_FIRE_BOW = 53,
    ACH_LEARN_FIREBALL = 55,
    ACH_CAST_FIREBALL = 56,
    ACH_LEARN_ICEBALL = 57,
    ACH_CAST_ICEBALL = 58,
    ACH_OPEN_CHEST = 61,
    ACH_DRINK_POTION = 62,
    ACH_ENCHANT_SWORD = 63,
    ACH_ENCHANT_ARMOUR = 64,
} CraftaxAchievement;

/* DIRECTIONS: row = action id 0..4, zeros after (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_DIRECTIONS[16][2] = {
    {0, 0},
    {0, -1},
    {0, 1},
    {-1, 0},
    {1, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
    {0, 0},
};

/* CLOSE_BLOCKS: the 8 neighbours, in scan order (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_CLOSE_BLOCKS[8][2] = {
    {0, -1},
    {0, 1},
    {-1, 0},
    {1, 0},
    {-1, -1},
    {-1, 1},
    {1, -1},
    {1, 1},
};

/* SOLID_BLOCK_MAPPING[block] (upstream dtype bool) */
static CRAFTAX_CONST uint8_t CRAFTAX_SOLID_BLOCK_MAPPING[37] = {0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0};

/* CAN_PLACE_ITEM_MAPPING[block] (upstream dtype bool) */
static CRAFTAX_CONST uint8_t CRAFTAX_CAN_PLACE_ITEM_MAPPING[37] = {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

/* FLOOR_MOB_MAPPING[floor][passive, melee, ranged] = mob type (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_FLOOR_MOB_MAPPING[9][3] = {
    {0, 0, 0},
    {2, 2, 2},
    {1, 1, 1},
    {2, 3, 3},
    {2, 4, 4},
    {1, 5, 5},
    {1, 6, 6},
    {1, 7, 7},
    {0, 0, 0},
};

/* FLOOR_MOB_SPAWN_CHANCE[floor][passive, melee, ranged, melee-at-night] (upstream dtype float32) */
static CRAFTAX_CONST float CRAFTAX_FLOOR_MOB_SPAWN_CHANCE[9][4] = {
    {0x1.99999ap-4f, 0x1.47ae14p-6f, 0x1.99999ap-5f, 0x1.99999ap-4f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0.0f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
    {0x1.99999ap-4f, 0x1.eb851ep-5f, 0x1.99999ap-5f, 0.0f},
};

/* MOB_TYPE_COLLISION_MAPPING[type][class][ground, water, lava] (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_MOB_TYPE_COLLISION_MAPPING[9][4][3] = {
    {
        {0, 1, 1},
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
    },
    {
        {0, 0, 0},
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 0, 1},
        {0, 1, 1},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 1, 1},
        {1, 0, 1},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
        {0, 0, 0},
    },
    {
        {0, 1, 1},
        {0, 1, 1},
        {0, 1, 1},
        {0, 0, 0},
    },
};

/* MOB_TYPE_DAMAGE_MAPPING[type][class][physical, fire, ice] (upstream dtype float32) */
static CRAFTAX_CONST float CRAFTAX_MOB_TYPE_DAMAGE_MAPPING[8][4][3] = {
    {
        {0.0f, 0.0f, 0.0f},
        {2.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {2.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {4.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {4.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {3.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 3.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {5.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 3.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {6.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {5.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {6.0f, 1.0f, 1.0f},
        {0.0f, 0.0f, 0.0f},
        {4.0f, 3.0f, 3.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {3.0f, 5.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {3.0f, 5.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {4.0f, 0.0f, 5.0f},
        {0.0f, 0.0f, 0.0f},
        {4.0f, 0.0f, 5.0f},
    },
};

/* MOB_TYPE_HEALTH_MAPPING[type][class] (upstream dtype float32) */
static CRAFTAX_CONST float CRAFTAX_MOB_TYPE_HEALTH_MAPPING[9][4] = {
    {3.0f, 5.0f, 3.0f, 0.0f},
    {4.0f, 7.0f, 5.0f, 0.0f},
    {6.0f, 9.0f, 6.0f, 0.0f},
    {8.0f, 11.0f, 8.0f, 0.0f},
    {0.0f, 12.0f, 12.0f, 0.0f},
    {0.0f, 20.0f, 4.0f, 0.0f},
    {0.0f, 20.0f, 14.0f, 0.0f},
    {0.0f, 24.0f, 16.0f, 0.0f},
    {0.0f, 0.0f, 0.0f, 0.0f},
};

/* MOB_TYPE_DEFENSE_MAPPING[type][class][physical, fire, ice] (upstream dtype float32) */
static CRAFTAX_CONST float CRAFTAX_MOB_TYPE_DEFENSE_MAPPING[9][4][3] = {
    {
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0x1.p-1f, 0.0f, 0.0f},
        {0x1.p-1f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0x1.99999ap-3f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0x1.ccccccp-1f, 1.0f, 0.0f},
        {0x1.ccccccp-1f, 1.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0x1.ccccccp-1f, 0.0f, 1.0f},
        {0x1.ccccccp-1f, 0.0f, 1.0f},
        {0.0f, 0.0f, 0.0f},
    },
    {
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
        {0.0f, 0.0f, 0.0f},
    },
};

/* RANGED_MOB_TYPE_TO_PROJECTILE_TYPE_MAPPING[ranged type] (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_RANGED_MOB_TYPE_TO_PROJECTILE_TYPE_MAPPING[8] = {0, 0, 2, 1, 4, 5, 6, 7};

/* ACHIEVEMENT_REWARD_MAP[achievement] (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_ACHIEVEMENT_REWARD_MAP[67] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 5, 5, 5, 8, 8, 8, 3, 3, 3, 3, 5, 5, 5, 5, 8, 8, 8, 8, 8, 8, 3, 3, 3, 3, 3, 5, 5, 5, 5, 3, 3, 3, 3, 5, 5, 5, 5};

/* LEVEL_ACHIEVEMENT_MAP[level] = ENTER_* achievement (0 for the overworld) (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_LEVEL_ACHIEVEMENT_MAP[9] = {0, 29, 28, 30, 31, 32, 33, 34, 35};

/* MOB_ACHIEVEMENT_MAP[class passive/melee/ranged][type] (upstream dtype int32) */
static CRAFTAX_CONST int32_t CRAFTAX_MOB_ACHIEVEMENT_MAP[3][8] = {
    {2, 50, 51, 0, 0, 0, 0, 0},
    {8, 36, 38, 40, 65, 42, 44, 46},
    {12, 37, 39, 41, 66, 43, 45, 47},
};

/* get_player_damage_vector: physical damage by sword level. */
static CRAFTAX_CONST int32_t CRAFTAX_SWORD_PHYSICAL_DAMAGE[5] = {1, 2, 3, 5, 8};

#endif
