/* craftax_api_step.h: the step part of the C API (craftax_api.h has states, reset, obs).
 *
 * cffi reads this file as cdef (pycraftax/_build.py), so below the includes it holds
 * plain declarations and integer #defines only. Functions return 0 or a negative
 * CRAFTAX_ERR_* code. `states` are num_envs states of craftax_state_size() bytes each.
 */
#ifndef CRAFTAX_API_STEP_H
#define CRAFTAX_API_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "craftax/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upstream CraftaxSymbolicEnvNoAutoReset.step_env(keys[i], states[i], actions[i], params)
 * for every env, in place, no auto-reset: keys uint32 [N, 2] (raw JAX key data), actions
 * int32 [N] in [0, 43). Outputs (each may be NULL): obs float32 [N, CRAFTAX_OBS_SIZE],
 * rewards float32 [N], dones uint8 [N] (is_terminal of the new state). */
int craftax_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                           const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones);

/* Upstream CraftaxSymbolicEnv.step (auto-reset) for every env: key_step, key_reset =
 * split(keys[i]); step_env(key_step); where done, the state and obs are those of
 * reset_env(key_reset). rewards and dones come from the step. terminated = died or beat
 * the boss; truncated = timestep >= max_timesteps and not terminated. final_achievements
 * uint8 [N, 67] receives the achievements of the finished episode where done (zeros
 * elsewhere). final_obs float32 [N, CRAFTAX_OBS_SIZE]: where done, the obs of the state the
 * episode ended in (step_env's obs_st, before the reset replaced it); other rows are left as
 * they were. Outputs other than states may be NULL. */
int craftax_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                           const CraftaxParams *params, float *obs, float *final_obs, float *rewards, uint8_t *dones,
                           uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements);

/* One step of OptimisticResetVecEnvWrapper (Craftax_Baselines, the official PPO-RNN's reset
 * wrapper; rules in craftax/step.h, craftax_optimistic_keys) over all num_envs envs with the
 * wrapper's one key (uint32 [2]): every env steps with step_env, no auto-reset; the done ones
 * then take one of the step's num_envs / reset_ratio fresh worlds as the wrapper assigns
 * them, and their obs is that world's reset obs. num_envs must be a multiple of reset_ratio
 * (>= 1). final_obs, rewards, dones, terminated, truncated and final_achievements as in
 * craftax_step_autoreset; reset_worlds int32 [N] receives each done env's world index (-1
 * where not done). Outputs other than states may be NULL. */
int craftax_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                            int32_t reset_ratio, const CraftaxParams *params, float *obs, float *final_obs,
                            float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                            uint8_t *final_achievements, int32_t *reset_worlds);

#ifdef __cplusplus
}
#endif

#endif
