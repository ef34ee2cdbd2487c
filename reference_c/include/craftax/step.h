/* craftax/step.h: one Craftax step, game_logic.py:craftax_step (craftax 1.6.1, lines
 * 3006-3089), and the symbolic env's step_env (envs/craftax_symbolic_env.py).
 *
 * craftax_step reads as upstream's ordered list of subsystem calls; keys are split in
 * upstream order (`rng, _rng = split(rng)` before do_action, read_book, enchant,
 * update_mobs, spawn_mobs and state_rng). Player-side subsystems live in step_player.h,
 * world-side ones in step_world.h.
 */
#ifndef CRAFTAX_STEP_H
#define CRAFTAX_STEP_H

#include "common.h"
#include "game_constants.h"
#include "game_logic_utils.h"
#include "mathf.h"
#include "obs.h"
#include "params.h"
#include "rng.h"
#include "state.h"
#include "step_player.h"
#include "step_world.h"
#include "worldgen.h"

/* reward = sum((ach_after - ach_before) * ACHIEVEMENT_REWARD_MAP) + (h_after - h_before) * 0.1
 * (int32 sum, float32 health term, fused). */
static inline CRAFTAX_HD float craftax_step_reward(const uint8_t init_achievements[CRAFTAX_NUM_ACHIEVEMENTS],
                                                   float init_health, const CraftaxState *s) {
    int32_t achievement_reward = 0;
    for (int i = 0; i < CRAFTAX_NUM_ACHIEVEMENTS; i++)
        achievement_reward += ((int32_t)s->achievements[i] - (int32_t)init_achievements[i]) *
                              CRAFTAX_ACHIEVEMENT_REWARD_MAP[i];
    /* XLA fuses the health term into the sum: fma(dh, 0.1f, ach) (measured: WAKE_UP with
     * dh = -7 gives 0.29999998 upstream, 0.3 with two roundings). */
    return fmaf(s->player_health - init_health, 0.1f, (float)achievement_reward);
}

/* What craftax_step carries from its part before spawn_mobs to its part after. */
typedef struct {
    uint8_t init_achievements[CRAFTAX_NUM_ACHIEVEMENTS];
    float init_health;
    int32_t action;
    CraftaxKey rng;
} CraftaxStepCarry;

/* craftax_step up to update_mobs; returns spawn_mobs' key. */
static inline CRAFTAX_HD CraftaxKey craftax_step_before_spawn(CraftaxState *state, CraftaxKey rng, int32_t action,
                                                              const CraftaxParams *params, CraftaxStepCarry *c) {
    memcpy(c->init_achievements, state->achievements, sizeof(c->init_achievements));
    c->init_health = state->player_health;

    /* Interrupt action if sleeping or resting */
    if (state->is_sleeping) action = ACTION_NOOP;
    if (state->is_resting) action = ACTION_NOOP;

    craftax_change_floor(state, action, params);
    craftax_do_crafting(state, action);
    craftax_do_action(state, craftax_split_next(&rng), action, params);
    craftax_place_block(state, action, params);
    craftax_shoot_projectile(state, action, params);
    craftax_cast_spell(state, action, params);
    craftax_drink_potion(state, action);
    craftax_read_book(state, craftax_split_next(&rng), action);
    craftax_enchant(state, craftax_split_next(&rng), action);
    craftax_boss_logic(state, params);
    craftax_level_up_attributes(state, action, params);
    craftax_move_player(state, action, params);

    craftax_update_mobs(state, craftax_split_next(&rng), params);
    const CraftaxKey spawn_key = craftax_split_next(&rng);
    c->action = action;
    c->rng = rng;
    return spawn_key;
}

