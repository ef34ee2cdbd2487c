/* craftax_classic/step.h: the env-level step of Craftax-Classic
 * (craftax/craftax_classic/envs/craftax_symbolic_env.py): step_env, and the official
 * auto-reset step (environment_base.EnvironmentAutoReset.step) on top of it.
 */
#ifndef CRAFTAX_CLASSIC_STEP_H
#define CRAFTAX_CLASSIC_STEP_H

#include "craftax/step.h"
#include "craftax_classic/game_logic.h"
#include "craftax_classic/obs.h"
#include "craftax_classic/worldgen.h"

/* Whether the finished episode ended by dying (health or lava), not only by the time limit. */
static inline CRAFTAX_HD int craftax_classic_is_terminated(const CraftaxClassicState *s) {
    return s->player_health <= 0 || craftax_classic_read(s->map, s->player_position) == BLOCK_LAVA;
}

/* CraftaxClassicSymbolicEnvNoAutoReset.step_env without its obs: step, done = is_terminal.
 * share_scans: craftax_classic_step_sharing's (0 on a CPU). */
static inline CRAFTAX_HD float craftax_classic_step_env_sharing(CraftaxClassicState *s, CraftaxKey rng, int32_t action,
                                                               const CraftaxClassicParams *params, uint8_t *done,
                                                               int share_scans) {
    const float reward = craftax_classic_step_sharing(s, rng, action, params, share_scans);
    *done = (uint8_t)craftax_classic_is_game_over(s, params);
    return reward;
}

/* CraftaxClassicSymbolicEnvNoAutoReset.step_env: step, done = is_terminal, obs (when not NULL). */
static inline CRAFTAX_HD float craftax_classic_step_env(CraftaxClassicState *s, CraftaxKey rng, int32_t action,
                                                       const CraftaxClassicParams *params, float *obs, uint8_t *done) {
    const float reward = craftax_classic_step_env_sharing(s, rng, action, params, done, 0);
    if (obs) craftax_classic_render_symbolic(s, obs);
    return reward;
}

/* CraftaxClassicSymbolicEnv.step (auto-reset): key_step, key_reset = split(key);
 * step_env(key_step); where done, state and obs become reset_env(key_reset). The obs (when
 * not NULL) is `variant`'s (craftax/step.h; both of Classic's envs reset from the key itself). *terminated and final_achievements (when not
 * NULL) describe the stepped state, and so does final_obs (when not NULL and done): step_env's
 * obs_st, which the reset replaces. Host code. */
static inline float craftax_classic_step_autoreset_one(CraftaxClassicState *s, CraftaxKey key, int32_t action,
                                                       const CraftaxClassicParams *params,
                                                       const CraftaxEnvVariant *variant, float *obs,
                                                       float *final_obs, uint8_t *done, uint8_t *terminated,
                                                       uint8_t *final_achievements,
                                                       CraftaxClassicWorldGenScratch *scratch) {
    CraftaxKey key_step, key_reset;
    craftax_split2(key, &key_step, &key_reset);
    /* the obs is rendered once, of the state it describes: the stepped one, or the reset one */
    const float reward = craftax_classic_step_env(s, key_step, action, params, NULL, done);
    *terminated = (uint8_t)craftax_classic_is_terminated(s);
    if (final_achievements) memcpy(final_achievements, s->achievements, CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS);
    if (*done) {
        if (final_obs) variant->render(variant->context, s, final_obs, 0);
        craftax_classic_reset_env(key_reset, params, s, scratch);
        if (obs) variant->render(variant->context, s, obs, 1);
    } else {
        if (obs) variant->render(variant->context, s, obs, 0);
        /* As in the full game (craftax/step.h: craftax_light_level_autoreset), XLA compiles
         * the auto-reset step's light level unfused, 1 - (a*a)*a, into the returned state,
         * while the obs of the same step carries step_env's fused value. */
        s->light_level = craftax_light_level_autoreset(s->timestep, params->day_length);
    }
    return reward;
}

#endif
