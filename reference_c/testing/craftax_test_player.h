/* craftax_test_player.h: test hooks of the player-side subsystems of craftax_step
 * (reference_c/include/craftax/step_player.h, game_logic_utils.h), for the JAX parity
 * tests of conformance/test_step_player.py. Part of the test extension pycraftax._craftax_test
 * (PYCRAFTAX_TEST_HOOKS=1), not of the shipped API. Read by cffi's cdef: plain declarations and
 * `#define CRAFTAX_<NAME> <int>` lines only.
 */
#ifndef CRAFTAX_TEST_PLAYER_H
#define CRAFTAX_TEST_PLAYER_H

#include <stdint.h>

#include "craftax/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Subsystem ids: each applies `state = f(...)` of the upstream function named. */
#define CRAFTAX_SUB_CHANGE_FLOOR 0
#define CRAFTAX_SUB_DO_CRAFTING 1
#define CRAFTAX_SUB_DO_ACTION 2
#define CRAFTAX_SUB_PLACE_BLOCK 3
#define CRAFTAX_SUB_SHOOT_PROJECTILE 4
#define CRAFTAX_SUB_CAST_SPELL 5
#define CRAFTAX_SUB_DRINK_POTION 6
#define CRAFTAX_SUB_READ_BOOK 7
#define CRAFTAX_SUB_ENCHANT 8
#define CRAFTAX_SUB_BOSS_LOGIC 9
#define CRAFTAX_SUB_LEVEL_UP_ATTRIBUTES 10
#define CRAFTAX_SUB_MOVE_PLAYER 11
#define CRAFTAX_SUB_CLIP_INVENTORY_AND_INTRINSICS 12
#define CRAFTAX_SUB_COUNT 13

/* Apply subsystem `subsystem_id` to each of num_envs states in place. actions: int32
 * [num_envs]; keys: uint32 [num_envs, 2], the key upstream's function receives (for
 * do_action the `_rng` of craftax_step's split), ignored by key-less subsystems and may
 * then be NULL. Returns 0, or CRAFTAX_ERR_ARGUMENT for an unknown id. */
int craftax_test_player_subsystem(int subsystem_id, void *states, const int32_t *actions, const uint32_t *keys,
                                  int64_t num_envs, const CraftaxParams *params);

/* get_player_damage_vector(state) of each state: out float32 [num_envs, 3]. */
int craftax_test_player_damage_vector(const void *states, int64_t num_envs, float *out);
/* get_damage_done_to_player(state, static_params, damage_vectors[i]): out float32 [num_envs]. */
int craftax_test_damage_done_to_player(const void *states, const float *damage_vectors, int64_t num_envs, float *out);
/* The same two formulas on a zeroed state holding only the fields they read, so the
 * exhaustive tests need no full state per case. sword, sword_enchantment, strength,
 * intelligence: int32 [num]; armour, armour_enchantments: int32 [num, 4]; level [num]. */
int craftax_test_player_damage_vector_fields(const int32_t *sword, const int32_t *sword_enchantment,
                                             const int32_t *strength, const int32_t *intelligence, int64_t num,
                                             float *out);
int craftax_test_damage_done_to_player_fields(const int32_t *armour, const int32_t *armour_enchantments,
                                              const int32_t *level, const float *damage_vectors, int64_t num,
                                              float *out);
/* Position predicates at positions[i] (int32 [num, 2]) for collision row collision[i]
 * (int32 [num, 3]): out int32 [num, 5] = in_bounds, is_in_solid_block, is_in_mob,
 * is_position_in_bounds_not_in_mob_not_colliding, is_near_block(state, block[i]). */
int craftax_test_position_predicates(const void *states, const int32_t *positions, const int32_t *collision,
                                     const int32_t *block, int64_t num_envs, int32_t *out);
/* attack_mob(state, positions[i], damage_vectors[i], can_eat[i]) in place; did_attack and
 * did_kill (int32 [num_envs]) receive the two flags. */
int craftax_test_attack_mob(void *states, const int32_t *positions, const float *damage_vectors, const int32_t *can_eat,
                            int64_t num_envs, int32_t *did_attack, int32_t *did_kill);

#ifdef __cplusplus
}
#endif

#endif