/* craftax_step after spawn_mobs; returns the reward. */
static inline CRAFTAX_HD float craftax_step_after_spawn(CraftaxState *state, const CraftaxParams *params,
                                                        CraftaxStepCarry *c) {
    craftax_update_plants(state);
    craftax_update_player_intrinsics(state, c->action);
    craftax_clip_inventory_and_intrinsics(state, params);
    craftax_calculate_inventory_achievements(state);

    const float reward = craftax_step_reward(c->init_achievements, c->init_health, state);

    const CraftaxKey state_rng = craftax_split_next(&c->rng);
    state->timestep = state->timestep + 1;
    state->light_level = craftax_light_level(state->timestep, params->day_length);
    state->state_rng[0] = state_rng.k[0];
    state->state_rng[1] = state_rng.k[1];
    return reward;
}

/* game_logic.py:craftax_step. Modifies *state in place; returns the reward (in every lane).
 * Lanes (common.h): lane 0 runs the sequential logic, all lanes share spawn_mobs' scans.
 * share_scans: one lane per env, the warp's lanes sharing their scans (craftax_sw_class_spawn_cell). */
static inline CRAFTAX_HD float craftax_step_lanes(CraftaxState *state, CraftaxKey rng, int32_t action,
                                                  const CraftaxParams *params, int lane, int lanes, int share_scans) {
    CraftaxStepCarry c;
    CraftaxKey spawn_key = {{0u, 0u}};
    if (lane == 0) spawn_key = craftax_step_before_spawn(state, rng, action, params, &c);
    craftax_lanes_sync(lanes);
    spawn_key.k[0] = craftax_lanes_from_first_u32(spawn_key.k[0], lanes);
    spawn_key.k[1] = craftax_lanes_from_first_u32(spawn_key.k[1], lanes);
    craftax_spawn_mobs_lanes(state, spawn_key, params, lane, lanes, share_scans);
    float reward = 0.0f;
    if (lane == 0) reward = craftax_step_after_spawn(state, params, &c);
    craftax_lanes_sync(lanes);
    return craftax_lanes_from_first_f32(reward, lanes);
}

/* CraftaxSymbolicEnvNoAutoReset.step_env on one lane: step, done = is_terminal, obs (when
 * not NULL). */
static inline CRAFTAX_HD float craftax_step_env(CraftaxState *state, CraftaxKey rng, int32_t action,
                                                const CraftaxParams *params, float *obs, uint8_t *done) {
    const float reward = craftax_step_lanes(state, rng, action, params, 0, 1, 0);
    *done = (uint8_t)craftax_is_game_over(state, params);
    if (obs) craftax_render_symbolic(state, obs, 0);
    return reward;
}

/* light_level as XLA compiles calculate_light_level inside the official auto-reset
 * CraftaxSymbolicEnv.step (jitted, vmapped): the same t * (1/day_length) and glibc cosf,
 * but 1 - a**3 is rounded as 1 - (a*a)*a, not fused as it is in step_env (measured:
 * 1280/1280 random timesteps at batch 64 match this form; the fused form matched 792).
 * Upstream's own auto-reset env and its step_env thus differ by 1 ulp at ~40% of steps.
 * The obs of that same auto-reset step still carries the fused value (measured). */
static inline CRAFTAX_HD float craftax_light_level_autoreset(int32_t timestep, int32_t day_length) {
    float progress = fmodf((float)timestep * (1.0f / (float)day_length), 1.0f) + 0.3f;
    float a = fabsf(craftax_cosf(3.14159274f * progress));
    return 1.0f - (a * a) * a;
}

/* CraftaxSymbolicEnv.step (auto-reset) of one env is a step part and, where the env is
 * done, a reset part with the same key, so that a batched caller can run the (rare, costly)
 * reset part only for the envs that are done, e.g. densely packed on a GPU (cuda/).
 * craftax_step_autoreset_one below is the two parts in order on one lane. */

/* step_env(key_step) without its obs, plus what a resetting caller needs: *done,
 * *terminated (ended by death or by beating the boss, not only by the time limit) and
 * final_achievements (when not NULL) of the stepped state. Lanes (common.h): the outputs are
 * written by lane 0; the reward comes back in every lane. */
