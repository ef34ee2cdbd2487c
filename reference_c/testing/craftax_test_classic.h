/* craftax_test_classic.h: test hook applying one subsystem of Craftax-Classic's craftax_step
 * (reference_c/include/craftax_classic/game_logic.h) to a batch of states, for the divergence
 * finder's subsystem replay (pycraftax/porting/). Part of the test extension
 * pycraftax._craftax_test (PYCRAFTAX_TEST_HOOKS=1), not of the shipped API. Read by cffi's cdef:
 * plain declarations and `#define CRAFTAX_<NAME> <int>` lines only.
 */
#ifndef CRAFTAX_TEST_CLASSIC_H
#define CRAFTAX_TEST_CLASSIC_H

#include <stdint.h>

#include "craftax_api_classic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Subsystem ids, in craftax_step's order: each applies `state = f(...)` of the upstream
 * function of craftax/craftax_classic/game_logic.py named. */
#define CRAFTAX_CLASSIC_SUB_DO_CRAFTING 0
#define CRAFTAX_CLASSIC_SUB_DO_ACTION 1
#define CRAFTAX_CLASSIC_SUB_PLACE_BLOCK 2
#define CRAFTAX_CLASSIC_SUB_MOVE_PLAYER 3
#define CRAFTAX_CLASSIC_SUB_UPDATE_MOBS 4
#define CRAFTAX_CLASSIC_SUB_SPAWN_MOBS 5
#define CRAFTAX_CLASSIC_SUB_UPDATE_PLANTS 6
#define CRAFTAX_CLASSIC_SUB_UPDATE_PLAYER_INTRINSICS 7
#define CRAFTAX_CLASSIC_SUB_CAP_INVENTORY 8
#define CRAFTAX_CLASSIC_SUB_UPDATE_HEALTH 9
#define CRAFTAX_CLASSIC_SUB_COUNT 10

/* Apply subsystem `subsystem_id` to each of num_envs Classic states in place. actions: int32
 * [num_envs] (the action after craftax_step's sleep interrupt); keys: uint32 [num_envs, 2], the
 * key upstream's function receives (do_action, update_mobs, spawn_mobs), may be NULL for the
 * others. Returns 0, CRAFTAX_ERR_ARGUMENT for an unknown id, CRAFTAX_ERR_NULL for a missing
 * buffer. */
int craftax_test_classic_subsystem(int subsystem_id, void *states, const int32_t *actions, const uint32_t *keys,
                                   int64_t num_envs, const CraftaxClassicParams *params);

#ifdef __cplusplus
}
#endif

#endif
