/* craftax/state.h: the plain-old-data state of one full-Craftax env, and its params.
 * Upstream: craftax/craftax/craftax_state.py (EnvState, Inventory, Mobs, EnvParams,
 * StaticEnvParams). Every EnvState leaf is here with upstream's shape, except that the mob
 * leaves ([level][slot]...) are stored level by level (CraftaxLevelMobs); the leaf table
 * (craftax_leaf) gives their level stride. Storage types are fixed-width and as narrow as
 * the values allow (block ids in uint8, bools in uint8); the Python layer widens them to
 * upstream's dtypes (int32/bool) in get_state().
 */
#ifndef CRAFTAX_STATE_H
#define CRAFTAX_STATE_H

#include "constants.h"

typedef struct {
    int32_t wood, stone, coal, iron, diamond, sapling, pickaxe, sword, bow, arrows;
    int32_t armour[4];
    int32_t torches, ruby, sapphire;
    int32_t potions[6];
    int32_t books;
} CraftaxInventory;

/* One mob class on one level. Upstream's Mobs leaves are [level][slot] arrays; here each
 * level keeps all its classes together (CraftaxLevelMobs), because a step reads and writes
 * the mobs of one level only, and on a GPU the ~25 separate arrays it touched were as many
 * scattered cache lines per env. get/set_state see upstream's shapes through the leaf
 * table's level stride. */
#define CRAFTAX_DEFINE_MOBS(NAME, N) \
    typedef struct {                 \
        int32_t position[N][2];      \
        float health[N];             \
        int32_t attack_cooldown[N];  \
        int32_t type_id[N];          \
        uint8_t mask[N];             \
    } NAME;
CRAFTAX_DEFINE_MOBS(CraftaxMobs3, 3)
CRAFTAX_DEFINE_MOBS(CraftaxMobs2, 2)
#undef CRAFTAX_DEFINE_MOBS

typedef struct {
    CraftaxMobs3 melee_mobs;
    CraftaxMobs3 passive_mobs;
    CraftaxMobs2 ranged_mobs;
    CraftaxMobs3 mob_projectiles;
    int32_t mob_projectile_directions[CRAFTAX_MAX_MOB_PROJECTILES][2];
    CraftaxMobs3 player_projectiles;
    int32_t player_projectile_directions[CRAFTAX_MAX_PLAYER_PROJECTILES][2];
} CraftaxLevelMobs;

typedef struct {
    uint8_t map[CRAFTAX_NUM_LEVELS][CRAFTAX_MAP_SIZE][CRAFTAX_MAP_SIZE];
    uint8_t item_map[CRAFTAX_NUM_LEVELS][CRAFTAX_MAP_SIZE][CRAFTAX_MAP_SIZE];
    uint8_t mob_map[CRAFTAX_NUM_LEVELS][CRAFTAX_MAP_SIZE][CRAFTAX_MAP_SIZE];
    float light_map[CRAFTAX_NUM_LEVELS][CRAFTAX_MAP_SIZE][CRAFTAX_MAP_SIZE];
    int32_t down_ladders[CRAFTAX_NUM_LEVELS][2];
    int32_t up_ladders[CRAFTAX_NUM_LEVELS][2];
    uint8_t chests_opened[CRAFTAX_NUM_LEVELS];
    int32_t monsters_killed[CRAFTAX_NUM_LEVELS];

    int32_t player_position[2];
    int32_t player_level;
    int32_t player_direction;

    float player_health;
    int32_t player_food, player_drink, player_energy, player_mana;
    uint8_t is_sleeping, is_resting;

    float player_recover, player_hunger, player_thirst, player_fatigue, player_recover_mana;

    int32_t player_xp, player_dexterity, player_strength, player_intelligence;

    CraftaxInventory inventory;

    CraftaxLevelMobs mobs[CRAFTAX_NUM_LEVELS]; /* melee, passive, ranged, projectiles: see above */

    int32_t growing_plants_positions[CRAFTAX_MAX_GROWING_PLANTS][2];
    int32_t growing_plants_age[CRAFTAX_MAX_GROWING_PLANTS];
    uint8_t growing_plants_mask[CRAFTAX_MAX_GROWING_PLANTS];

    int32_t potion_mapping[6];
    uint8_t learned_spells[2];

    int32_t sword_enchantment, bow_enchantment;
    int32_t armour_enchantments[4];

    int32_t boss_progress;
    int32_t boss_timesteps_to_spawn_this_round;

    float light_level;

    uint8_t achievements[CRAFTAX_NUM_ACHIEVEMENTS];

    uint32_t state_rng[2];

    int32_t timestep;

    /* Not an EnvState leaf: the CUDA build's lazy floors. Bit l set: level l of this world is
     * still to be generated (generation floor craftax_world_level_floor(l), from
     * floors_world_key through craftax_world_floor_keys) before anything reads it: only a
     * descent does, a step reads the player's level alone. Always 0 on a CPU and in every
     * state the API hands out; world generation zeroes both. */
    uint32_t floors_pending;
    uint32_t floors_world_key[2];
} CraftaxState;

#include "params.h"

#endif