static CRAFTAX_ALWAYS_INLINE CRAFTAX_HD float craftax_step_env_ending_lanes(CraftaxState *state, CraftaxKey key_step, int32_t action,
                                                             const CraftaxParams *params, uint8_t *done,
                                                             uint8_t *terminated, uint8_t *final_achievements,
                                                             int lane, int lanes, int share_scans) {
    const float reward = craftax_step_lanes(state, key_step, action, params, lane, lanes, share_scans);
    if (lane == 0) {
        *done = (uint8_t)craftax_is_game_over(state, params);
        *terminated = (uint8_t)(state->player_health <= 0.0f || craftax_has_beaten_boss(state));
        if (final_achievements) memcpy(final_achievements, state->achievements, CRAFTAX_NUM_ACHIEVEMENTS);
    }
    return reward;
}
/* The same on one lane. */
static inline CRAFTAX_HD float craftax_step_env_ending(CraftaxState *state, CraftaxKey key_step, int32_t action,
                                                       const CraftaxParams *params, uint8_t *done,
                                                       uint8_t *terminated, uint8_t *final_achievements) {
    return craftax_step_env_ending_lanes(state, key_step, action, params, done, terminated, final_achievements, 0, 1,
                                         0);
}

/* The step part: key_step, key_reset = split(key); craftax_step_env_ending_lanes(key_step).
 * When not done, the caller finishes it with craftax_autoreset_observe_part_lanes; when done,
 * the state must go through the reset part (with the same key) before it is used again. */
static CRAFTAX_ALWAYS_INLINE CRAFTAX_HD float craftax_autoreset_step_only_lanes(CraftaxState *state, CraftaxKey key, int32_t action,
                                                                 const CraftaxParams *params, uint8_t *done,
                                                                 uint8_t *terminated, uint8_t *final_achievements,
                                                                 int lane, int lanes, int share_scans) {
    CraftaxKey key_step, key_reset;
    craftax_split2(key, &key_step, &key_reset);
    return craftax_step_env_ending_lanes(state, key_step, action, params, done, terminated, final_achievements, lane,
                                         lanes, share_scans);
}
/* The step part's tail for a not-done env: the obs (when not NULL) and the light level as the
 * auto-reset env leaves it (lanes: common.h). */
static inline CRAFTAX_HD void craftax_autoreset_observe_part_lanes(CraftaxState *state, const CraftaxParams *params,
                                                                   float *obs, int lane, int lanes) {
    /* the obs sees step_env's (fused) light level, the returned state the unfused one */
    if (obs) craftax_render_symbolic_lanes(state, obs, 0, lane, lanes);
    if (lane == 0) state->light_level = craftax_light_level_autoreset(state->timestep, params->day_length);
}

/* What tells a symbolic env from a pixel env of the same game, for the CPU steps (the C API
 * picks it; GPU kernels compose their own): how the obs is rendered, render(context, state,
 * obs, fresh_world) into obs_size floats (fresh_world: the state was just generated by
 * reset_env, obs.h), and whether reset_env splits its key before generate_world (the full
 * game's symbolic env does, its pixel env does not; Classic's envs do not). Host code only. */
typedef struct {
    void (*render)(const void *context, const void *state, float *obs, int fresh_world);
    const void *context;
    int64_t obs_size;
    int reset_splits_key;
} CraftaxEnvVariant;

/* reset_env of the full game's `variant` (worldgen.h). */
static inline void craftax_variant_reset_env(const CraftaxEnvVariant *variant, CraftaxKey key,
                                             const CraftaxParams *params, CraftaxState *s,
                                             CraftaxWorldGenScratch *scratch) {
    if (variant->reset_splits_key)
        craftax_reset_env(key, params, s, scratch);
    else
        craftax_generate_world(key, params, s, scratch);
}

