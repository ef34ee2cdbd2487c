/* craftax_test_step_world.h: test hook of the C API applying one world subsystem of
 * craftax_step (craftax/step_world.h) to a batch of states. Part of the test extension
 * pycraftax._craftax_test (PYCRAFTAX_TEST_HOOKS=1), not of the shipped API. Read by cffi as cdef.
 */
#ifndef CRAFTAX_TEST_STEP_WORLD_H
#define CRAFTAX_TEST_STEP_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "craftax/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Test hook: apply one world subsystem of craftax_step to every state, in place.
 * keys (uint32 [N, 2]) feed update_mobs / spawn_mobs; actions (int32 [N]) feed
 * update_player_intrinsics; out (int32 [N]) receives is_game_over for CRAFTAX_SUB_IS_GAME_OVER.
 * Unused arguments may be NULL. */
#define CRAFTAX_SUB_UPDATE_MOBS 0
#define CRAFTAX_SUB_SPAWN_MOBS 1
#define CRAFTAX_SUB_UPDATE_PLANTS 2
#define CRAFTAX_SUB_UPDATE_PLAYER_INTRINSICS 3
#define CRAFTAX_SUB_CALCULATE_INVENTORY_ACHIEVEMENTS 4
#define CRAFTAX_SUB_IS_GAME_OVER 5
int craftax_test_world_subsystem(void *states, int32_t subsystem, const int32_t *actions, const uint32_t *keys,
                                 int64_t num_envs, const CraftaxParams *params, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif
