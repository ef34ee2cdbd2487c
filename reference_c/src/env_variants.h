/* env_variants.h: the env variants of each game that the C API's calls run (craftax/step.h:
 * CraftaxEnvVariant): the symbolic env, and the pixel env with its texture atlas at the agent's
 * block size. Private to reference_c/src.
 */
#ifndef CRAFTAX_ENV_VARIANTS_H
#define CRAFTAX_ENV_VARIANTS_H

#include "craftax/pixels.h"
#include "craftax/step.h"
#include "craftax_api_pixels.h"
#include "craftax_classic/pixels.h"

static inline void craftax_symbolic_obs(const void *context, const void *state, float *obs, int fresh_world) {
    (void)context;
    craftax_render_symbolic((const CraftaxState *)state, obs, fresh_world);
}
static inline void craftax_classic_symbolic_obs(const void *context, const void *state, float *obs, int fresh_world) {
    (void)context;
    (void)fresh_world; /* Classic's obs rounds the same either way */
    craftax_classic_render_symbolic((const CraftaxClassicState *)state, obs);
}

/* A pixel env's render context: the atlas and its layout. */
typedef struct {
    const float *atlas;
    CraftaxPixelLayout layout;
} CraftaxPixelContext;

/* The pixel obs does not depend on fresh_world: its reset-time values round as any other. */
static inline void craftax_pixels_obs(const void *context, const void *state, float *obs, int fresh_world) {
    const CraftaxPixelContext *c = (const CraftaxPixelContext *)context;
    (void)fresh_world;
    craftax_render_pixels((const CraftaxState *)state, c->atlas, &c->layout, obs, 1);
}
static inline void craftax_classic_pixels_obs(const void *context, const void *state, float *obs, int fresh_world) {
    const CraftaxPixelContext *c = (const CraftaxPixelContext *)context;
    (void)fresh_world;
    craftax_classic_render_pixels((const CraftaxClassicState *)state, c->atlas, &c->layout, obs, 1);
}

/* `game`'s pixel env over `atlas` (its agent block size), with its render context. Upstream's
 * full-game pixel env generates its worlds from reset_env's key itself, where the symbolic
 * env splits the key first; Classic's envs both use the key itself. */
static inline CraftaxEnvVariant craftax_pixel_env_variant(int32_t game, const float *atlas,
                                                          CraftaxPixelContext *context) {
    context->atlas = atlas;
    CraftaxEnvVariant v;
    if (game == CRAFTAX_PIXELS_GAME_CLASSIC) {
        craftax_classic_pixels_layout(&context->layout, CRAFTAX_CLASSIC_PIXELS_AGENT_BLOCK);
        v.render = craftax_classic_pixels_obs;
    } else {
        craftax_pixels_layout(&context->layout, CRAFTAX_PIXELS_AGENT_BLOCK);
        v.render = craftax_pixels_obs;
    }
    v.context = context;
    v.obs_size = (int64_t)context->layout.height * context->layout.width * 3;
    v.reset_splits_key = 0;
    return v;
}

/* Declares `variant`, game's pixel env over the caller's `atlas` argument; returns
 * CRAFTAX_ERR_NULL from the caller where an obs is asked for (obs_given) without an atlas. */
#define CRAFTAX_PIXEL_ENV_VARIANT(game, obs_given)                              \
    CraftaxPixelContext context;                                                \
    if ((obs_given) && !atlas) return CRAFTAX_ERR_NULL;                         \
    const CraftaxEnvVariant variant = craftax_pixel_env_variant(game, atlas, &context)

static const CraftaxEnvVariant CRAFTAX_SYMBOLIC_ENV = {craftax_symbolic_obs, NULL, CRAFTAX_OBS_SIZE, 1};
static const CraftaxEnvVariant CRAFTAX_CLASSIC_SYMBOLIC_ENV = {craftax_classic_symbolic_obs, NULL,
                                                               CRAFTAX_CLASSIC_OBS_SIZE, 0};

#endif