/* CraftaxSymbolicEnv.step (auto-reset) of one env of `variant`: key_step, key_reset =
 * split(key); step_env(key_step); where done, the state and obs (when not NULL) become
 * reset_env(key_reset). *terminated says whether the finished episode ended by death or by
 * beating the boss (not only by the time limit); final_achievements (when not NULL) receives
 * the achievements of the stepped state before any reset, and final_obs (when not NULL and
 * done) its obs, step_env's obs_st, which the reset replaces. `scratch` is world-gen scratch
 * space, touched only when done. Returns the reward. */
static inline float craftax_step_autoreset_one(CraftaxState *state, CraftaxKey key, int32_t action,
                                               const CraftaxParams *params, const CraftaxEnvVariant *variant,
                                               float *obs, float *final_obs, uint8_t *done, uint8_t *terminated,
                                               uint8_t *final_achievements, CraftaxWorldGenScratch *scratch) {
    const float reward =
        craftax_autoreset_step_only_lanes(state, key, action, params, done, terminated, final_achievements, 0, 1, 0);
    if (!*done) {
        /* rendered before the auto-reset light level replaces step_env's */
        if (obs) variant->render(variant->context, state, obs, 0);
        craftax_autoreset_observe_part_lanes(state, params, NULL, 0, 1);
        return reward;
    }
    if (final_obs) variant->render(variant->context, state, final_obs, 0);
    CraftaxKey key_step, key_reset;
    craftax_split2(key, &key_step, &key_reset);
    craftax_variant_reset_env(variant, key_reset, params, state, scratch);
    if (obs) variant->render(variant->context, state, obs, 1);
    return reward;
}

/* Optimistic resets: OptimisticResetVecEnvWrapper.step of Craftax_Baselines (the official
 * PPO-RNN's default, reset_ratio 16; not in the craftax 1.6.1 wheel), over N envs with one
 * key per batch step:
 *   rng, k = split(key);  step_env(split(k, N)[i]) for every env (no auto-reset);
 *   rng, k = split(rng);  world j = reset_env(split(k, R)[j]) for j < R = N / reset_ratio;
 *   rng, k = split(rng);  sel = choice(k, arange(N), (R,), p=done, replace=False);
 * a done env takes world j where sel[j] is it, else world i / reset_ratio (so envs can
 * share a world); its obs is that world's reset obs. Worlds depend on the key alone, not
 * on the episode, so a batched caller can generate them ahead of the step. */
static inline CRAFTAX_HD void craftax_optimistic_keys(CraftaxKey key, CraftaxKey *step_parent,
                                                      CraftaxKey *reset_parent, CraftaxKey *choice_key) {
    CraftaxKey rng;
    craftax_split2(key, &rng, step_parent);
    craftax_split2(rng, &rng, reset_parent);
    craftax_split2(rng, &rng, choice_key);
}

/* choice(p=done, replace=False) is lax.top_k of gumbel(k, (N,)) + log(done). gumbel is
 * -log(-log(u)), u from the 23 mantissa bits of random_bits(k, i): strictly increasing in
 * those bits (adjacent values stay several ulp apart), so top_k's order is: done envs by
 * mantissa descending, ties (equal bits) by index ascending, then the -inf not-done envs
 * by index. Sorting these keys ascending gives that order. */
#define CRAFTAX_OPTIMISTIC_NOT_DONE ((uint64_t)1 << 55)
static inline CRAFTAX_HD uint64_t craftax_optimistic_order_key(CraftaxKey choice_key, uint32_t env, int done) {
    if (!done) return CRAFTAX_OPTIMISTIC_NOT_DONE | env;
    const uint32_t mantissa = craftax_random_bits(choice_key, env) >> 9;
    return ((uint64_t)(0x7FFFFFu - mantissa) << 32) | env;
}

/* The world of the env at position `rank` of that order, when it is done. */
static inline CRAFTAX_HD int32_t craftax_optimistic_world(int64_t rank, uint32_t env, int32_t num_worlds,
                                                          int32_t reset_ratio) {
    return rank < num_worlds ? (int32_t)rank : (int32_t)(env / (uint32_t)reset_ratio);
}

#endif
