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


static int compare_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int craftax_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                            int32_t reset_ratio, const CraftaxParams *params, float *obs, float *rewards,
                            uint8_t *dones, uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                            int32_t *reset_worlds) {
    if (!states || !actions || !key || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0) return CRAFTAX_ERR_ARGUMENT;
    if (params->day_length <= 0 || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    CraftaxState *all = (CraftaxState *)states;
    const int32_t num_worlds = (int32_t)(num_envs / reset_ratio);
    CraftaxKey step_parent, reset_parent, choice_key;
    craftax_optimistic_keys((CraftaxKey){{key[0], key[1]}}, &step_parent, &reset_parent, &choice_key);

    uint8_t *done = (uint8_t *)malloc((size_t)num_envs);
    uint64_t *order = (uint64_t *)malloc((size_t)num_envs * sizeof(uint64_t));
    int32_t *world = (int32_t *)malloc((size_t)num_envs * sizeof(int32_t));
    int32_t *owner = (int32_t *)malloc((size_t)num_worlds * sizeof(int32_t));
    int failed = !done || !order || !world || !owner;
    if (failed) goto out;

#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(dynamic, 8)
    for (int64_t i = 0; i < num_envs; i++) {
        uint8_t term, ach[CRAFTAX_NUM_ACHIEVEMENTS];
        const float r = craftax_step_env_ending(&all[i], craftax_split_at(step_parent, (uint32_t)i), actions[i],
                                                params, &done[i], &term, ach);
        if (rewards) rewards[i] = r;
        if (dones) dones[i] = done[i];
        if (terminated) terminated[i] = (uint8_t)(done[i] && term);
        if (truncated) truncated[i] = (uint8_t)(done[i] && !term);
        if (final_achievements) {
            if (!done[i]) memset(ach, 0, CRAFTAX_NUM_ACHIEVEMENTS);
            memcpy(final_achievements + i * CRAFTAX_NUM_ACHIEVEMENTS, ach, CRAFTAX_NUM_ACHIEVEMENTS);
        }
    }

    /* The wrapper's assignment of worlds to the done envs (step.h). */
    int64_t num_done = 0;
    for (int64_t i = 0; i < num_envs; i++) {
        world[i] = -1;
        if (done[i]) order[num_done++] = craftax_optimistic_order_key(choice_key, (uint32_t)i, 1);
    }
    qsort(order, (size_t)num_done, sizeof(uint64_t), compare_u64);
    for (int32_t w = 0; w < num_worlds; w++) owner[w] = -1;
    for (int64_t rank = 0; rank < num_done; rank++) {
        const uint32_t i = (uint32_t)(order[rank] & 0xFFFFFFFFu);
        world[i] = craftax_optimistic_world(rank, i, num_worlds, reset_ratio);
        if (owner[world[i]] < 0) owner[world[i]] = (int32_t)i;
    }

    /* Each world that some env takes is generated once, into its first taker, and copied to
     * the others (worlds no env takes are never generated: they could not be observed). */
#pragma omp parallel num_threads(craftax_get_num_threads()) reduction(| : failed)
    {
        CraftaxWorldGenScratch *scratch = NULL;
#pragma omp for schedule(dynamic, 1)
        for (int32_t w = 0; w < num_worlds; w++) {
            if (owner[w] < 0) continue;
            if (!scratch) scratch = (CraftaxWorldGenScratch *)malloc(sizeof(CraftaxWorldGenScratch));
            if (!scratch) {
                failed = 1;
                continue;
            }
            craftax_reset_env(craftax_split_at(reset_parent, (uint32_t)w), params, &all[owner[w]], scratch);
        }
        free(scratch);
    }
    if (failed) goto out;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(static)
    for (int64_t i = 0; i < num_envs; i++)
        if (world[i] >= 0 && owner[world[i]] != i) memcpy(&all[i], &all[owner[world[i]]], sizeof(CraftaxState));
    if (obs) {
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(dynamic, 8)
        for (int64_t i = 0; i < num_envs; i++) craftax_render_symbolic(&all[i], obs + i * CRAFTAX_OBS_SIZE, done[i]);
    }
    if (reset_worlds) memcpy(reset_worlds, world, (size_t)num_envs * sizeof(int32_t));
out:
    free(done);
    free(order);
    free(world);
    free(owner);
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}
