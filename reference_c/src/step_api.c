/* step_api.c: the step part of the C API (craftax_api_step.h), batched with OpenMP. */
#include "craftax_api_step.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "craftax/step.h"
#include "craftax_api.h"
#include "optimistic_step.h"
#include "state_domain.h"

static int check_actions(const int32_t *actions, int64_t num_envs) {
    for (int64_t i = 0; i < num_envs; i++)
        if (actions[i] < 0 || actions[i] >= CRAFTAX_NUM_ACTIONS) return CRAFTAX_ERR_ARGUMENT;
    return 0;
}

int craftax_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                           const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0 || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    if (craftax_guard_states(states, num_envs)) return CRAFTAX_ERR_STATE;
    CraftaxState *all = (CraftaxState *)states;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(dynamic, 8)
    for (int64_t i = 0; i < num_envs; i++) {
        CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
        uint8_t done;
        float r = craftax_step_env(&all[i], key, actions[i], params, obs ? obs + i * CRAFTAX_OBS_SIZE : NULL, &done);
        if (rewards) rewards[i] = r;
        if (dones) dones[i] = done;
    }
    return 0;
}

int craftax_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                           const CraftaxParams *params, float *obs, float *final_obs, float *rewards, uint8_t *dones,
                           uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0 || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    if (craftax_guard_states(states, num_envs)) return CRAFTAX_ERR_STATE;
    CraftaxState *all = (CraftaxState *)states;
    const CraftaxStepOutputs out = {obs, final_obs, rewards, dones, terminated, truncated, final_achievements, NULL};
    int failed = 0;
#pragma omp parallel num_threads(craftax_get_num_threads()) reduction(| : failed)
    {
        CraftaxWorldGenScratch *scratch = NULL;
#pragma omp for schedule(dynamic, 8)
        for (int64_t i = 0; i < num_envs; i++) {
            if (!scratch) scratch = (CraftaxWorldGenScratch *)malloc(sizeof(CraftaxWorldGenScratch));
            if (!scratch) {
                failed = 1;
                continue;
            }
            CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
            uint8_t done, term;
            const float r = craftax_step_autoreset_one(
                &all[i], key, actions[i], params, obs ? obs + i * CRAFTAX_OBS_SIZE : NULL,
                final_obs ? final_obs + i * CRAFTAX_OBS_SIZE : NULL, &done, &term,
                final_achievements ? final_achievements + i * CRAFTAX_NUM_ACHIEVEMENTS : NULL, scratch);
            if (rewards) rewards[i] = r;
            if (dones) dones[i] = done;
            craftax_write_ending(&out, i, CRAFTAX_NUM_ACHIEVEMENTS, done, term);
        }
        free(scratch);
    }
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}

/* The full game as the optimistic step drives it (optimistic_step.h). */
static float optimistic_step_env(void *state, CraftaxKey key, int32_t action, const void *params, void *step_scratch,
                                 uint8_t *done, uint8_t *terminated, uint8_t *achievements) {
    (void)step_scratch; /* spawn_mobs needs none in the full game */
    return craftax_step_env_ending((CraftaxState *)state, key, action, (const CraftaxParams *)params, done, terminated,
                                   achievements);
}
static void optimistic_reset_env(CraftaxKey key, const void *params, void *state, void *reset_scratch) {
    craftax_reset_env(key, (const CraftaxParams *)params, (CraftaxState *)state, (CraftaxWorldGenScratch *)reset_scratch);
}
static void optimistic_render(const void *state, float *obs, int fresh_world) {
    craftax_render_symbolic((const CraftaxState *)state, obs, fresh_world);
}
static const CraftaxOptimisticGame FULL_GAME = {
    .state_size = sizeof(CraftaxState),
    .obs_size = CRAFTAX_OBS_SIZE,
    .num_achievements = CRAFTAX_NUM_ACHIEVEMENTS,
    .step_scratch_size = 0,
    .reset_scratch_size = sizeof(CraftaxWorldGenScratch),
    .step = optimistic_step_env,
    .reset = optimistic_reset_env,
    .render = optimistic_render,
};

int craftax_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                            int32_t reset_ratio, const CraftaxParams *params, float *obs, float *final_obs,
                            float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                            uint8_t *final_achievements, int32_t *reset_worlds) {
    if (!states || !actions || !key || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0) return CRAFTAX_ERR_ARGUMENT;
    if (params->day_length <= 0 || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    if (craftax_guard_states(states, num_envs)) return CRAFTAX_ERR_STATE;
    if (num_envs == 0) return 0;
    const CraftaxStepOutputs out = {obs, final_obs, rewards, dones, terminated, truncated, final_achievements,
                                    reset_worlds};
    return craftax_optimistic_step(&FULL_GAME, states, actions, (CraftaxKey){{key[0], key[1]}}, num_envs,
                                   reset_ratio, params, &out);
}
