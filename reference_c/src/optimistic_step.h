/* optimistic_step.h: one step of OptimisticResetVecEnvWrapper (craftax/step.h:
 * craftax_optimistic_keys) over any game of the C API, for step_api.c (full Craftax) and
 * classic_api.c (Craftax-Classic), and the per-env outputs and ending flags that their
 * auto-reset steps share. The game comes in as a table of its step and reset, and the env
 * variant (craftax/step.h: symbolic or pixels) says how to render and reset, so that
 * the wrapper's logic (keys, order, world assignment, each taken world generated once) is
 * written once. Private to those two files; argument checks are theirs.
 */
#ifndef CRAFTAX_OPTIMISTIC_STEP_H
#define CRAFTAX_OPTIMISTIC_STEP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "craftax/step.h"
#include "craftax_api.h"

/* A game as the optimistic step drives it. Scratch sizes are per thread (0: none). */
typedef struct {
    size_t state_size;
    int64_t num_achievements;
    size_t step_scratch_size;
    size_t reset_scratch_size;
    /* step_env without reset: returns the reward; *done (is_game_over), *terminated (ended by
     * the rules, not only the time limit); achievements (when not NULL) receives the stepped
     * state's achievements. */
    float (*step)(void *state, CraftaxKey key, int32_t action, const void *params, void *step_scratch,
                  uint8_t *done, uint8_t *terminated, uint8_t *achievements);
    /* reset_env of the variant (craftax/step.h: CraftaxEnvVariant) */
    void (*reset)(const CraftaxEnvVariant *variant, CraftaxKey key, const void *params, void *state,
                  void *reset_scratch);
} CraftaxOptimisticGame;

/* The per-env outputs of a batched step, each may be NULL (craftax_api_step.h). */
typedef struct {
    float *obs;
    float *final_obs;
    float *rewards;
    uint8_t *dones;
    uint8_t *terminated;
    uint8_t *truncated;
    uint8_t *final_achievements;
    int32_t *reset_worlds;
} CraftaxStepOutputs;

/* Env i's ending flags, and its achievement row (which the step filled) zeroed where not done. */
static inline void craftax_write_ending(const CraftaxStepOutputs *out, int64_t i, int64_t num_achievements,
                                        uint8_t done, uint8_t term) {
    if (out->terminated) out->terminated[i] = (uint8_t)(done && term);
    if (out->truncated) out->truncated[i] = (uint8_t)(done && !term);
    if (out->final_achievements && !done)
        memset(out->final_achievements + i * num_achievements, 0, (size_t)num_achievements);
}

static int craftax_compare_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The optimistic step of num_envs (>= 1, a multiple of reset_ratio) envs with the wrapper's
 * one key. final_obs rows of the done envs receive their terminal obs before the reset.
 * Returns 0 or CRAFTAX_ERR_NO_MEMORY. */
static inline int craftax_optimistic_step(const CraftaxOptimisticGame *game, const CraftaxEnvVariant *variant,
                                          void *states, const int32_t *actions,
                                          CraftaxKey key, int64_t num_envs, int32_t reset_ratio,
                                          const void *params, const CraftaxStepOutputs *out) {
    char *all = (char *)states;
    const size_t state_size = game->state_size;
    const int32_t num_worlds = (int32_t)(num_envs / reset_ratio);
    CraftaxKey step_parent, reset_parent, choice_key;
    craftax_optimistic_keys(key, &step_parent, &reset_parent, &choice_key);

    uint8_t *done = (uint8_t *)malloc((size_t)num_envs);
    uint64_t *order = (uint64_t *)malloc((size_t)num_envs * sizeof(uint64_t));
    int32_t *world = (int32_t *)malloc((size_t)num_envs * sizeof(int32_t));
    int32_t *owner = (int32_t *)malloc((size_t)num_worlds * sizeof(int32_t));
    int failed = !done || !order || !world || !owner;
    if (failed) goto out;

#pragma omp parallel num_threads(craftax_get_num_threads()) reduction(| : failed)
    {
        void *scratch = NULL;
#pragma omp for schedule(dynamic, 8)
        for (int64_t i = 0; i < num_envs; i++) {
            if (game->step_scratch_size && !scratch) scratch = malloc(game->step_scratch_size);
            if (game->step_scratch_size && !scratch) {
                failed = 1;
                done[i] = 0;
                continue;
            }
            void *state = all + (size_t)i * state_size;
            uint8_t term;
            uint8_t *ach = out->final_achievements ? out->final_achievements + i * game->num_achievements : NULL;
            const float r = game->step(state, craftax_split_at(step_parent, (uint32_t)i), actions[i], params, scratch,
                                       &done[i], &term, ach);
            if (out->rewards) out->rewards[i] = r;
            if (out->dones) out->dones[i] = done[i];
            craftax_write_ending(out, i, game->num_achievements, done[i], term);
            if (out->final_obs && done[i])
                variant->render(variant->context, state, out->final_obs + i * variant->obs_size, 0);
        }
        free(scratch);
    }
    if (failed) goto out;

    /* The wrapper's assignment of worlds to the done envs (step.h). */
    int64_t num_done = 0;
    for (int64_t i = 0; i < num_envs; i++) {
        world[i] = -1;
        if (done[i]) order[num_done++] = craftax_optimistic_order_key(choice_key, (uint32_t)i, 1);
    }
    qsort(order, (size_t)num_done, sizeof(uint64_t), craftax_compare_u64);
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
        void *scratch = NULL;
#pragma omp for schedule(dynamic, 1)
        for (int32_t w = 0; w < num_worlds; w++) {
            if (owner[w] < 0) continue;
            if (!scratch) scratch = malloc(game->reset_scratch_size);
            if (!scratch) {
                failed = 1;
                continue;
            }
            game->reset(variant, craftax_split_at(reset_parent, (uint32_t)w), params,
                        all + (size_t)owner[w] * state_size, scratch);
        }
        free(scratch);
    }
    if (failed) goto out;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(static)
    for (int64_t i = 0; i < num_envs; i++)
        if (world[i] >= 0 && owner[world[i]] != i)
            memcpy(all + (size_t)i * state_size, all + (size_t)owner[world[i]] * state_size, state_size);
    if (out->obs) {
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(dynamic, 8)
        for (int64_t i = 0; i < num_envs; i++)
            variant->render(variant->context, all + (size_t)i * state_size, out->obs + i * variant->obs_size,
                             done[i]);
    }
    if (out->reset_worlds) memcpy(out->reset_worlds, world, (size_t)num_envs * sizeof(int32_t));
out:
    free(done);
    free(order);
    free(world);
    free(owner);
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}

#endif
