/* step_world_hooks.c: the world-subsystem test hook (craftax_test_step_world.h), built into
 * pycraftax._craftax_test only (PYCRAFTAX_TEST_HOOKS=1). */
#include "craftax_test_step_world.h"

#include "craftax/step_world.h"
#include "craftax_api.h"

int craftax_test_world_subsystem(void *states, int32_t subsystem, const int32_t *actions, const uint32_t *keys,
                                 int64_t num_envs, const CraftaxParams *params, int32_t *out) {
    if (!states || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if ((subsystem == CRAFTAX_SUB_UPDATE_MOBS || subsystem == CRAFTAX_SUB_SPAWN_MOBS) && !keys) return CRAFTAX_ERR_NULL;
    if (subsystem == CRAFTAX_SUB_UPDATE_PLAYER_INTRINSICS && !actions) return CRAFTAX_ERR_NULL;
    if (subsystem == CRAFTAX_SUB_IS_GAME_OVER && !out) return CRAFTAX_ERR_NULL;
    if (subsystem < 0 || subsystem > CRAFTAX_SUB_IS_GAME_OVER) return CRAFTAX_ERR_ARGUMENT;
    CraftaxState *all = (CraftaxState *)states;
    for (int64_t i = 0; i < num_envs; i++) {
        CraftaxKey key = {{0u, 0u}};
        if (keys) key = (CraftaxKey){{keys[2 * i], keys[2 * i + 1]}};
        switch (subsystem) {
        case CRAFTAX_SUB_UPDATE_MOBS: craftax_update_mobs(&all[i], key, params); break;
        case CRAFTAX_SUB_SPAWN_MOBS: craftax_spawn_mobs(&all[i], key, params); break;
        case CRAFTAX_SUB_UPDATE_PLANTS: craftax_update_plants(&all[i]); break;
        case CRAFTAX_SUB_UPDATE_PLAYER_INTRINSICS: craftax_update_player_intrinsics(&all[i], actions[i]); break;
        case CRAFTAX_SUB_CALCULATE_INVENTORY_ACHIEVEMENTS: craftax_calculate_inventory_achievements(&all[i]); break;
        case CRAFTAX_SUB_IS_GAME_OVER: out[i] = craftax_is_game_over(&all[i], params); break;
        }
    }
    return 0;
}
