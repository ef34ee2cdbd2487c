/* craftax_classic/state.h: the plain-old-data state of one Craftax-Classic env.
 * Upstream: craftax/craftax_classic/envs/craftax_state.py (EnvState, Inventory, Mobs).
 * Every EnvState leaf is here with upstream's shape; block ids and bools are stored in
 * uint8 and widened to upstream's int32/bool by pycraftax/classic_state.py.
 */
#ifndef CRAFTAX_CLASSIC_STATE_H
#define CRAFTAX_CLASSIC_STATE_H

#include "craftax_api_classic.h"
#include "craftax_classic/constants.h"

typedef struct {
    int32_t wood, stone, coal, iron, diamond, sapling;
    int32_t wood_pickaxe, stone_pickaxe, iron_pickaxe;
    int32_t wood_sword, stone_sword, iron_sword;
} CraftaxClassicInventory;

#define CRAFTAX_CLASSIC_DEFINE_MOBS(NAME, N) \
    typedef struct {                         \
        int32_t position[N][2];              \
        int32_t health[N];                   \
        uint8_t mask[N];                     \
        int32_t attack_cooldown[N];          \
    } NAME;
CRAFTAX_CLASSIC_DEFINE_MOBS(CraftaxClassicMobs3, 3)
CRAFTAX_CLASSIC_DEFINE_MOBS(CraftaxClassicMobs2, 2)
#undef CRAFTAX_CLASSIC_DEFINE_MOBS

typedef struct {
    uint8_t map[CRAFTAX_CLASSIC_MAP_SIZE][CRAFTAX_CLASSIC_MAP_SIZE];
    uint8_t mob_map[CRAFTAX_CLASSIC_MAP_SIZE][CRAFTAX_CLASSIC_MAP_SIZE];

    int32_t player_position[2];
    int32_t player_direction;

    int32_t player_health, player_food, player_drink, player_energy;
    uint8_t is_sleeping;

    float player_recover, player_hunger, player_thirst, player_fatigue;

    CraftaxClassicInventory inventory;

    CraftaxClassicMobs3 zombies;
    CraftaxClassicMobs3 cows;
    CraftaxClassicMobs2 skeletons;
    CraftaxClassicMobs3 arrows;
    int32_t arrow_directions[CRAFTAX_CLASSIC_MAX_ARROWS][2];

    int32_t growing_plants_positions[CRAFTAX_CLASSIC_MAX_GROWING_PLANTS][2];
    int32_t growing_plants_age[CRAFTAX_CLASSIC_MAX_GROWING_PLANTS];
    uint8_t growing_plants_mask[CRAFTAX_CLASSIC_MAX_GROWING_PLANTS];

    float light_level;

    uint8_t achievements[CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS];

    uint32_t state_rng[2];

    int32_t timestep;
} CraftaxClassicState;

#endif
