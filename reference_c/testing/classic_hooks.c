/* classic_hooks.c: the Craftax-Classic subsystem hook (craftax_test_classic.h), built into
 * pycraftax._craftax_test only (PYCRAFTAX_TEST_HOOKS=1). */
#include "craftax_test_classic.h"

#include "craftax_classic/step.h"

static int needs_key(int id) {
    return id == CRAFTAX_CLASSIC_SUB_DO_ACTION || id == CRAFTAX_CLASSIC_SUB_UPDATE_MOBS ||
           id == CRAFTAX_CLASSIC_SUB_SPAWN_MOBS;
}

int craftax_test_classic_subsystem(int subsystem_id, void *states, const int32_t *actions, const uint32_t *keys,
                                   int64_t num_envs, const CraftaxClassicParams *params) {
    if (subsystem_id < 0 || subsystem_id >= CRAFTAX_CLASSIC_SUB_COUNT) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs > 0 && (!states || !actions || !params || (needs_key(subsystem_id) && !keys))) return CRAFTAX_ERR_NULL;
    CraftaxClassicState *all = (CraftaxClassicState *)states;
    for (int64_t i = 0; i < num_envs; i++) {
        CraftaxClassicState *s = &all[i];
        CraftaxKey key = {{0u, 0u}};
        if (keys) key = (CraftaxKey){{keys[2 * i], keys[2 * i + 1]}};
        const int32_t action = actions[i];
        switch (subsystem_id) {
        case CRAFTAX_CLASSIC_SUB_DO_CRAFTING: craftax_classic_do_crafting(s, action); break;
        case CRAFTAX_CLASSIC_SUB_DO_ACTION: craftax_classic_do_action(s, key, action); break;
        case CRAFTAX_CLASSIC_SUB_PLACE_BLOCK: craftax_classic_place_block(s, action); break;
        case CRAFTAX_CLASSIC_SUB_MOVE_PLAYER: craftax_classic_move_player(s, action); break;
        case CRAFTAX_CLASSIC_SUB_UPDATE_MOBS: craftax_classic_update_mobs(s, key, params); break;
        case CRAFTAX_CLASSIC_SUB_SPAWN_MOBS: craftax_classic_spawn_mobs(s, key, params, 0); break;
        case CRAFTAX_CLASSIC_SUB_UPDATE_PLANTS: craftax_classic_update_plants(s); break;
        case CRAFTAX_CLASSIC_SUB_UPDATE_PLAYER_INTRINSICS: craftax_classic_update_player_intrinsics(s, action); break;
        case CRAFTAX_CLASSIC_SUB_CAP_INVENTORY: craftax_classic_cap_inventory(s); break;
        case CRAFTAX_CLASSIC_SUB_UPDATE_HEALTH: craftax_classic_update_health(s); break;
        }
    }
    return 0;
}
