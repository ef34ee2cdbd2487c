/* step_api.c: the step part of the C API (craftax_api_step.h), batched with OpenMP. */
#include "craftax_api_step.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "craftax/step.h"
#include "craftax_api.h"

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
                           const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                           uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0 || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    CraftaxState *all = (CraftaxState *)states;
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
            uint8_t done, term, ach[CRAFTAX_NUM_ACHIEVEMENTS];
            const float r = craftax_step_autoreset_one(&all[i], key, actions[i], params,
                                                       obs ? obs + i * CRAFTAX_OBS_SIZE : NULL, &done, &term, ach,
                                                       scratch);
            if (rewards) rewards[i] = r;
            if (dones) dones[i] = done;
            if (terminated) terminated[i] = (uint8_t)(done && term);
            if (truncated) truncated[i] = (uint8_t)(done && !term);
            if (final_achievements) {
                if (done)
                    memcpy(final_achievements + i * CRAFTAX_NUM_ACHIEVEMENTS, ach, CRAFTAX_NUM_ACHIEVEMENTS);
                else
                    memset(final_achievements + i * CRAFTAX_NUM_ACHIEVEMENTS, 0, CRAFTAX_NUM_ACHIEVEMENTS);
            }
        }
        free(scratch);
    }
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}

