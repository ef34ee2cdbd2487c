/* craftax_api_classic.h: the C API of Craftax-Classic, the full game's API (craftax_api.h,
 * craftax_api_step.h) with craftax_classic_* names, over the rules in craftax_classic/.
 *
 * cffi reads this file as cdef (pycraftax/_build.py strips the preprocessor lines), so it
 * holds plain declarations with literal sizes; that is also why Classic's EnvParams struct
 * is declared here and not in a rules header. Functions return 0 or a negative
 * CRAFTAX_ERR_* code (craftax_api.h). States are opaque buffers of
 * craftax_classic_state_size() bytes per env, described by the leaf table.
 */
#ifndef CRAFTAX_API_CLASSIC_H
#define CRAFTAX_API_CLASSIC_H

#include <stddef.h>
#include <stdint.h>

#include "craftax_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* EnvParams of craftax/craftax_classic/envs/craftax_state.py. Defaults (upstream's, set by
 * craftax_classic_default_params): max_timesteps 10000, day_length 300, always_diamond 1,
 * zombie_health 5, cow_health 3, skeleton_health 3, mob_despawn_distance 14,
 * spawn_cow_chance 0.1, spawn_zombie_base_chance 0.02, spawn_zombie_night_chance 0.1,
 * spawn_skeleton_chance 0.05, no noise-angle overrides. fractal_noise_angles is four
 * optional arrays; has_angles[i] says whether field i is given. Their shapes are the
 * gradient grids of generate_world: water (5,5), mountain (5,5), paths (9,33), trees (17,17). */
typedef struct {
    int32_t max_timesteps;
    int32_t day_length;
    int32_t always_diamond;
    int32_t zombie_health;
    int32_t cow_health;
    int32_t skeleton_health;
    int32_t mob_despawn_distance;
    float spawn_cow_chance;
    float spawn_zombie_base_chance;
    float spawn_zombie_night_chance;
    float spawn_skeleton_chance;
    int32_t has_angles[4];
    float angles_water[25];
    float angles_mountain[25];
    float angles_path[297];
    float angles_tree[289];
} CraftaxClassicParams;

int craftax_classic_obs_size(void);
int craftax_classic_num_actions(void);
int craftax_classic_num_achievements(void);
size_t craftax_classic_state_size(void);
int craftax_classic_num_leaves(void);
const CraftaxLeaf *craftax_classic_leaf(int index);
void craftax_classic_default_params(CraftaxClassicParams *params);
/* craftax_check_states for Classic states (leaf indices are craftax_classic_leaf's). */
int craftax_classic_check_states(const void *states, int64_t num_envs, CraftaxStateError *error);

/* reset_env(keys[i], params) (generate_world) for each env: keys uint32 [num_envs, 2]; obs,
 * when not NULL, receives float32 [num_envs, craftax_classic_obs_size()]. */
int craftax_classic_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                    const CraftaxClassicParams *params, float *obs);
/* render_craftax_symbolic for each env. (Unlike the full game's calls, Classic's observe and
 * step check nothing in the states: its rules clamp every index but block ids, and checking
 * the 4,096 map bytes per env on every call costs 12-27% of a step; set_state's
 * craftax_classic_check_states covers them.) */
int craftax_classic_observe(const void *states, int64_t num_envs, float *obs);

/* CraftaxClassicSymbolicEnvNoAutoReset.step_env(keys[i], states[i], actions[i], params) for
 * every env, in place: actions int32 [N] in [0, 17). Outputs (each may be NULL): obs,
 * rewards float32 [N], dones uint8 [N] (is_terminal of the new state). */
int craftax_classic_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxClassicParams *params, float *obs, float *rewards, uint8_t *dones);

/* CraftaxClassicSymbolicEnv.step (auto-reset): key_step, key_reset = split(keys[i]);
 * step_env(key_step); where done, state and obs become reset_env(key_reset).
 * terminated = died (health <= 0 or in lava); truncated = done and not terminated.
 * final_achievements uint8 [N, 22]: the finished episode's achievements where done (zeros
 * elsewhere). final_obs float32 [N, 1345]: where done, the obs of the state the episode ended
 * in (before the reset); other rows are left as they were. Outputs other than states may be
 * NULL. */
int craftax_classic_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxClassicParams *params, float *obs, float *final_obs, float *rewards,
                                   uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                   uint8_t *final_achievements);

/* One step of OptimisticResetVecEnvWrapper over Classic's no-auto-reset env, as
 * craftax_step_optimistic (craftax_api_step.h) does it for the full game, final_obs too. */
int craftax_classic_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                    int32_t reset_ratio, const CraftaxClassicParams *params, float *obs,
                                    float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                    uint8_t *truncated, uint8_t *final_achievements, int32_t *reset_worlds);

/* generate_fractal_noise_2d(key, (64, 64), (res0, res1), octaves=1) as Classic's world
 * generation evaluates it; res0, res1 in {4, 8, 16, 32} (CRAFTAX_ERR_ARGUMENT otherwise). */
int craftax_classic_test_fractal_noise(const uint32_t *key, int32_t res0, int32_t res1, const float *angles,
                                       float *out);

#ifdef __cplusplus
}
#endif

#endif
